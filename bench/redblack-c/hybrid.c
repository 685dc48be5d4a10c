/*
 * hybrid: Snir 2009 §4.3.5 without endpoints, MPI+OpenMP at
 * MPI_THREAD_MULTIPLE — the counterpart of the Go hybrid variant. Each
 * process owns a stripe, each of its T threads a band of the stripe. Inside
 * a process threads hand their edge rows over through flags in shared
 * memory (as omp does); between processes the first thread exchanges the
 * stripe's first row with the process above and the last thread the stripe's
 * last row with the process below (as mpi does), each with its own requests.
 * No barrier except for the residual of the last iteration.
 */
#include <omp.h>
#include "mpicommon.h"
#include "flag.h"

int main(int argc, char **argv)
{
	int provided;
	MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
	if (provided < MPI_THREAD_MULTIPLE) {
		fprintf(stderr, "hybrid: MPI_THREAD_MULTIPLE not provided\n");
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	struct opts o = parse_opts(argc, argv);
	struct stripe s;
	stripe_init(&s, o.n);
	int T = o.threads;
	if (T > s.size) {
		fprintf(stderr, "hybrid: %d threads for a stripe of %d rows\n", T, s.size);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	struct flag *up = flags_new(T), *down = flags_new(T);
	double *tres = calloc(T, sizeof *tres);
	if (!up || !down || !tres)
		MPI_Abort(MPI_COMM_WORLD, 1);
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
		long h = 0;
		double r = 0;
		for (int it = 1; it <= o.iters; it++) {
			int track = it == o.iters;
			r = 0;
			for (int c = RED; c <= BLACK; c++) {
				int k = 0;
				h++;
				r = relax_rows(s.a, s.w, s.off, b, b, c, r, track);
				if (t == 0)
					k = post_top(&s, c, req, k);
				else
					flag_publish(&up[t], h);
				if (e > b)
					r = relax_rows(s.a, s.w, s.off, e, e, c, r, track);
				if (t == T - 1)
					k = post_bottom(&s, c, req, k);
				else
					flag_publish(&down[t], h);
				r = relax_rows(s.a, s.w, s.off, b + 1, e - 1, c, r, track);
				if (k > 0)
					MPI_Waitall(k, req, MPI_STATUSES_IGNORE);
				if (t > 0)
					flag_await(&down[t - 1], h);
				if (t < T - 1)
					flag_await(&up[t + 1], h);
			}
			if (track) {
				tres[t] = r;
#pragma omp barrier
#pragma omp master
				{
					double m = 0;
					for (int u = 0; u < T; u++)
						if (tres[u] > m)
							m = tres[u];
					MPI_Allreduce(MPI_IN_PLACE, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
					res = m;
				}
			}
		}
#pragma omp master
		elapsed = MPI_Wtime() - t0;
	}
	char layout[32];
	snprintf(layout, sizeof layout, "%dx%d", s.nprocs, T);
	finish(&s, "hybrid", layout, &o, elapsed, res);
	free(up);
	free(down);
	free(tres);
	MPI_Finalize();
	return 0;
}
