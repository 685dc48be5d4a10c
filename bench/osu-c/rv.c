/* Ways of moving a rendezvous message's bytes over MPI, measured the bw
 * way (rank 0's bytes over its time, windows of -W, a 4-byte reply per
 * window), to choose how rdma/mpi's Put travels. Built three times:
 *
 *   -DLATE  osu_rv_late: per message a 64-byte head, then the bytes, both
 *           sent at once; rank 1 posts the bytes' receive only once it has
 *           the head (so the bytes reach MPI before their receive: the
 *           way rdma/mpi's Put went until 2026-11-27);
 *   -DRTR   osu_rv_rtr: rank 1 posts each receive first, then tells rank 0
 *           (a 64-byte ready-to-receive); rank 0 sends the bytes of a
 *           message only once its ready-to-receive is in;
 *   -DRMA   osu_rv_put: MPI-3 RMA: rank 1 attaches its buffer to a
 *           dynamic window (MPI_Win_create_dynamic, MPI_Win_attach) and
 *           publishes its address; rank 0 holds a shared lock on rank 1
 *           and per window does MPI_Put of every message, MPI_Win_flush,
 *           then sends a 4-byte "done" (a rendezvous Done, per window).
 *
 * osu_bw (bw.c) is the reference: receives posted first, no head. */
#include "common.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#if defined(LATE)
#define NAME "osu_rv_late"
#define TITLE "Rendezvous bytes sent with their head, received late"
#elif defined(RTR)
#define NAME "osu_rv_rtr"
#define TITLE "Rendezvous bytes sent after a ready-to-receive"
#elif defined(RMA)
#define NAME "osu_rv_put"
#define TITLE "Rendezvous bytes by MPI_Put into a dynamic window"
#else
#error "build with -DLATE, -DRTR or -DRMA"
#endif

enum { HEAD = 64, TAG_HEAD = 1, TAG_DATA = 2, TAG_ACK = 3 };

int main(int argc, char **argv)
{
	struct options o;
	int rank;
	char *s, *r, head[HEAD] = {0};
	MPI_Request *req, *hreq;

	CHECK(MPI_Init(&argc, &argv));
	init_options(&o, argc, argv, KIND_BW, 1, "W", NAME);
	need_ranks(2, 1);
	CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
	s = alloc_buf((size_t)max_size(&o));
	r = alloc_buf((size_t)max_size(&o));
	req = malloc(sizeof *req * (size_t)o.window);
	hreq = malloc(sizeof *hreq * (size_t)o.window);
	if (req == NULL || hreq == NULL)
		MPI_Abort(MPI_COMM_WORLD, 1);
#ifdef RMA
	MPI_Win win;
	MPI_Aint base = 0;
	CHECK(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
	if (rank == 1) {
		CHECK(MPI_Win_attach(win, r, (MPI_Aint)max_size(&o)));
		CHECK(MPI_Get_address(r, &base));
	}
	CHECK(MPI_Bcast(&base, 1, MPI_AINT, 1, MPI_COMM_WORLD));
	if (rank == 0)
		CHECK(MPI_Win_lock(MPI_LOCK_SHARED, 1, MPI_MODE_NOCHECK, win));
#endif
	print_title(TITLE, 0);
	if (rank == 0)
		printf("%-*s%*s\n", SIZE_WIDTH, "# Size", FIELD_WIDTH, "Bandwidth (MB/s)");
	fflush(stdout);
	for (long size = first_size(&o); size <= max_size(&o); size = next_size(size)) {
		int iters, warm, peer = 1 - rank, n = (int)size, w = o.window;
		double t0 = 0, t1;

		counts(&o, size, &iters, &warm);
		touch(s, r, size);
		CHECK(MPI_Barrier(MPI_COMM_WORLD));
		for (int i = 0; i < warm + iters; i++) {
			if (rank == 0 && i == warm)
				t0 = MPI_Wtime();
			if (rank == 0) {
#if defined(LATE)
				for (int j = 0; j < w; j++) {
					CHECK(MPI_Isend(head, HEAD, MPI_CHAR, peer, TAG_HEAD, MPI_COMM_WORLD, &hreq[j]));
					CHECK(MPI_Isend(s, n, MPI_CHAR, peer, TAG_DATA, MPI_COMM_WORLD, &req[j]));
				}
				CHECK(MPI_Waitall(w, hreq, MPI_STATUSES_IGNORE));
				CHECK(MPI_Waitall(w, req, MPI_STATUSES_IGNORE));
#elif defined(RTR)
				for (int j = 0; j < w; j++) {
					CHECK(MPI_Recv(head, HEAD, MPI_CHAR, peer, TAG_HEAD, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
					CHECK(MPI_Isend(s, n, MPI_CHAR, peer, TAG_DATA, MPI_COMM_WORLD, &req[j]));
				}
				CHECK(MPI_Waitall(w, req, MPI_STATUSES_IGNORE));
#else
				for (int j = 0; j < w; j++)
					CHECK(MPI_Put(s, n, MPI_CHAR, peer, base, n, MPI_CHAR, win));
				CHECK(MPI_Win_flush(peer, win));
				CHECK(MPI_Send(head, 4, MPI_CHAR, peer, TAG_HEAD, MPI_COMM_WORLD));
#endif
				CHECK(MPI_Recv(head, 4, MPI_CHAR, peer, TAG_ACK, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
			} else {
#if defined(LATE)
				for (int j = 0; j < w; j++) {
					CHECK(MPI_Recv(head, HEAD, MPI_CHAR, peer, TAG_HEAD, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
					CHECK(MPI_Irecv(r, n, MPI_CHAR, peer, TAG_DATA, MPI_COMM_WORLD, &req[j]));
				}
				CHECK(MPI_Waitall(w, req, MPI_STATUSES_IGNORE));
#elif defined(RTR)
				for (int j = 0; j < w; j++) {
					CHECK(MPI_Irecv(r, n, MPI_CHAR, peer, TAG_DATA, MPI_COMM_WORLD, &req[j]));
					CHECK(MPI_Isend(head, HEAD, MPI_CHAR, peer, TAG_HEAD, MPI_COMM_WORLD, &hreq[j]));
				}
				CHECK(MPI_Waitall(w, hreq, MPI_STATUSES_IGNORE));
				CHECK(MPI_Waitall(w, req, MPI_STATUSES_IGNORE));
#else
				CHECK(MPI_Recv(head, 4, MPI_CHAR, peer, TAG_HEAD, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
#endif
				CHECK(MPI_Send(head, 4, MPI_CHAR, peer, TAG_ACK, MPI_COMM_WORLD));
			}
		}
		t1 = MPI_Wtime();
		if (rank == 0) {
			printf("%-*ld%*.*f\n", SIZE_WIDTH, size, FIELD_WIDTH, PRECISION,
			       (double)size / 1e6 * iters * w / (t1 - t0));
			fflush(stdout);
		}
	}
#ifdef RMA
	if (rank == 0)
		CHECK(MPI_Win_unlock(1, win));
	CHECK(MPI_Barrier(MPI_COMM_WORLD));
	if (rank == 1)
		CHECK(MPI_Win_detach(win, r));
	CHECK(MPI_Win_free(&win));
#endif
	free(req);
	free(hreq);
	MPI_Finalize();
	return 0;
}
