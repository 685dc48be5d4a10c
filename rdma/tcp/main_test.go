package tcp_test

import (
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/fibermpi/fibermpi/rdma/rdmatest"
	"github.com/fibermpi/fibermpi/rdma/tcp"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newJob makes n transports on loopback at once (New is collective), each
// reaching all others, and closes them at the test's end.
func newJob(t testing.TB, n, endpoints int, cfg func(rank int) tcp.Config) []*tcp.Transport {
	t.Helper()
	ex := rdmatest.MemExchange(n)
	trs := make([]*tcp.Transport, n)
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
		wg.Go(func() { trs[r], errs[r] = tcp.New(c) })
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
