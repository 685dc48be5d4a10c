/* ring_latency: the latency ping-pong with the MPI calls rdma/mpi makes,
 * in C, to tell the cost of that call pattern from the cost of the Go
 * around it. Each rank preposts a ring of RING receives of SLOT bytes from
 * MPI_ANY_SOURCE on one tag; a message is a 64-byte head plus size bytes,
 * sent with MPI_Isend, whose requests are retired RETIRE at a time by
 * MPI_Testsome; the receiver spins on MPI_Test of the ring's head, and
 * reposts that slot when it next waits, after its answer has gone, as the
 * transport's next poll does (before the answer, the MPI_Irecv would add to
 * every one-way time). osu_latency (latency.c) is the reference: MPI_Send
 * and MPI_Recv. Sizes stop at 8 KiB, as the transport's eager messages do
 * (larger ones travel by rendezvous Puts). */
#include "common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { HEAD = 64, RING = 64, RETIRE = 16, TAG = 1 };

/* repost posts slot i's receive (again). */
static void repost(char *ring, int slot, int i, MPI_Request *rreq)
{
	CHECK(MPI_Irecv(ring + (size_t)i * slot, slot, MPI_CHAR, MPI_ANY_SOURCE, TAG,
			MPI_COMM_WORLD, &rreq[i]));
}

int main(int argc, char **argv)
{
	struct options o;
	int rank;

	CHECK(MPI_Init(&argc, &argv));
	init_options(&o, argc, argv, KIND_LAT, 0, "", "osu_ring_latency");
	need_ranks(2, 1);
	CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
	/* The transport's slots hold a head and the largest eager payload. */
	long last = max_size(&o) < LARGE_MESSAGE_SIZE ? max_size(&o) : LARGE_MESSAGE_SIZE;
	int slot = HEAD + (int)LARGE_MESSAGE_SIZE;
	char *ring = alloc_buf((size_t)slot * RING);
	char *s = alloc_buf((size_t)slot * RETIRE);
	MPI_Request rreq[RING], sreq[RETIRE];
	int idx[RETIRE], active = 0, head = 0, peer = 1 - rank;
	int consumed = -1; /* the slot taken last, reposted at the next wait */

	for (int i = 0; i < RING; i++)
		repost(ring, slot, i, rreq);
	print_title("OSU MPI Latency Test, rdma/mpi's calls", 0);
	if (rank == 0)
		printf("%-*s%*s\n", SIZE_WIDTH, "# Size", FIELD_WIDTH, "Latency (us)");
	fflush(stdout);
	for (long size = first_size(&o); size <= last; size = next_size(size)) {
		int iters, warm, n = HEAD + (int)size;
		double t0 = 0, t1;

		counts(&o, size, &iters, &warm);
		memset(s, 'a', (size_t)slot * RETIRE);
		CHECK(MPI_Barrier(MPI_COMM_WORLD));
		for (int i = 0; i < warm + iters; i++) {
			if (rank == 0 && i == warm)
				t0 = MPI_Wtime();
			for (int turn = 0; turn < 2; turn++) {
				if ((turn == 0) == (rank == 0)) {
					if (active == RETIRE) {
						/* One MPI_Testsome a batch, as the transport's poll;
						 * a small send has completed by then, and the
						 * Waitall only keeps the ring of buffers simple. */
						int out;
						CHECK(MPI_Testsome(RETIRE, sreq, &out, idx, MPI_STATUSES_IGNORE));
						CHECK(MPI_Waitall(RETIRE, sreq, MPI_STATUSES_IGNORE));
						active = 0;
					}
					CHECK(MPI_Isend(s + (size_t)active * slot, n, MPI_CHAR, peer, TAG,
							MPI_COMM_WORLD, &sreq[active]));
					active++;
				} else {
					int done = 0;
					if (consumed >= 0)
						repost(ring, slot, consumed, rreq);
					while (!done)
						CHECK(MPI_Test(&rreq[head], &done, MPI_STATUS_IGNORE));
					consumed = head;
					head = (head + 1) % RING;
				}
			}
		}
		t1 = MPI_Wtime();
		if (rank == 0) {
			printf("%-*ld%*.*f\n", SIZE_WIDTH, size, FIELD_WIDTH, PRECISION,
			       (t1 - t0) * 1e6 / (2.0 * iters));
			fflush(stdout);
		}
	}
	CHECK(MPI_Waitall(active, sreq, MPI_STATUSES_IGNORE));
	if (consumed >= 0)
		repost(ring, slot, consumed, rreq);
	CHECK(MPI_Barrier(MPI_COMM_WORLD));
	for (int i = 0; i < RING; i++) {
		CHECK(MPI_Cancel(&rreq[i]));
		CHECK(MPI_Wait(&rreq[i], MPI_STATUS_IGNORE));
	}
	MPI_Finalize();
	return 0;
}
