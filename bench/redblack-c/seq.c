/* seq: Snir 2009 §4.3.1, the whole grid in one thread. */
#include "common.h"

int main(int argc, char **argv)
{
	struct opts o = parse_opts(argc, argv);
	int n = o.n, w = n + 2;
	double *a = aligned_alloc(64, ((size_t)w * w * sizeof(double) + 63) / 64 * 64);
	if (!a)
		return 1;
	for (int i = 0; i < w; i++)
		fill_row(a + (size_t)i * w, i, n, n);
	double t0 = now_sec(), res = 0;
	for (int it = 1; it <= o.iters; it++) {
		int track = it == o.iters;
		res = 0;
		for (int c = RED; c <= BLACK; c++)
			res = relax_rows(a, w, 0, 1, n, c, res, track);
	}
	double t1 = now_sec();
	report("seq", "1x1", &o, t1 - t0, res, a);
	free(a);
	return 0;
}
