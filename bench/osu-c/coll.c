/* allreduce (built with -DALLREDUCE), bcast (-DBCAST), reduce (-DREDUCE)
 * and barrier: every rank times each of the warm-up and timed calls, with a
 * barrier after each, and rank 0 prints the average over ranks of the
 * per-rank mean time of a timed call (with -f also the minimum, maximum and
 * the iterations). allreduce and reduce sum floats, size/4 of them (reduce
 * to rank 0); bcast sends size bytes (MPI_CHAR) from rank 0. */
#include "common.h"

#include <stdio.h>
#include <stdlib.h>

#if defined(ALLREDUCE)
#define NAME "osu_allreduce"
#define TITLE "OSU MPI Allreduce Latency Test"
#define SMALLEST 4
#elif defined(REDUCE)
#define NAME "osu_reduce"
#define TITLE "OSU MPI Reduce Latency Test"
#define SMALLEST 4
#elif defined(BCAST)
#define NAME "osu_bcast"
#define TITLE "OSU MPI Broadcast Latency Test"
#define SMALLEST 1
#else
#define NAME "osu_barrier"
#define TITLE "OSU MPI Barrier Latency Test"
#define SMALLEST 0
#endif
#if defined(ALLREDUCE) || defined(REDUCE) || defined(BCAST)
#define SIZED 1
#endif

int main(int argc, char **argv)
{
	struct options o;
	int rank, nprocs;
	float *send = NULL, *recv = NULL;

	CHECK(MPI_Init(&argc, &argv));
	init_options(&o, argc, argv, KIND_COLL, SMALLEST, "f", NAME);
	need_ranks(2, 0);
	CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
	CHECK(MPI_Comm_size(MPI_COMM_WORLD, &nprocs));
#ifdef SIZED
	send = (float *)alloc_buf((size_t)max_size(&o));
	recv = (float *)alloc_buf((size_t)max_size(&o));
	for (long i = 0; i < max_size(&o) / 4; i++) {
		send[i] = 1;
		recv[i] = 0;
	}
#endif
	print_title(TITLE, 1);
	if (rank == 0) {
#ifdef SIZED
		printf("%-*s%*s", SIZE_WIDTH, "# Size", FIELD_WIDTH, "Avg Latency(us)");
#else
		printf("# Avg Latency(us)");
#endif
		if (o.full)
			printf("%*s%*s%*s", FIELD_WIDTH, "Min Latency(us)", FIELD_WIDTH, "Max Latency(us)",
			       ITER_WIDTH, "Iterations");
		printf("\n");
	}
	fflush(stdout);
#ifdef SIZED
	for (long size = first_size(&o); size <= max_size(&o); size = next_size(size)) {
#else
	for (long size = 0; size == 0; size = 1) {
#endif
		int iters, warm;
		double timer = 0, mine, lo, hi, sum;

		counts(&o, size, &iters, &warm);
		CHECK(MPI_Barrier(MPI_COMM_WORLD));
		for (int i = 0; i < warm + iters; i++) {
			double t0 = MPI_Wtime();
#if defined(ALLREDUCE)
			CHECK(MPI_Allreduce(send, recv, (int)(size / 4), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD));
#elif defined(REDUCE)
			CHECK(MPI_Reduce(send, recv, (int)(size / 4), MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD));
#elif defined(BCAST)
			CHECK(MPI_Bcast(send, (int)size, MPI_CHAR, 0, MPI_COMM_WORLD));
#else
			CHECK(MPI_Barrier(MPI_COMM_WORLD));
#endif
			if (i >= warm)
				timer += MPI_Wtime() - t0;
			CHECK(MPI_Barrier(MPI_COMM_WORLD));
		}
		mine = timer * 1e6 / iters;
		CHECK(MPI_Reduce(&mine, &lo, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD));
		CHECK(MPI_Reduce(&mine, &hi, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD));
		CHECK(MPI_Reduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD));
		if (rank == 0) {
#ifdef SIZED
			printf("%-*ld%*.*f", SIZE_WIDTH, size, FIELD_WIDTH, PRECISION, sum / nprocs);
#else
			printf("%*.*f", NOSIZE_WIDTH, PRECISION, sum / nprocs);
#endif
			if (o.full)
				printf("%*.*f%*.*f%*d", FIELD_WIDTH, PRECISION, lo, FIELD_WIDTH, PRECISION, hi,
				       ITER_WIDTH, iters);
			printf("\n");
			fflush(stdout);
		}
		CHECK(MPI_Barrier(MPI_COMM_WORLD));
	}
	free(send);
	free(recv);
	MPI_Finalize();
	return 0;
}
