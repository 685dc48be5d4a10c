//go:build mpi

package mpi_test

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/fibermpi/fibermpi/rdma/mpi"
)

// TestMain finalizes MPI after the tests (the MPI launcher counts a process
// that exits without MPI_Finalize as failed), then looks for leaked
// goroutines: the MPI main thread ends with Finalize.
func TestMain(m *testing.M) {
	code := m.Run()
	if err := mpi.Finalize(); err != nil {
		fmt.Fprintln(os.Stderr, "MPI_Finalize:", err)
		code = 1
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}
