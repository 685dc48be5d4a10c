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

// A request reused as soon as it completed, while its completer is still
// finishing: the completer is held between its Signal and the rest while
// the receiver reuses the request and takes the new receive's Done channel,
// which must stay open once the completer is released.
func TestReuseDuringCompletion(t *testing.T) {
	paused, release := make(chan *Request, 1), make(chan struct{})
	completeHook = func(r *Request) {
		if r.kind == reqRecv {
			paused <- r
			<-release
		}
	}
	defer func() { completeHook = nil }()
	p, eps := newJob(t, ThreadMultiple, Options{Workers: 1}, 2)
	defer p.Finalize()
	h0, err := eps[0].Register(fiber.NewGoroutineWaiter())
	if err != nil {
		t.Fatal(err)
	}
	var r Request
	if err := h0.IrecvInto(&r, h0.World(), 1, 0, make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	sent := make(chan error, 1)
	go func() {
		h1, err := eps[1].Register(fiber.NewGoroutineWaiter())
		if err == nil {
			err = h1.Send(h1.World(), 1, 0, 0, []byte{7})
		}
		sent <- err
	}()
	<-paused // the send's completion of r is between Signal and the rest
	if !r.Test() {
		t.Fatal("paused before the Signal")
	}
	if err := h0.IrecvInto(&r, h0.World(), 1, 1, make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	ch := r.Done()
	close(release)
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch:
		t.Fatal("the reused request's Done channel was closed by the earlier completion")
	default:
	}
	if !r.Cancel() {
		t.Fatal("the reused receive could not be cancelled")
	}
	<-ch
}
