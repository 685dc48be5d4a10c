/* latency: rank 0 sends size bytes and waits for them back; the latency is
 * the time of the timed round trips over twice their number. Built with
 * -DSERIALIZED (osu_latency_serialized), MPI is initialized at
 * MPI_THREAD_SERIALIZED, the level rdma/mpi asks for, instead of by
 * MPI_Init: Open MPI takes its internal locks at every level above
 * MPI_THREAD_SINGLE. */
#include "common.h"

#include <stdio.h>

int main(int argc, char **argv)
{
	struct options o;
	int rank;
	char *s, *r;

#ifdef SERIALIZED
	const char *name = "osu_latency_serialized", *title = "OSU MPI Latency Test (MPI_THREAD_SERIALIZED)";
	int provided;
	CHECK(MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided));
#else
	const char *name = "osu_latency", *title = "OSU MPI Latency Test";
	CHECK(MPI_Init(&argc, &argv));
#endif
	init_options(&o, argc, argv, KIND_LAT, 0, "", name);
	need_ranks(2, 1);
	CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
#ifdef SERIALIZED
	if (provided < MPI_THREAD_SERIALIZED) {
		if (rank == 0)
			fprintf(stderr, "%s: MPI_Init_thread gave level %d, below MPI_THREAD_SERIALIZED\n", name, provided);
		MPI_Finalize();
		return 1;
	}
#endif
	print_title(title, 0);
	s = alloc_buf((size_t)max_size(&o));
	r = alloc_buf((size_t)max_size(&o));
	if (rank == 0)
		printf("%-*s%*s\n", SIZE_WIDTH, "# Size", FIELD_WIDTH, "Latency (us)");
	fflush(stdout);
	for (long size = first_size(&o); size <= max_size(&o); size = next_size(size)) {
		int iters, warm;
		double t0 = 0, t1;
		int peer = 1 - rank, n = (int)size;

		counts(&o, size, &iters, &warm);
		touch(s, r, size);
		CHECK(MPI_Barrier(MPI_COMM_WORLD));
		for (int i = 0; i < warm + iters; i++) {
			if (rank == 0) {
				if (i == warm)
					t0 = MPI_Wtime();
				CHECK(MPI_Send(s, n, MPI_CHAR, peer, 1, MPI_COMM_WORLD));
				CHECK(MPI_Recv(r, n, MPI_CHAR, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
			} else {
				CHECK(MPI_Recv(r, n, MPI_CHAR, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
				CHECK(MPI_Send(s, n, MPI_CHAR, peer, 1, MPI_COMM_WORLD));
			}
		}
		t1 = MPI_Wtime();
		if (rank == 0) {
			printf("%-*ld%*.*f\n", SIZE_WIDTH, size, FIELD_WIDTH, PRECISION,
			       (t1 - t0) * 1e6 / (2.0 * iters));
			fflush(stdout);
		}
	}
	MPI_Finalize();
	return 0;
}
