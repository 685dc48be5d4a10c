/*
 * omp: Snir 2009 §4.3.4, "OpenMP code with no load balancing and no
 * barrier" — the counterpart of the Go threads variant. T threads share one
 * grid, each a band of rows. In every half-sweep a thread updates its first
 * row and announces it to the thread above, updates its last row and
 * announces it to the thread below, updates the rows between, then waits
 * for its two neighbours' announcements of the same half-sweep. An
 * announcement is the number of the half-sweep (monotone, so it is never
 * reset). Waiting spins with pause and yields the CPU after a while, as
 * production spin-waits do.
 */
#include <omp.h>
#include "common.h"
#include "flag.h"

int main(int argc, char **argv)
{
	struct opts o = parse_opts(argc, argv);
	int n = o.n, w = n + 2, T = o.threads;
	if (T > n) {
		fprintf(stderr, "omp: %d threads for %d rows\n", T, n);
		return 2;
	}
	double *a = aligned_alloc(64, ((size_t)w * w * sizeof(double) + 63) / 64 * 64);
	struct flag *up = flags_new(T), *down = flags_new(T);
	double *tres = calloc(T, sizeof *tres);
	if (!a || !up || !down || !tres)
		return 1;
	double t0 = 0, t1 = 0;
	omp_set_dynamic(0);
#pragma omp parallel num_threads(T)
	{
		int t = omp_get_thread_num();
		int b, e;
		split(n, T, t, &b, &e);
		/* Each thread touches its own rows first (and thread 0 the boundary). */
		for (int i = b; i <= e; i++)
			fill_row(a + (size_t)i * w, i, n, n);
		if (t == 0) {
			fill_row(a, 0, n, n);
			fill_row(a + (size_t)(n + 1) * w, n + 1, n, n);
		}
#pragma omp barrier
#pragma omp master
		t0 = now_sec();
#pragma omp barrier
		long h = 0;
		double res = 0;
		for (int it = 1; it <= o.iters; it++) {
			int track = it == o.iters;
			res = 0;
			for (int c = RED; c <= BLACK; c++) {
				h++;
				res = relax_rows(a, w, 0, b, b, c, res, track);
				if (t > 0)
					flag_publish(&up[t], h);
				if (e > b)
					res = relax_rows(a, w, 0, e, e, c, res, track);
				if (t < T - 1)
					flag_publish(&down[t], h);
				res = relax_rows(a, w, 0, b + 1, e - 1, c, res, track);
				if (t > 0)
					flag_await(&down[t - 1], h);
				if (t < T - 1)
					flag_await(&up[t + 1], h);
			}
		}
		tres[t] = res;
#pragma omp barrier
#pragma omp master
		t1 = now_sec();
	}
	double res = 0;
	for (int t = 0; t < T; t++)
		if (tres[t] > res)
			res = tres[t];
	char layout[32];
	snprintf(layout, sizeof layout, "1x%d", T);
	report("threads", layout, &o, t1 - t0, res, a);
	return 0;
}
