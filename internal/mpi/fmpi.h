// C helpers of package mpi: every MPI call fibermpi makes goes through one
// of these, so that the Go side needs no MPI macro (Open MPI's handles are
// addresses of globals, MPICH's are integers) and a hot operation is one
// cgo call. Every function is static: the header is included by several
// Go files of one package.
#ifndef FIBERMPI_FMPI_H
#define FIBERMPI_FMPI_H

#include <mpi.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static MPI_Comm fmpi_world(void) { return MPI_COMM_WORLD; }
static MPI_Comm fmpi_comm_null(void) { return MPI_COMM_NULL; }
static MPI_Request fmpi_request_null(void) { return MPI_REQUEST_NULL; }
static int fmpi_any_source(void) { return MPI_ANY_SOURCE; }

// fmpi_init initializes MPI at MPI_THREAD_SERIALIZED unless it is
// initialized already, and sets MPI_ERRORS_RETURN on the world.
static int fmpi_init(int *provided, int *already) {
	int flag = 0, err;
	MPI_Initialized(&flag);
	*already = flag;
	if (flag) {
		err = MPI_Query_thread(provided);
	} else {
		err = MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, provided);
	}
	if (err != MPI_SUCCESS) return err;
	return MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
}

static int fmpi_finalized(void) {
	int flag = 0;
	MPI_Finalized(&flag);
	return flag;
}

static int fmpi_tag_ub(MPI_Comm c, int *ub) {
	int *v = NULL, flag = 0;
	int err = MPI_Comm_get_attr(c, MPI_TAG_UB, &v, &flag);
	*ub = (err == MPI_SUCCESS && flag && v) ? *v : 32767;
	return err;
}

static void fmpi_error_string(int code, char *buf, int *len) {
	*len = 0;
	if (MPI_Error_string(code, buf, len) != MPI_SUCCESS) *len = 0;
}

static int fmpi_library_version(char *buf, int *len) {
	return MPI_Get_library_version(buf, len);
}

// fmpi_comm_dup duplicates c (blocking; called once, at start-up, before
// anything else of this process uses MPI).
static int fmpi_comm_dup(MPI_Comm c, MPI_Comm *out) {
	return MPI_Comm_dup(c, out);
}

static int fmpi_comm_ready(MPI_Comm c) {
	return MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
}

static int fmpi_comm_free(MPI_Comm *c) { return MPI_Comm_free(c); }

static int fmpi_comm_rank_size(MPI_Comm c, int *rank, int *size) {
	int err = MPI_Comm_rank(c, rank);
	if (err != MPI_SUCCESS) return err;
	return MPI_Comm_size(c, size);
}

// fmpi_split_shared splits c by shared memory (one communicator per node).
static int fmpi_split_shared(MPI_Comm c, int key, MPI_Comm *out) {
	int err = MPI_Comm_split_type(c, MPI_COMM_TYPE_SHARED, key, MPI_INFO_NULL, out);
	if (err != MPI_SUCCESS) return err;
	return MPI_Comm_set_errhandler(*out, MPI_ERRORS_RETURN);
}

static int fmpi_test(MPI_Request *req, int *done) {
	return MPI_Test(req, done, MPI_STATUS_IGNORE);
}

static int fmpi_test_count(MPI_Request *req, int *done, int *count) {
	MPI_Status st;
	int err = MPI_Test(req, done, &st);
	if (err == MPI_SUCCESS && *done) MPI_Get_count(&st, MPI_BYTE, count);
	return err;
}

// fmpi_request_free leaves req to MPI (see fmpi_ring_abandon for why
// nothing is cancelled). Never used on a send to this process itself:
// MPICH 4.0.2 then loses the message (testdata/mpich_freed_self_send.c:
// the receive that should match never completes), and in the conformance
// suite a later MPI_Irecv crashed in MPICH's request allocator — most
// likely the freed request reused while still queued.
static int fmpi_request_free(MPI_Request *req) {
	if (*req == MPI_REQUEST_NULL) return MPI_SUCCESS;
	return MPI_Request_free(req);
}

static int fmpi_isend(void *buf, int n, int dest, int tag, MPI_Comm c, MPI_Request *req) {
	return MPI_Isend(buf, n, MPI_BYTE, dest, tag, c, req);
}

static int fmpi_irecv(void *buf, int n, int src, int tag, MPI_Comm c, MPI_Request *req) {
	return MPI_Irecv(buf, n, MPI_BYTE, src, tag, c, req);
}

static int fmpi_ibarrier(MPI_Comm c, MPI_Request *req) { return MPI_Ibarrier(c, req); }

static int fmpi_iallgather_int(int *send, int *recv, MPI_Comm c, MPI_Request *req) {
	return MPI_Iallgather(send, 1, MPI_INT, recv, 1, MPI_INT, c, req);
}

static int fmpi_iallgatherv(void *send, int n, void *recv, int *counts, int *displs, MPI_Comm c, MPI_Request *req) {
	return MPI_Iallgatherv(send, n, MPI_BYTE, recv, counts, displs, MPI_BYTE, c, req);
}

static int fmpi_ibcast(void *buf, int n, int root, MPI_Comm c, MPI_Request *req) {
	return MPI_Ibcast(buf, n, MPI_BYTE, root, c, req);
}

static int fmpi_abort(MPI_Comm c, int code) { return MPI_Abort(c, code); }

// ---- The receive ring ----------------------------------------------------
//
// n receives of slot bytes each, ANY_SOURCE, one tag, posted in ring order.
// Messages of that tag match them in posting order, so slots complete in
// ring order for the messages of one source: consuming them strictly in
// ring order (head first) keeps every source's order.
typedef struct {
	MPI_Comm comm;
	int tag, n, slot;
	int head;        // next slot to complete
	int avail;       // slots complete and not yet reposted, from head
	char *mem;       // n * slot bytes
	MPI_Request *req;
	int *count;      // bytes received, per complete slot
	int *source;     // rank of the sender, per complete slot
	int err;         // fmpi_poll's MPI error code
} fmpi_ring;

static int fmpi_ring_post(fmpi_ring *r, int i) {
	return MPI_Irecv(r->mem + (size_t)i * r->slot, r->slot, MPI_BYTE, MPI_ANY_SOURCE, r->tag, r->comm, &r->req[i]);
}

static fmpi_ring *fmpi_ring_new(MPI_Comm c, int tag, int n, int slot, int *err) {
	fmpi_ring *r = calloc(1, sizeof *r);
	if (!r) { *err = MPI_ERR_NO_MEM; return NULL; }
	r->comm = c; r->tag = tag; r->n = n; r->slot = slot;
	r->mem = malloc((size_t)n * slot);
	r->req = malloc(sizeof(MPI_Request) * n);
	r->count = calloc(n, sizeof(int));
	r->source = calloc(n, sizeof(int));
	if (!r->mem || !r->req || !r->count || !r->source) {
		free(r->mem); free(r->req); free(r->count); free(r->source); free(r);
		*err = MPI_ERR_NO_MEM;
		return NULL;
	}
	*err = MPI_SUCCESS;
	for (int i = 0; i < n; i++) r->req[i] = MPI_REQUEST_NULL;
	for (int i = 0; i < n; i++) {
		int e = fmpi_ring_post(r, i);
		if (e != MPI_SUCCESS) { *err = e; break; }
	}
	return r;
}

// fmpi_ring_cycle reposts the first `done` complete slots (the caller has
// consumed them), then tests slots in ring order from the first one not
// yet known complete, stopping at the first incomplete one or when `max`
// are complete. It returns the number of complete slots from head (their
// data stays put until a later cycle reposts them).
static int fmpi_ring_cycle(fmpi_ring *r, int done, int max, int *err) {
	*err = MPI_SUCCESS;
	for (int j = 0; j < done; j++) {
		int e = fmpi_ring_post(r, r->head);
		if (e != MPI_SUCCESS) { *err = e; return r->avail; }
		r->head = (r->head + 1) % r->n;
		r->avail--;
	}
	if (max > r->n) max = r->n;
	while (r->avail < max) {
		int i = (r->head + r->avail) % r->n, flag = 0;
		MPI_Status st;
		int e = MPI_Test(&r->req[i], &flag, &st);
		if (e != MPI_SUCCESS) { *err = e; break; }
		if (!flag) break;
		MPI_Get_count(&st, MPI_BYTE, &r->count[i]);
		r->source[i] = st.MPI_SOURCE;
		r->avail++;
	}
	return r->avail;
}

static char *fmpi_ring_slot(fmpi_ring *r, int k) { return r->mem + (size_t)((r->head + k) % r->n) * r->slot; }
static int fmpi_ring_count(fmpi_ring *r, int k) { return r->count[(r->head + k) % r->n]; }
static int fmpi_ring_source(fmpi_ring *r, int k) { return r->source[(r->head + k) % r->n]; }

// fmpi_ring_abandon leaves the ring's receives posted and its memory
// allocated, for good: nothing may be freed while MPI may still write it,
// and cancelling is not safe here. With MPICH 4.0.2, MPI_Cancel of these
// MPI_ANY_SOURCE receives, and also completing them with messages this
// process sends itself, made later receives on other tags match wrong
// messages (measured: a receive on tag 6 completed with an empty message
// sent on tag 0; the next transport then lost its messages). A closed
// ring's tag is never used again (rdma/mpi numbers its lanes once), so
// only late messages meant for it land in it. The cost is the ring's
// memory per closed transport: one per process in a job.
static void fmpi_ring_abandon(fmpi_ring *r) {
	(void)r;
}

// fmpi_ring_cancel cancels the ring's receives still posted and waits for
// each, so that MPI_Finalize finds none pending (UCX prints a warning per
// pending receive at finalize: 64 lines per process). Only Finalize calls
// it, right before its MPI_Finalize: the wrong matches fmpi_ring_abandon
// describes hit receives posted after such a cancel, and none is posted
// after this one. A cancelled receive completes at once; one that a
// message completed first is simply waited for.
static int fmpi_ring_cancel(fmpi_ring *r) {
	int err = MPI_SUCCESS;
	for (int i = 0; i < r->n; i++) {
		if (r->req[i] == MPI_REQUEST_NULL) continue;
		int e = MPI_Cancel(&r->req[i]);
		if (e == MPI_SUCCESS) e = MPI_Wait(&r->req[i], MPI_STATUS_IGNORE);
		if (e != MPI_SUCCESS && err == MPI_SUCCESS) err = e;
	}
	return err;
}

// ---- Outgoing messages ---------------------------------------------------
//
// Each message is copied into a buffer of slot bytes (recycled through a
// free list) and sent with MPI_Isend; the buffer is recycled when the send
// completes. Active sends sit in a compact array, tested with one
// MPI_Testsome.
typedef struct {
	MPI_Comm comm;
	int slot;
	int active, cap;
	MPI_Request *req;
	char **buf;
	char **free_list;
	int nfree, free_cap;
	int *idx;        // scratch for Testsome
} fmpi_sendq;

static fmpi_sendq *fmpi_sendq_new(MPI_Comm c, int slot) {
	fmpi_sendq *q = calloc(1, sizeof *q);
	if (!q) return NULL;
	q->comm = c; q->slot = slot;
	return q;
}

static int fmpi_sendq_grow(fmpi_sendq *q) {
	int cap = q->cap ? 2 * q->cap : 64;
	MPI_Request *req = realloc(q->req, sizeof(MPI_Request) * cap);
	if (!req) return MPI_ERR_NO_MEM;
	q->req = req;
	char **buf = realloc(q->buf, sizeof(char *) * cap);
	if (!buf) return MPI_ERR_NO_MEM;
	q->buf = buf;
	int *idx = realloc(q->idx, sizeof(int) * cap);
	if (!idx) return MPI_ERR_NO_MEM;
	q->idx = idx;
	q->cap = cap;
	return MPI_SUCCESS;
}

// fmpi_send copies head (hn bytes) then body (bn bytes) into one buffer and
// starts sending it to dest with tag.
static int fmpi_send(fmpi_sendq *q, const void *head, int hn, const void *body, int bn, int dest, int tag) {
	if (hn + bn > q->slot) return MPI_ERR_COUNT;
	if (q->active == q->cap) {
		int e = fmpi_sendq_grow(q);
		if (e != MPI_SUCCESS) return e;
	}
	char *b;
	if (q->nfree > 0) {
		b = q->free_list[--q->nfree];
	} else {
		b = malloc(q->slot);
		if (!b) return MPI_ERR_NO_MEM;
	}
	memcpy(b, head, hn);
	if (bn > 0) memcpy(b + hn, body, bn);
	int e = MPI_Isend(b, hn + bn, MPI_BYTE, dest, tag, q->comm, &q->req[q->active]);
	if (e != MPI_SUCCESS) {
		free(b);
		return e;
	}
	q->buf[q->active++] = b;
	return MPI_SUCCESS;
}

static void fmpi_sendq_recycle(fmpi_sendq *q, char *b);

// fmpi_send_top starts sending the n bytes the caller has written into the
// buffer on top of q's free list (the Go side writes it directly: C
// memory) to dest with tag. q comes as an integer: cgo then checks no Go
// pointer, which cost a third of a cgo call's time for the two slices
// fmpi_send takes. The caller has seen a free buffer and room for one
// more active send.
static int fmpi_send_top(uintptr_t qp, int n, int dest, int tag) {
	fmpi_sendq *q = (fmpi_sendq *)qp;
	if (q->nfree == 0 || q->active == q->cap || n > q->slot) return MPI_ERR_INTERN;
	char *b = q->free_list[q->nfree - 1];
	int e = MPI_Isend(b, n, MPI_BYTE, dest, tag, q->comm, &q->req[q->active]);
	if (e != MPI_SUCCESS) return e;
	q->nfree--;
	q->buf[q->active++] = b;
	return MPI_SUCCESS;
}

static void fmpi_sendq_recycle(fmpi_sendq *q, char *b) {
	if (q->nfree == q->free_cap) {
		int cap = q->free_cap ? 2 * q->free_cap : 64;
		char **fl = realloc(q->free_list, sizeof(char *) * cap);
		if (!fl) { free(b); return; }
		q->free_list = fl;
		q->free_cap = cap;
	}
	q->free_list[q->nfree++] = b;
}

// fmpi_sendq_test retires the completed sends and returns how many are
// still active.
static int fmpi_sendq_test(fmpi_sendq *q, int *err) {
	*err = MPI_SUCCESS;
	if (q->active == 0) return 0;
	int outcount = 0;
	int e = MPI_Testsome(q->active, q->req, &outcount, q->idx, MPI_STATUSES_IGNORE);
	if (e != MPI_SUCCESS) { *err = e; return q->active; }
	if (outcount == MPI_UNDEFINED || outcount == 0) return q->active;
	for (int k = 0; k < outcount; k++) {
		fmpi_sendq_recycle(q, q->buf[q->idx[k]]);
		q->buf[q->idx[k]] = NULL;
	}
	int w = 0;
	for (int i = 0; i < q->active; i++) {
		if (q->buf[i] != NULL) {
			q->buf[w] = q->buf[i];
			q->req[w] = q->req[i];
			w++;
		}
	}
	q->active = w;
	return w;
}

// fmpi_retire_at is how many sends may be active before a poll retires
// the completed ones. Small sends complete inside MPI_Isend on the MPIs
// measured (MPICH over UCX, Open MPI's ob1): testing each of them at once
// costs an MPI_Test per message, while one MPI_Testsome over a batch costs
// about one MPI_Test per batch.
enum { fmpi_retire_at = 16 };

// fmpi_poll is one poll of a transport in one cgo call: it retires the
// completed sends of q once fmpi_retire_at are active, then cycles r (see
// fmpi_ring_cycle); when no slot is complete it tests the ring's head
// again, up to spin more times, and returns as soon as one completes,
// without testing the slot after it: a test that finds nothing runs MPI's
// progress engine, and after a wait the next message is rarely there.
// The spin makes a poll's cgo transition count for several MPI_Tests:
// a message is then seen within one MPI_Test of its arrival instead of
// one whole poll of the Go side. r->err gets the MPI error, if any. q and
// r come as integers (they are C memory): cgo then checks no argument of
// the hot call for Go pointers.
static int fmpi_poll(uintptr_t qp, uintptr_t rp, int done, int max, int spin) {
	fmpi_sendq *q = (fmpi_sendq *)qp;
	fmpi_ring *r = (fmpi_ring *)rp;
	int e1 = MPI_SUCCESS, e2 = MPI_SUCCESS;
	if (q->active >= fmpi_retire_at) fmpi_sendq_test(q, &e1);
	int n = fmpi_ring_cycle(r, done, max, &e2);
	while (n == 0 && spin-- > 0 && e2 == MPI_SUCCESS) n = fmpi_ring_cycle(r, 0, 1, &e2);
	r->err = e1 != MPI_SUCCESS ? e1 : e2;
	return n;
}

// fmpi_sendq_free frees a queue with no active send (the Go side keeps a
// queue with active sends until they complete: MPI_Request_free on them
// is what fmpi_request_free's note warns of).
static void fmpi_sendq_free(fmpi_sendq *q) {
	if (!q) return;
	for (int i = 0; i < q->nfree; i++) free(q->free_list[i]);
	free(q->req); free(q->buf); free(q->free_list); free(q->idx); free(q);
}

// fmpi_testsome tests n requests (held by the caller) at once; done[i] is
// set for each request that completed (it is then MPI_REQUEST_NULL).
static int fmpi_testsome(int n, MPI_Request *req, int *idx, int *outcount) {
	int e = MPI_Testsome(n, req, outcount, idx, MPI_STATUSES_IGNORE);
	if (*outcount == MPI_UNDEFINED) *outcount = 0;
	return e;
}

#endif
