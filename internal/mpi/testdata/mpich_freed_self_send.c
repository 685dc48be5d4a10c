// MPICH 4.0.2 (ch4:ucx): an MPI_Isend to this process itself that nothing
// has matched yet, freed with MPI_Request_free, then more receives posted.
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
	int prov; MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &prov);
	int me; MPI_Comm_rank(MPI_COMM_WORLD, &me);
	static char out[64], in[64 * 100];
	MPI_Request s, r[100], q;
	MPI_Isend(out, 64, MPI_BYTE, me, 0, MPI_COMM_WORLD, &s);
	int flag = 0;
	MPI_Test(&s, &flag, MPI_STATUS_IGNORE);
	printf("self send complete before any receive: %d\n", flag);
	if (!flag) MPI_Request_free(&s); // legal: the send completes when received
	for (int i = 0; i < 100; i++) {
		MPI_Irecv(in + 64 * i, 64, MPI_BYTE, MPI_ANY_SOURCE, 1 + i, MPI_COMM_WORLD, &r[i]);
	}
	printf("posted 100 receives on other tags\n");
	MPI_Irecv(in, 64, MPI_BYTE, MPI_ANY_SOURCE, 0, MPI_COMM_WORLD, &q);
	MPI_Wait(&q, MPI_STATUS_IGNORE);
	printf("the freed send's message was received\n");
	MPI_Finalize();
	return 0;
}
