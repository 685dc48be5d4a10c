//go:build linux

package jobtest

import (
	"sync"
	"testing"
	"time"

	"github.com/fibermpi/fibermpi/endpoint"
	"github.com/fibermpi/fibermpi/fiber"
)

// ShmPair makes a job of two processes simulated in this OS process, joined
// by shared memory (rdma/shm) as two processes of a node are, with
// caller-driven progress, for benchmarks of the whole path of a message in
// one goroutine: it returns a world handle of each process, registered by
// the calling goroutine, and the cleanup that finalizes both.
func ShmPair(tb testing.TB) (from, to *endpoint.Endpoint, done func()) {
	tb.Helper()
	boots := NewMemJob(2)
	ps := make([]*endpoint.Process, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i := range ps {
		wg.Go(func() {
			ps[i], errs[i] = endpoint.Init(endpoint.ThreadSingle, endpoint.Options{
				Workers: 1, Bootstrap: boots[i], Progress: endpoint.ProgressCaller,
				Fiber: fiber.Config{SleepAfter: 10 * time.Microsecond},
			})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			tb.Fatalf("process %d: %v", i, err)
		}
	}
	var hs [2]*endpoint.Endpoint
	for i, p := range ps {
		h, err := p.World().Register(fiber.NewGoroutineWaiter())
		if err != nil {
			tb.Fatal(err)
		}
		hs[i] = h
	}
	return hs[0], hs[1], func() {
		for _, h := range hs {
			_ = h.Unregister()
		}
		var wg sync.WaitGroup
		for _, p := range ps {
			wg.Go(func() { _ = p.Finalize() })
		}
		wg.Wait()
	}
}
