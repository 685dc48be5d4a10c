//go:build invariants

package endpoint

import (
	"errors"
	"sync"
	"testing"

	"github.com/fibermpi/fibermpi/fiber"
	"github.com/fibermpi/fibermpi/internal/invariants"
)

// A handle used by a goroutine other than the one that registered it is
// refused in checking builds.
func TestInvariantsForeignGoroutine(t *testing.T) {
	p, eps := newJob(t, ThreadSingle, Options{Workers: 1}, 2)
	defer p.Finalize()
	h, err := eps[0].Register(fiber.NewGoroutineWaiter())
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error)
	go func() { errc <- h.Send(h.World(), 0, 1, 0, []byte{1}) }()
	if err := <-errc; !errors.Is(err, ErrNotRegistered) {
		t.Fatalf("send through another goroutine's handle: %v, want ErrNotRegistered", err)
	}
}

// Two callers inside a ThreadSerialized endpoint at the same time are
// caught: the second one panics with an invariants.Violation.
func TestInvariantsSerializedOverlap(t *testing.T) {
	p, eps := newJob(t, ThreadSerialized, Options{Workers: 1}, 2)
	defer p.Finalize()
	// Simulate a caller inside the endpoint, then enter with another.
	eps[0].c.busy.Add(1)
	defer eps[0].c.busy.Add(-1)
	var wg sync.WaitGroup
	var got any
	wg.Go(func() {
		defer func() { got = recover() }()
		h, err := eps[0].Register(fiber.NewGoroutineWaiter())
		if err != nil {
			t.Error(err)
			return
		}
		h.Isend(h.World(), 0, 1, 0, []byte{1})
	})
	wg.Wait()
	if _, ok := got.(invariants.Violation); !ok {
		t.Fatalf("overlapping callers: recovered %v, want an invariants.Violation", got)
	}
}
