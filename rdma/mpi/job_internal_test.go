//go:build mpi

package mpi

import (
	"sync"
	"testing"

	"github.com/fibermpi/fibermpi/rdma/rdmatest"
)

// NewJob makes n transports in this process at once (New is collective),
// each reaching all others, standing for n processes, and closes them at
// the test's end. Exported for the tests of package mpi_test.
func NewJob(t testing.TB, n, endpoints int, cfg func(rank int) Config) []*Transport {
	t.Helper()
	ex := rdmatest.MemExchange(n)
	trs := make([]*Transport, n)
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
		wg.Go(func() { trs[r], errs[r] = New(c) })
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
