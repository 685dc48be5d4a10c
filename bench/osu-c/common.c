#include "common.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int world_rank(void)
{
	int r = 0;
	MPI_Comm_rank(MPI_COMM_WORLD, &r);
	return r;
}

void fail_mpi(const char *what, int rc, const char *file, int line)
{
	char msg[MPI_MAX_ERROR_STRING];
	int len = 0;
	MPI_Error_string(rc, msg, &len);
	fprintf(stderr, "%s:%d: %s failed: %s\n", file, line, what, msg);
	MPI_Abort(MPI_COMM_WORLD, 1);
}

static void usage(const char *name, const char *flags, FILE *f)
{
	fprintf(f, "usage: %s [-m [MIN:]MAX] [-i ITER] [-x WARMUP]", name);
	if (strchr(flags, 'W'))
		fprintf(f, " [-W WINDOW]");
	if (strchr(flags, 't'))
		fprintf(f, " [-t THREADS]");
	if (strchr(flags, 'p'))
		fprintf(f, " [-p PAIRS]");
	if (strchr(flags, 'f'))
		fprintf(f, " [-f]");
	fprintf(f, "\n"
		   "  -m  message sizes in bytes (MIN rounded up to a power of two)\n"
		   "  -i  timed iterations per size (default: the OSU counts)\n"
		   "  -x  warm-up iterations per size, not timed\n");
	if (strchr(flags, 'W'))
		fprintf(f, "  -W  messages per window (default %d)\n", DEFAULT_WINDOW);
	if (strchr(flags, 't'))
		fprintf(f, "  -t  threads per process, thread k of rank 0 with thread k of rank 1 on tag k (default 2)\n");
	if (strchr(flags, 'p'))
		fprintf(f, "  -p  sender/receiver pairs, rank i sends to rank i+pairs (default processes/2)\n");
	if (strchr(flags, 'f'))
		fprintf(f, "  -f  also print minimum and maximum latency and iterations\n");
}

static void leave(int code)
{
	MPI_Finalize();
	exit(code);
}

static void bad(const char *name, const char *flags, const char *what, const char *arg)
{
	if (world_rank() == 0) {
		fprintf(stderr, "%s: %s: %s\n", name, what, arg);
		usage(name, flags, stderr);
	}
	leave(2);
}

/* parse_long reads a non-negative integer, all of s; -1 if it is not one. */
static long parse_long(const char *s)
{
	char *end;
	long v;
	if (*s == '\0' || !isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || *end != '\0')
		return -1;
	return v;
}

/* parse_sizes reads "MAX", "MIN:MAX", "MIN:" or ":MAX"; 0 on success. */
static int parse_sizes(const char *s, long *lo, long *hi)
{
	const char *colon = strchr(s, ':');
	char buf[64];
	*lo = 0;
	*hi = 0;
	if (colon == NULL) {
		*hi = parse_long(s);
		return *hi > 0 ? 0 : -1;
	}
	if ((size_t)(colon - s) >= sizeof buf)
		return -1;
	memcpy(buf, s, (size_t)(colon - s));
	buf[colon - s] = '\0';
	if (buf[0] == '\0' && colon[1] == '\0')
		return -1;
	if (buf[0] != '\0' && (*lo = parse_long(buf)) < 0)
		return -1;
	if (colon[1] != '\0' && (*hi = parse_long(colon + 1)) <= 0)
		return -1;
	if (*hi > 0 && *lo > *hi)
		return -1;
	return 0;
}

void init_options(struct options *o, int argc, char **argv, enum kind kind,
		  long smallest, const char *flags, const char *name)
{
	char optstring[32] = "+m:i:x:h";
	int c;
	long v;

	memset(o, 0, sizeof *o);
	o->kind = kind;
	o->warmup = -1;
	o->window = DEFAULT_WINDOW;
	o->threads = 2;
	o->smallest = smallest;
	for (const char *f = flags; *f; f++) {
		size_t n = strlen(optstring);
		optstring[n] = *f;
		optstring[n + 1] = *f == 'f' ? '\0' : ':';
		optstring[n + 2] = '\0';
	}
	opterr = 0;
	while ((c = getopt(argc, argv, optstring)) != -1) {
		switch (c) {
		case 'm':
			if (parse_sizes(optarg, &o->min_size, &o->max_size) != 0 ||
			    o->min_size > SIZE_LIMIT || o->max_size > SIZE_LIMIT)
				bad(name, flags, "bad message sizes", optarg);
			break;
		case 'i':
			if ((v = parse_long(optarg)) < 1 || v > 1000000000L)
				bad(name, flags, "bad iterations", optarg);
			o->iterations = (int)v;
			break;
		case 'x':
			if ((v = parse_long(optarg)) < 0 || v > 1000000000L)
				bad(name, flags, "bad warm-up iterations", optarg);
			o->warmup = (int)v;
			break;
		case 'W':
			if ((v = parse_long(optarg)) < 1 || v > MAX_WINDOW)
				bad(name, flags, "bad window", optarg);
			o->window = (int)v;
			break;
		case 't':
			if ((v = parse_long(optarg)) < 1 || v > MAX_THREADS)
				bad(name, flags, "bad thread count", optarg);
			o->threads = (int)v;
			break;
		case 'p':
			if ((v = parse_long(optarg)) < 1)
				bad(name, flags, "bad pair count", optarg);
			o->pairs = (int)v;
			break;
		case 'f':
			o->full = 1;
			break;
		case 'h':
			if (world_rank() == 0)
				usage(name, flags, stdout);
			leave(0);
			break;
		default:
			bad(name, flags, "unknown option or missing argument", argv[optind - 1]);
		}
	}
	if (optind != argc)
		bad(name, flags, "unexpected argument", argv[optind]);
	if (first_size(o) > max_size(o))
		bad(name, flags, "no message size in range", "-m");
}

long max_size(const struct options *o)
{
	if (o->max_size > 0)
		return o->max_size;
	return o->kind == KIND_COLL ? MAX_COLL_SIZE : MAX_PT2PT_SIZE;
}

long first_size(const struct options *o)
{
	long lo = o->min_size > o->smallest ? o->min_size : o->smallest;
	long p = 1;
	if (lo == 0)
		return 0;
	while (p < lo)
		p *= 2;
	return p;
}

long next_size(long size)
{
	return size == 0 ? 1 : size * 2;
}

void counts(const struct options *o, long size, int *iterations, int *warmup)
{
	int large = size > LARGE_MESSAGE_SIZE;
	switch (o->kind) {
	case KIND_BW:
		*iterations = large ? 20 : 100;
		*warmup = large ? 2 : 10;
		break;
	case KIND_COLL:
		*iterations = large ? 100 : 1000;
		*warmup = large ? 10 : 200;
		break;
	default:
		*iterations = large ? 1000 : 10000;
		*warmup = large ? 10 : 100;
	}
	if (o->iterations > 0)
		*iterations = o->iterations;
	if (o->warmup >= 0)
		*warmup = o->warmup;
}

/* library_name shortens MPI_Get_library_version's text to one phrase:
 * "MPICH 4.0.2", "Open MPI v4.1.4". */
static void library_name(char *out, size_t n)
{
	char v[MPI_MAX_LIBRARY_VERSION_STRING];
	int len = 0, space = 0;
	size_t j = 0;
	char *p;

	MPI_Get_library_version(v, &len);
	v[strcspn(v, "\n,")] = '\0';
	if ((p = strstr(v, "Version:")) != NULL)
		memmove(p, p + 8, strlen(p + 8) + 1);
	for (size_t i = 0; v[i] && j + 1 < n; i++) {
		if (isspace((unsigned char)v[i])) {
			space = j > 0;
			continue;
		}
		if (space && j + 2 < n)
			out[j++] = ' ';
		space = 0;
		out[j++] = v[i];
	}
	out[j] = '\0';
}

void print_title(const char *title, int collective)
{
	char lib[128];
	int size = 0;
	if (world_rank() != 0)
		return;
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	library_name(lib, sizeof lib);
	printf("%s# %s (osu-c; %s; %d processes)\n", collective ? "\n" : "", title, lib, size);
}

char *alloc_buf(size_t n)
{
	void *p = NULL;
	long page = sysconf(_SC_PAGESIZE);
	if (n < 4)
		n = 4;
	if (posix_memalign(&p, page > 0 ? (size_t)page : 4096, n) != 0) {
		fprintf(stderr, "cannot allocate %zu bytes\n", n);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	return p;
}

void touch(char *s, char *r, long size)
{
	memset(s, 'a', (size_t)size);
	memset(r, 'b', (size_t)size);
}

void need_ranks(int n, int exact)
{
	int size = 0;
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (exact ? size == n : size >= n)
		return;
	if (world_rank() == 0)
		fprintf(stderr, "this benchmark needs %s %d processes, have %d\n", exact ? "exactly" : "at least", n, size);
	leave(1);
}
