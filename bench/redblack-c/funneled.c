/*
 * funneled: MPI+OpenMP at MPI_THREAD_FUNNELED, the usual hybrid code that
 * Snir 2009 §4.3.4–4.3.5 improve on — the counterpart of the Go funneled
 * variant. Each process owns a stripe and its T threads share the stripe's
 * rows; every half-sweep is
 *
 *     every thread: update its rows
 *     barrier
 *     master: Isend/Irecv both edge rows, Waitall (the others wait)
 *     barrier
 *
 * so communication never overlaps computation.
 */
#include <omp.h>
#include "mpicommon.h"

int main(int argc, char **argv)
{
	int provided;
	MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
	if (provided < MPI_THREAD_FUNNELED)
		MPI_Abort(MPI_COMM_WORLD, 1);
	struct opts o = parse_opts(argc, argv);
	struct stripe s;
	stripe_init(&s, o.n);
	int T = o.threads;
	if (T > s.size) {
		fprintf(stderr, "funneled: %d threads for a stripe of %d rows\n", T, s.size);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	double *tres = calloc(T, sizeof *tres);
	double t0 = 0, elapsed = 0, res = 0;
	omp_set_dynamic(0);
	MPI_Barrier(MPI_COMM_WORLD);
#pragma omp parallel num_threads(T)
	{
		int t = omp_get_thread_num();
		int b, e;
		split(s.size, T, t, &b, &e);
#pragma omp master
		{
			MPI_Barrier(MPI_COMM_WORLD);
			t0 = MPI_Wtime();
		}
#pragma omp barrier
		MPI_Request req[4];
		for (int it = 1; it <= o.iters; it++) {
			int track = it == o.iters;
			double r = 0;
			for (int c = RED; c <= BLACK; c++) {
				r = relax_rows(s.a, s.w, s.off, b, e, c, r, track);
				tres[t] = r;
#pragma omp barrier
#pragma omp master
				{
					int k = post_top(&s, c, req, 0);
					k = post_bottom(&s, c, req, k);
					MPI_Waitall(k, req, MPI_STATUSES_IGNORE);
					if (track && c == BLACK) {
						double m = 0;
						for (int u = 0; u < T; u++)
							if (tres[u] > m)
								m = tres[u];
						MPI_Allreduce(MPI_IN_PLACE, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
						res = m;
					}
				}
#pragma omp barrier
			}
		}
#pragma omp master
		elapsed = MPI_Wtime() - t0;
	}
	char layout[32];
	snprintf(layout, sizeof layout, "%dx%d", s.nprocs, T);
	finish(&s, "funneled", layout, &o, elapsed, res);
	free(tres);
	MPI_Finalize();
	return 0;
}
