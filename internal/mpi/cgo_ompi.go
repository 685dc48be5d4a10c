//go:build mpi && ompi && !mpi_nopkgconfig

package mpi

// #cgo pkg-config: ompi
import "C"
