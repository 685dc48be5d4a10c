/* The smallest MPI program: the reference of scripts/hydra-startup.sh. */
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank == 0) printf("hello from %d processes\n", size);
    MPI_Finalize();
    return 0;
}
