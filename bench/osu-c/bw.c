/* bw and bibw (built with -DBIBW): windows of nonblocking sends.
 * bw: rank 0 starts a window of sends and waits for them, then for a
 * 4-byte reply rank 1 sends once its window of receives is complete.
 * bibw: both ranks post a window of receives and of sends and wait for all.
 * Bandwidth is rank 0's bytes (both directions for bibw) over its time. */
#include "common.h"

#include <stdio.h>
#include <stdlib.h>

#ifdef BIBW
#define NAME "osu_bibw"
#define TITLE "OSU MPI Bi-Directional Bandwidth Test"
#else
#define NAME "osu_bw"
#define TITLE "OSU MPI Bandwidth Test"
#endif

int main(int argc, char **argv)
{
	struct options o;
	int rank;
	char *s, *r;
	MPI_Request *sreq, *rreq;

	CHECK(MPI_Init(&argc, &argv));
	init_options(&o, argc, argv, KIND_BW, 1, "W", NAME);
	need_ranks(2, 1);
	CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
	s = alloc_buf((size_t)max_size(&o));
	r = alloc_buf((size_t)max_size(&o));
	sreq = malloc(sizeof *sreq * (size_t)o.window);
	rreq = malloc(sizeof *rreq * (size_t)o.window);
	if (sreq == NULL || rreq == NULL)
		MPI_Abort(MPI_COMM_WORLD, 1);
	print_title(TITLE, 0);
	if (rank == 0)
		printf("%-*s%*s\n", SIZE_WIDTH, "# Size", FIELD_WIDTH, "Bandwidth (MB/s)");
	fflush(stdout);
	for (long size = first_size(&o); size <= max_size(&o); size = next_size(size)) {
		int iters, warm, peer = 1 - rank, n = (int)size, w = o.window;
		double t0 = 0, t1, bytes;

		counts(&o, size, &iters, &warm);
		touch(s, r, size);
		CHECK(MPI_Barrier(MPI_COMM_WORLD));
		for (int i = 0; i < warm + iters; i++) {
			if (rank == 0 && i == warm)
				t0 = MPI_Wtime();
#ifdef BIBW
			int in = rank == 0 ? 10 : 100, out = rank == 0 ? 100 : 10;
			for (int j = 0; j < w; j++)
				CHECK(MPI_Irecv(r, n, MPI_CHAR, peer, in, MPI_COMM_WORLD, &rreq[j]));
			for (int j = 0; j < w; j++)
				CHECK(MPI_Isend(s, n, MPI_CHAR, peer, out, MPI_COMM_WORLD, &sreq[j]));
			CHECK(MPI_Waitall(w, sreq, MPI_STATUSES_IGNORE));
			CHECK(MPI_Waitall(w, rreq, MPI_STATUSES_IGNORE));
#else
			if (rank == 0) {
				for (int j = 0; j < w; j++)
					CHECK(MPI_Isend(s, n, MPI_CHAR, peer, 100, MPI_COMM_WORLD, &sreq[j]));
				CHECK(MPI_Waitall(w, sreq, MPI_STATUSES_IGNORE));
				CHECK(MPI_Recv(r, 4, MPI_CHAR, peer, 101, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
			} else {
				for (int j = 0; j < w; j++)
					CHECK(MPI_Irecv(r, n, MPI_CHAR, peer, 100, MPI_COMM_WORLD, &rreq[j]));
				CHECK(MPI_Waitall(w, rreq, MPI_STATUSES_IGNORE));
				CHECK(MPI_Send(s, 4, MPI_CHAR, peer, 101, MPI_COMM_WORLD));
			}
#endif
		}
		t1 = MPI_Wtime();
		if (rank == 0) {
			bytes = (double)size / 1e6 * iters * w;
#ifdef BIBW
			bytes *= 2;
#endif
			printf("%-*ld%*.*f\n", SIZE_WIDTH, size, FIELD_WIDTH, PRECISION, bytes / (t1 - t0));
			fflush(stdout);
		}
	}
	free(sreq);
	free(rreq);
	MPI_Finalize();
	return 0;
}
