/*
 * mpi: Snir 2009 §4.3.3, single-threaded MPI — the counterpart of the Go mpi
 * variant. Each rank owns a stripe with ghost rows; in every half-sweep it
 * updates its first row and posts its exchange with the rank above (Isend of
 * the row's cells of the colour, a vector datatype, and Irecv of the
 * neighbour's into the ghost row), does the same with its last row and the
 * rank below, updates the rows between, and waits for all four requests.
 */
#include "mpicommon.h"

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	struct opts o = parse_opts(argc, argv);
	struct stripe s;
	stripe_init(&s, o.n);
	MPI_Request req[4];
	MPI_Barrier(MPI_COMM_WORLD);
	double t0 = MPI_Wtime(), res = 0;
	for (int it = 1; it <= o.iters; it++) {
		int track = it == o.iters;
		res = 0;
		for (int c = RED; c <= BLACK; c++) {
			int k = 0;
			res = relax_rows(s.a, s.w, s.off, 1, 1, c, res, track);
			k = post_top(&s, c, req, k);
			if (s.size > 1)
				res = relax_rows(s.a, s.w, s.off, s.size, s.size, c, res, track);
			k = post_bottom(&s, c, req, k);
			res = relax_rows(s.a, s.w, s.off, 2, s.size - 1, c, res, track);
			MPI_Waitall(k, req, MPI_STATUSES_IGNORE);
		}
		if (track)
			MPI_Allreduce(MPI_IN_PLACE, &res, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
	}
	double elapsed = MPI_Wtime() - t0;
	char layout[32];
	snprintf(layout, sizeof layout, "%dx1", s.nprocs);
	finish(&s, "mpi", layout, &o, elapsed, res);
	MPI_Finalize();
	return 0;
}
