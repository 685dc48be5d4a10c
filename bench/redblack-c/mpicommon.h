/* Helpers of the MPI programs: a process's stripe, its halo exchange and
 * the gathering of the final grid. */
#ifndef REDBLACK_MPICOMMON_H
#define REDBLACK_MPICOMMON_H

#include <mpi.h>
#include "common.h"

enum { TAG_UP = 1, TAG_DOWN = 2 }; /* by the direction a row travels */

/* stripe is a process's band of global rows first..last with a ghost row on
 * each side: local row l is global row l+off. */
struct stripe {
	int rank, nprocs;
	int first, last, size, off, w;
	double *a;
	MPI_Datatype types[2]; /* cells of one colour from column 1, from column 2 */
};

static inline double *srow(struct stripe *s, int l) { return s->a + (size_t)l * s->w; }

/* stripe_init splits the rows, checks the split with MPI_Scan of the stripe
 * sizes as Snir 2009 §4.3.3 does, allocates and fills the stripe, and makes
 * the two vector datatypes (Snir 2009's dtype[2]). */
static inline void stripe_init(struct stripe *s, int n)
{
	MPI_Comm_rank(MPI_COMM_WORLD, &s->rank);
	MPI_Comm_size(MPI_COMM_WORLD, &s->nprocs);
	if (s->nprocs > n) {
		if (s->rank == 0)
			fprintf(stderr, "%d processes for %d rows\n", s->nprocs, n);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	split(n, s->nprocs, s->rank, &s->first, &s->last);
	s->size = s->last - s->first + 1;
	int lastrow;
	MPI_Scan(&s->size, &lastrow, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (lastrow != s->last) {
		fprintf(stderr, "rank %d: scan gave last row %d, want %d\n", s->rank, lastrow, s->last);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	s->off = s->first - 1;
	s->w = n + 2;
	s->a = aligned_alloc(64, ((size_t)(s->size + 2) * s->w * sizeof(double) + 63) / 64 * 64);
	if (!s->a)
		MPI_Abort(MPI_COMM_WORLD, 1);
	for (int l = 0; l <= s->size + 1; l++)
		fill_row(srow(s, l), l + s->off, n, n);
	for (int k = 0; k < 2; k++) {
		int count = (n + 1 - k) / 2;
		if (count == 0) {
			s->types[k] = MPI_DATATYPE_NULL;
			continue;
		}
		MPI_Type_vector(count, 1, 2, MPI_DOUBLE, &s->types[k]);
		MPI_Type_commit(&s->types[k]);
	}
}

/* post_side starts the exchange of colour c across one side: Isend of the
 * colour's cells of local row edge, Irecv of the neighbour's into local row
 * ghost. It appends the requests to req and returns their new count. */
static inline int post_side(struct stripe *s, int c, int edge, int ghost, int peer,
			    int sendtag, int recvtag, MPI_Request *req, int k)
{
	int n = s->w - 2;
	int j0 = first_col(edge + s->off, c);
	if ((n - j0 + 2) / 2 > 0)
		MPI_Isend(srow(s, edge) + j0, 1, s->types[j0 - 1], peer, sendtag, MPI_COMM_WORLD, &req[k++]);
	j0 = first_col(ghost + s->off, c);
	if ((n - j0 + 2) / 2 > 0)
		MPI_Irecv(srow(s, ghost) + j0, 1, s->types[j0 - 1], peer, recvtag, MPI_COMM_WORLD, &req[k++]);
	return k;
}

/* post_top and post_bottom are post_side towards the stripe above (rank−1)
 * and below (rank+1); they post nothing at the grid's edges. */
static inline int post_top(struct stripe *s, int c, MPI_Request *req, int k)
{
	if (s->rank == 0)
		return k;
	return post_side(s, c, 1, 0, s->rank - 1, TAG_UP, TAG_DOWN, req, k);
}

static inline int post_bottom(struct stripe *s, int c, MPI_Request *req, int k)
{
	if (s->rank == s->nprocs - 1)
		return k;
	return post_side(s, c, s->size, s->size + 1, s->rank + 1, TAG_DOWN, TAG_UP, req, k);
}

/* finish gathers the grid at rank 0 (outside the timed part), reduces the
 * residual and the elapsed time (the slowest process's), and reports. */
static inline void finish(struct stripe *s, const char *variant, const char *layout,
			  const struct opts *o, double elapsed, double res)
{
	double gres, gel;
	MPI_Reduce(&res, &gres, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
	MPI_Reduce(&elapsed, &gel, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
	int n = o->n, w = s->w;
	double *g = NULL;
	int *counts = NULL, *displs = NULL;
	if (s->rank == 0) {
		g = malloc((size_t)w * w * sizeof(double));
		counts = malloc(s->nprocs * sizeof(int));
		displs = malloc(s->nprocs * sizeof(int));
		if (!g || !counts || !displs)
			MPI_Abort(MPI_COMM_WORLD, 1);
		fill_row(g, 0, n, n);
		fill_row(g + (size_t)(n + 1) * w, n + 1, n, n);
		for (int p = 0; p < s->nprocs; p++) {
			int f, l;
			split(n, s->nprocs, p, &f, &l);
			counts[p] = (l - f + 1) * w;
			displs[p] = f * w;
		}
	}
	MPI_Gatherv(srow(s, 1), s->size * w, MPI_DOUBLE, g, counts, displs, MPI_DOUBLE, 0, MPI_COMM_WORLD);
	if (s->rank == 0)
		report(variant, layout, o, gel, gres, g);
	free(g);
	free(counts);
	free(displs);
	for (int k = 0; k < 2; k++)
		if (s->types[k] != MPI_DATATYPE_NULL)
			MPI_Type_free(&s->types[k]);
	free(s->a);
}

#endif
