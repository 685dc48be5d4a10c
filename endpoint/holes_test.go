package endpoint

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/fibermpi/fibermpi/fiber"
)

// Holes found by an independent acceptance run (issue 13, item 4).

// within waits for ch with a generous bound: a safety net against a hang,
// not a measurement.
func within[T any](t *testing.T, what string, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(time.Minute):
		t.Fatalf("%s never happened", what)
		var zero T
		return zero
	}
}

// waitBlocked returns once every caller registered at p is blocked in a
// fibermpi call.
func waitBlocked(t *testing.T, p *Process) {
	t.Helper()
	for start := time.Now(); ; time.Sleep(time.Millisecond) {
		if _, ok := p.Deadlocked(); ok {
			return
		}
		if time.Since(start) > time.Minute {
			t.Fatal("the callers never blocked")
		}
	}
}

// TestFinalizeWakesBlockedCallers: Finalize makes a goroutine blocked in
// Recv return ErrFinalized (it used to stay parked forever, a leak), and a
// fiber blocked in Recv too, by an error return rather than a panic that
// the fiber's own recover could swallow.
func TestFinalizeWakesBlockedCallers(t *testing.T) {
	p, err := Init(ThreadSingle, Options{Workers: 1, Watch: Watch{Deadlock: -1}})
	if err != nil {
		t.Fatal(err)
	}
	eps, err := p.CreateEndpoints(2)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		err       error
		recovered any
	}
	gor, fib := make(chan result, 1), make(chan result, 1)
	go func() {
		h, err := eps[0].Register(fiber.NewGoroutineWaiter())
		if err != nil {
			gor <- result{err: err}
			return
		}
		_, err = h.Recv(h.World(), 1, 0, make([]byte, 8))
		gor <- result{err: err}
	}()
	err = p.Scheduler().Spawn(func(f *fiber.Fiber) {
		var res result
		defer func() { fib <- res }()
		defer func() { res.recovered = recover() }() // a user's own recover
		h, err := eps[1].Register(f.Waiter())
		if err != nil {
			res.err = err
			return
		}
		_, res.err = h.Recv(h.World(), 0, 0, make([]byte, 8))
	})
	if err != nil {
		t.Fatal(err)
	}
	waitBlocked(t, p)
	if err := p.Finalize(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		ch   chan result
	}{{"goroutine", gor}, {"fiber", fib}} {
		r := within(t, "the "+c.name+"'s Recv returning", c.ch)
		if !errors.Is(r.err, ErrFinalized) || r.recovered != nil {
			t.Errorf("%s blocked in Recv at Finalize: err %v, recovered %v; want ErrFinalized and no panic", c.name, r.err, r.recovered)
		}
	}
}

// TestRunGoroutinesPanic: a rank's panic is an error naming the rank, with
// its stack, in both kinds of Run (RunGoroutines used to re-panic and kill
// the process), and it ends the job: the rank waiting for the panicked one
// returns an *AbortError naming it.
func TestRunGoroutinesPanic(t *testing.T) {
	for _, mode := range runModes {
		t.Run(mode.name, func(t *testing.T) {
			var waiterErr error
			err := mode.run(3, func(ep *Endpoint) error {
				switch ep.Rank() {
				case 1:
					panic(fmt.Sprintf("rank %d gives up", ep.Rank()))
				case 2:
					_, waiterErr = ep.Recv(ep.World(), 1, 0, make([]byte, 8))
					return waiterErr
				}
				return nil
			})
			var pe *PanicError
			if !errors.As(err, &pe) || pe.Rank != 1 || pe.Value != "rank 1 gives up" || len(pe.Stack) == 0 {
				t.Fatalf("Run: %v; want the *PanicError of rank 1", err)
			}
			var ae *AbortError
			if !errors.As(waiterErr, &ae) || ae.Rank != 1 || !errors.As(waiterErr, &pe) {
				t.Fatalf("rank 2 waiting for rank 1: %v; want an *AbortError naming rank 1", waiterErr)
			}
		})
	}
}

// TestInitBadWorkers: a bad fiber configuration is ErrOptions, as
// documented (it used to be only fiber.ErrBadConfig).
func TestInitBadWorkers(t *testing.T) {
	_, err := Init(ThreadSingle, Options{Workers: -3})
	if !errors.Is(err, ErrOptions) || !errors.Is(err, fiber.ErrBadConfig) {
		t.Fatalf("Init with Workers -3: %v, want ErrOptions (wrapping fiber.ErrBadConfig)", err)
	}
}

// runModes are the two kinds of Run, which must behave the same.
var runModes = []struct {
	name string
	run  func(k int, fn func(*Endpoint) error) error
	ctx  func(ctx context.Context, k int, fn func(*Endpoint) error) error
}{
	{"fibers", func(k int, fn func(*Endpoint) error) error {
		return RunWith(ThreadSingle, Options{}, k, fn)
	}, func(ctx context.Context, k int, fn func(*Endpoint) error) error {
		return RunContext(ctx, ThreadSingle, Options{}, k, fn)
	}},
	{"goroutines", func(k int, fn func(*Endpoint) error) error {
		return RunGoroutinesWith(ThreadSingle, Options{}, k, fn)
	}, func(ctx context.Context, k int, fn func(*Endpoint) error) error {
		return RunGoroutinesContext(ctx, ThreadSingle, Options{}, k, fn)
	}},
}
