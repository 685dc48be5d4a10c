/* mbw_mr: pairs of ranks (rank i sends to rank i+pairs) run bw's windows at
 * once. After the warm-up all ranks meet in a barrier and every sender
 * times its iterations; the bandwidth is the total bytes over the senders'
 * mean time, the message rate that over the size. */
#include "common.h"

#include <stdio.h>
#include <stdlib.h>

/* windows runs n iterations of bw's loop; it returns the time they took. */
static double windows(int sender, int peer, char *s, char *r, int size, int w,
		      MPI_Request *req, int n)
{
	double t0 = MPI_Wtime();
	for (int i = 0; i < n; i++) {
		if (sender) {
			for (int j = 0; j < w; j++)
				CHECK(MPI_Isend(s, size, MPI_CHAR, peer, 100, MPI_COMM_WORLD, &req[j]));
			CHECK(MPI_Waitall(w, req, MPI_STATUSES_IGNORE));
			CHECK(MPI_Recv(r, 4, MPI_CHAR, peer, 101, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
		} else {
			for (int j = 0; j < w; j++)
				CHECK(MPI_Irecv(r, size, MPI_CHAR, peer, 100, MPI_COMM_WORLD, &req[j]));
			CHECK(MPI_Waitall(w, req, MPI_STATUSES_IGNORE));
			CHECK(MPI_Send(s, 4, MPI_CHAR, peer, 101, MPI_COMM_WORLD));
		}
	}
	return MPI_Wtime() - t0;
}

int main(int argc, char **argv)
{
	struct options o;
	int rank, nprocs, pairs;
	char *s, *r;
	MPI_Request *req;

	CHECK(MPI_Init(&argc, &argv));
	init_options(&o, argc, argv, KIND_BW, 1, "Wp", "osu_mbw_mr");
	need_ranks(2, 0);
	CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
	CHECK(MPI_Comm_size(MPI_COMM_WORLD, &nprocs));
	pairs = o.pairs > 0 ? o.pairs : nprocs / 2;
	if (2 * pairs > nprocs) {
		if (rank == 0)
			fprintf(stderr, "osu_mbw_mr: %d pairs need %d processes, have %d\n", pairs, 2 * pairs, nprocs);
		MPI_Finalize();
		return 1;
	}
	s = alloc_buf((size_t)max_size(&o));
	r = alloc_buf((size_t)max_size(&o));
	req = malloc(sizeof *req * (size_t)o.window);
	if (req == NULL)
		MPI_Abort(MPI_COMM_WORLD, 1);
	print_title("OSU MPI Multiple Bandwidth / Message Rate Test", 0);
	if (rank == 0) {
		printf("# [ pairs: %d ] [ window size: %d ]\n", pairs, o.window);
		printf("%-*s%*s%*s\n", SIZE_WIDTH, "# Size", FIELD_WIDTH, "MB/s", FIELD_WIDTH, "Messages/s");
	}
	fflush(stdout);
	for (long size = first_size(&o); size <= max_size(&o); size = next_size(size)) {
		int iters, warm, n = (int)size;
		double t = 0, sum = 0;

		counts(&o, size, &iters, &warm);
		touch(s, r, size);
		CHECK(MPI_Barrier(MPI_COMM_WORLD));
		if (rank < 2 * pairs) {
			int sender = rank < pairs, peer = sender ? rank + pairs : rank - pairs;
			windows(sender, peer, s, r, n, o.window, req, warm);
			CHECK(MPI_Barrier(MPI_COMM_WORLD));
			t = windows(sender, peer, s, r, n, o.window, req, iters);
			if (!sender)
				t = 0;
		} else {
			CHECK(MPI_Barrier(MPI_COMM_WORLD));
		}
		CHECK(MPI_Reduce(&t, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD));
		if (rank == 0) {
			double bw = (double)size / 1e6 * pairs * iters * o.window / (sum / pairs);
			printf("%-*ld%*.*f%*.*f\n", SIZE_WIDTH, size, FIELD_WIDTH, PRECISION, bw,
			       FIELD_WIDTH, PRECISION, 1e6 * bw / (double)size);
			fflush(stdout);
		}
	}
	free(req);
	MPI_Finalize();
	return 0;
}
