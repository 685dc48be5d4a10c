/*
 * OSU-method micro-benchmarks in C, written for fibermpi's comparisons with
 * MPICH and Open MPI: the same method and table format as cmd/fmpi-osu
 * (see internal/osu/doc.go), so every table parses with `fmpi-osu compare`.
 * These are not the OSU micro-benchmarks; they follow their published
 * method (warm-up iterations, timed iterations, windows of 64, sizes
 * doubling) and print their columns.
 */
#ifndef OSUC_COMMON_H
#define OSUC_COMMON_H

#include <mpi.h>
#include <stddef.h>

/* The table layout: size in 10 columns, values in 20 with 2 decimals. */
#define SIZE_WIDTH 10
#define FIELD_WIDTH 20
#define PRECISION 2
#define ITER_WIDTH 12
#define NOSIZE_WIDTH 17

#define LARGE_MESSAGE_SIZE 8192L
#define DEFAULT_WINDOW 64
#define MAX_PT2PT_SIZE (1L << 22)
#define MAX_COLL_SIZE (1L << 20)
#define SIZE_LIMIT (1L << 30)
#define MAX_THREADS 1024
#define MAX_WINDOW 65536

enum kind { KIND_LAT, KIND_BW, KIND_COLL };

struct options {
	enum kind kind;
	long min_size, max_size; /* -m MIN:MAX (0: default) */
	int iterations;          /* -i (0: default per size class) */
	int warmup;              /* -x (-1: default per size class) */
	int window;              /* -W */
	int threads;             /* -t (latency_mt) */
	int pairs;               /* -p (mbw_mr; 0: processes / 2) */
	int full;                /* -f (collectives) */
	long smallest;           /* the benchmark's smallest size */
};

/*
 * init_options parses argv for a benchmark of the given kind whose smallest
 * size is smallest (0, 1 or 4 bytes); flags lists the letters it takes
 * beyond -m -i -x -h. On bad usage or -h it prints (rank 0), finalizes MPI
 * and exits.
 */
void init_options(struct options *o, int argc, char **argv, enum kind kind,
		  long smallest, const char *flags, const char *name);

/* first_size and next_size walk the sizes: 0 (latencies), 1, 2, 4, ... */
long first_size(const struct options *o);
long next_size(long size);
long max_size(const struct options *o);

/* counts returns the timed and warm-up iterations for a size. */
void counts(const struct options *o, long size, int *iterations, int *warmup);

/*
 * print_title prints "# <title> (osu-c; <MPI library>; <n> processes)"
 * on rank 0, preceded by an empty line for the collectives, as OMB does.
 */
void print_title(const char *title, int collective);

/* alloc_buf returns n bytes (at least 4) aligned to a page, or aborts. */
char *alloc_buf(size_t n);

/* touch fills s with 'a' and r with 'b' over size bytes. */
void touch(char *s, char *r, long size);

/* need_ranks aborts unless the world has exactly (exact) or at least n ranks. */
void need_ranks(int n, int exact);

/* check aborts with a message if an MPI call failed. */
#define CHECK(call)                                                        \
	do {                                                               \
		int rc_ = (call);                                          \
		if (rc_ != MPI_SUCCESS)                                    \
			fail_mpi(#call, rc_, __FILE__, __LINE__);          \
	} while (0)
void fail_mpi(const char *what, int rc, const char *file, int line);

#endif
