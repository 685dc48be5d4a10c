/*
 * Red-black SOR, the C reference of examples/redblack: the same problem
 * (grid, boundary, initial values, update expression and order, residual)
 * written independently from Snir 2009 §4.3 and the Go example's package
 * documentation, so that every Go variant can be checked against it bit for
 * bit and timed against it.
 *
 * The grid has rows×cols interior cells and a fixed boundary row or column
 * on each side: (rows+2)×(cols+2) doubles in row-major order. Cell (i, j) is
 * red when i+j is even. An iteration is a red sweep then a black sweep; a
 * sweep replaces each cell of its colour by
 *
 *     (a[i][j] + a[i-1][j] + a[i+1][j] + a[i][j-1] + a[i][j+1]) * 0.2
 *
 * summed left to right. The residual of an iteration is the largest change
 * of any cell in it; like the Go code with a fixed iteration count, it is
 * computed in the last iteration only.
 */
#ifndef REDBLACK_COMMON_H
#define REDBLACK_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { RED = 0, BLACK = 1 };

/* first_col is the first column of colour c in global row i: red cells have
 * i+j even, and columns 1..cols are the interior. */
static inline int first_col(int i, int c) { return 1 + ((i + 1 + c) & 1); }

/* initial is the value of global cell (i, j) before the first sweep: 1 on
 * the top row, i/(rows+1) down the left column, 0 along the bottom and right,
 * and a splitmix64 hash of the cell index in [0, 1) inside. */
static inline double initial(int rows, int cols, int i, int j)
{
	if (i == 0)
		return 1;
	if (j == 0)
		return (double)i / (double)(rows + 1);
	if (i == rows + 1 || j == cols + 1)
		return 0;
	uint64_t z = (uint64_t)i * (uint64_t)(cols + 2) + (uint64_t)j + 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	return (double)(z >> 11) * 0x1p-53;
}

/* fill_row sets row (w = cols+2 doubles), global row i, to its initial values. */
static inline void fill_row(double *row, int i, int rows, int cols)
{
	for (int j = 0; j < cols + 2; j++)
		row[j] = initial(rows, cols, i, j);
}

/* relax_row updates the cells of one colour in a row of w doubles, from
 * column j0 in steps of 2 up to the last interior column. The rows are
 * distinct, so restrict lets the compiler vectorize. */
static inline void relax_row(const double *restrict up, double *restrict row,
			     const double *restrict dn, int j0, int w)
{
	for (int j = j0; j < w - 1; j += 2)
		row[j] = (row[j] + up[j] + dn[j] + row[j - 1] + row[j + 1]) * 0.2;
}

/* relax_row_res is relax_row that also returns max(res, |new - old|). */
static inline double relax_row_res(const double *restrict up, double *restrict row,
				   const double *restrict dn, int j0, int w, double res)
{
	for (int j = j0; j < w - 1; j += 2) {
		double old = row[j];
		double v = (old + up[j] + dn[j] + row[j - 1] + row[j + 1]) * 0.2;
		row[j] = v;
		double d = v - old;
		if (d < 0)
			d = -d;
		if (d > res)
			res = d;
	}
	return res;
}

/* relax_rows updates colour c in local rows lo..hi of a band whose row 0 is
 * global row off (w doubles a row), and returns max(res, changes) if track. */
static inline double relax_rows(double *a, int w, int off, int lo, int hi, int c,
				double res, int track)
{
	for (int l = lo; l <= hi; l++) {
		double *row = a + (size_t)l * w;
		int j0 = first_col(l + off, c);
		if (track)
			res = relax_row_res(row - w, row, row + w, j0, w, res);
		else
			relax_row(row - w, row, row + w, j0, w);
	}
	return res;
}

/* split gives part k of n parts of rows 1..total, inclusive, as the Go code
 * does: parts differ by at most one row. */
static inline void split(int total, int n, int k, int *first, int *last)
{
	*first = 1 + (int)((long)k * total / n);
	*last = (int)((long)(k + 1) * total / n);
}

/* grid_hash is FNV-1a (64 bits) over the grid's doubles as little-endian
 * bytes, boundary included: the hash the Go command prints with -hash. */
static inline uint64_t grid_hash(const double *a, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t k = 0; k < n; k++) {
		uint64_t bits;
		memcpy(&bits, &a[k], 8);
		for (int b = 0; b < 8; b++) {
			h ^= (bits >> (8 * b)) & 0xff;
			h *= 0x100000001b3ull;
		}
	}
	return h;
}

static inline double now_sec(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* opts are the command-line settings every program takes. */
struct opts {
	int n;       /* -n: n×n interior cells */
	int iters;   /* -iters */
	int threads; /* -threads: OpenMP threads (per process) */
};

static inline void usage(const char *prog)
{
	fprintf(stderr, "usage: %s [-n cells] [-iters k] [-threads t]\n", prog);
	exit(2);
}

static inline struct opts parse_opts(int argc, char **argv)
{
	struct opts o = {512, 200, 1};
	for (int k = 1; k < argc; k++) {
		if (k + 1 >= argc)
			usage(argv[0]);
		char *end;
		long v = strtol(argv[k + 1], &end, 10);
		if (*end != 0 || v < 1 || v > 1 << 20)
			usage(argv[0]);
		if (!strcmp(argv[k], "-n"))
			o.n = (int)v;
		else if (!strcmp(argv[k], "-iters"))
			o.iters = (int)v;
		else if (!strcmp(argv[k], "-threads"))
			o.threads = (int)v;
		else
			usage(argv[0]);
		k++;
	}
	return o;
}

/* report prints the line the comparison script reads: the variant and its
 * layout, the time per iteration, the residual's bits and the grid's hash. */
static inline void report(const char *variant, const char *layout, const struct opts *o,
			  double elapsed, double res, const double *grid)
{
	uint64_t rbits;
	memcpy(&rbits, &res, 8);
	size_t cells = (size_t)(o->n + 2) * (size_t)(o->n + 2);
	printf("result impl=c variant=%s layout=%s n=%d iters=%d ns_per_iter=%.0f residual=%016llx hash=%016llx\n",
	       variant, layout, o->n, o->iters, elapsed * 1e9 / o->iters,
	       (unsigned long long)rbits, (unsigned long long)grid_hash(grid, cells));
}

#endif
