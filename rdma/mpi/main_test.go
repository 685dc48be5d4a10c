//go:build mpi

package mpi_test

import (
	"fmt"
	"os"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/fibermpi/fibermpi/rdma/mpi"
	"github.com/fibermpi/fibermpi/rdma/rdmatest"
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

// newJob makes n transports in this process at once (New is collective),
// each reaching all others, standing for n processes, and closes them at
// the test's end.
func newJob(t testing.TB, n, endpoints int, cfg func(rank int) mpi.Config) []*mpi.Transport {
	t.Helper()
	ex := rdmatest.MemExchange(n)
	trs := make([]*mpi.Transport, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		c := cfg(r)
		c.Exchange = ex[r]
		c.Layout = rdmatest.LayoutFor(n, endpoints)
		for p := range n {
			if p != r {
				c.Peers = append(c.Peers, p)
			}
		}
		wg.Go(func() { trs[r], errs[r] = mpi.New(c) })
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, tr := range trs {
			if tr != nil {
				_ = tr.Close()
			}
		}
	})
	for r, err := range errs {
		if err != nil {
			t.Fatalf("New at rank %d: %v", r, err)
		}
	}
	return trs
}
