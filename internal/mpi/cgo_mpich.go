//go:build mpi && !ompi && !mpi_nopkgconfig

package mpi

// MPICH's MPI_STATUSES_IGNORE is the address 1, which GCC's
// -Wstringop-overflow takes for an array of size 0 in MPI_Testsome.

// #cgo pkg-config: mpich
// #cgo CFLAGS: -Wno-stringop-overflow
import "C"
