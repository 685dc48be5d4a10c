package endpoint

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/fibermpi/fibermpi/fiber"
	"github.com/fibermpi/fibermpi/rdma/inproc"
	"github.com/fibermpi/fibermpi/rdma/rdmatest"
)

var errBoom = errors.New("boom")

// TestFirstErrorEndsTheJob: a rank's error ends the job; the ranks blocked
// waiting for it (in Recv, in a rendezvous Ssend) return an *AbortError
// naming it and wrapping its error; Run returns that error first and
// nothing else. Fibers and goroutines alike, in process and as between
// processes.
func TestFirstErrorEndsTheJob(t *testing.T) {
	transports := []struct {
		name string
		opts func() Options
	}{
		{"inproc", func() Options { return Options{} }},
		{"remote", func() Options { return Options{Transport: rdmatest.HideLocal(inproc.New())} }},
	}
	for _, mode := range runModes {
		for _, tr := range transports {
			t.Run(mode.name+"/"+tr.name, func(t *testing.T) {
				errs := make([]error, 4)
				body := func(ep *Endpoint) error {
					w := ep.World()
					switch ep.Rank() {
					case 0:
						return errBoom
					case 1:
						_, errs[1] = ep.Recv(w, 0, 0, make([]byte, 8))
					case 2:
						errs[2] = ep.Ssend(w, 2, 3, 5, make([]byte, 64<<10))
					case 3:
						_, errs[3] = ep.Recv(w, 0, 1, make([]byte, 8))
					}
					if err := ep.Send(w, ep.Rank(), 0, 0, []byte{1}); !errors.Is(err, ErrAborted) {
						return fmt.Errorf("a call after the job's end: %v", err)
					}
					return errs[ep.Rank()]
				}
				var err error
				if mode.name == "fibers" {
					err = RunWith(ThreadSingle, tr.opts(), 4, body)
				} else {
					err = RunGoroutinesWith(ThreadSingle, tr.opts(), 4, body)
				}
				var re *RankError
				if !errors.As(err, &re) || re.Rank != 0 || !errors.Is(err, errBoom) || errors.Is(err, ErrAborted) {
					t.Fatalf("Run: %v; want rank 0's error alone", err)
				}
				if got := err.Error(); got != "rank 0: boom" {
					t.Errorf("Run's error reads %q, want %q", got, "rank 0: boom")
				}
				for r := 1; r < 4; r++ {
					var ae *AbortError
					if !errors.As(errs[r], &ae) || ae.Rank != 0 || !errors.Is(errs[r], errBoom) {
						t.Errorf("rank %d: %v; want an *AbortError naming rank 0", r, errs[r])
					}
				}
			})
		}
	}
}

// TestRunModesAgree: Run and RunGoroutines give the same error, for a rank's
// error and for a rank's panic.
func TestRunModesAgree(t *testing.T) {
	bodies := map[string]func(ep *Endpoint) error{
		"error": func(ep *Endpoint) error {
			if ep.Rank() == 2 {
				return errBoom
			}
			_, err := ep.Recv(ep.World(), 2, 0, nil)
			return err
		},
		"panic": func(ep *Endpoint) error {
			if ep.Rank() == 2 {
				panic(errBoom)
			}
			_, err := ep.Recv(ep.World(), 2, 0, nil)
			return err
		},
	}
	for name, body := range bodies {
		t.Run(name, func(t *testing.T) {
			var got []string
			for _, mode := range runModes {
				err := mode.run(3, body)
				if !errors.Is(err, errBoom) || errors.Is(err, ErrAborted) {
					t.Fatalf("%s: %v", mode.name, err)
				}
				got = append(got, err.Error())
			}
			if got[0] != got[1] {
				t.Fatalf("Run says %q, RunGoroutines %q", got[0], got[1])
			}
			if !strings.HasPrefix(got[0], "rank 2") {
				t.Fatalf("the error %q does not start with the rank", got[0])
			}
		})
	}
}

// TestIndependentErrorsJoined: errors that are not consequences of the
// first come after it.
func TestIndependentErrorsJoined(t *testing.T) {
	errOther := errors.New("other")
	for _, mode := range runModes {
		err := mode.run(2, func(ep *Endpoint) error {
			if ep.Rank() == 0 {
				return errBoom
			}
			return errOther // without any call: it never saw the abort
		})
		if !errors.Is(err, errBoom) || !errors.Is(err, errOther) {
			t.Fatalf("%s: %v; want both errors", mode.name, err)
		}
	}
}

// TestEndpointAbort: a rank aborts on purpose; every other rank's blocked
// and later calls return an *AbortError naming it.
func TestEndpointAbort(t *testing.T) {
	for _, mode := range runModes {
		t.Run(mode.name, func(t *testing.T) {
			errs := make([]error, 3)
			err := mode.run(3, func(ep *Endpoint) error {
				if ep.Rank() == 1 {
					return ep.Abort(errBoom)
				}
				_, errs[ep.Rank()] = ep.Recv(ep.World(), AnySource, AnyTag, nil)
				if _, err := ep.Irecv(ep.World(), 1, 0, nil); !errors.Is(err, ErrAborted) {
					return fmt.Errorf("Irecv after the abort: %v", err)
				}
				return errs[ep.Rank()]
			})
			var re *RankError
			if !errors.As(err, &re) || re.Rank != 1 || !errors.Is(err, errBoom) {
				t.Fatalf("Run: %v; want rank 1's abort", err)
			}
			for _, r := range []int{0, 2} {
				var ae *AbortError
				if !errors.As(errs[r], &ae) || ae.Rank != 1 || !errors.Is(errs[r], errBoom) {
					t.Errorf("rank %d: %v", r, errs[r])
				}
			}
		})
	}
}

// TestProcessAbort: Abort from outside the ranks (the launcher's report of
// another process lost) wakes every blocked caller with an error wrapping
// the cause and naming no rank, and fails every later call.
func TestProcessAbort(t *testing.T) {
	p, eps := newJob(t, ThreadSingle, Options{Workers: 1, Watch: Watch{Deadlock: -1}}, 3)
	errLost := errors.New("process 3 lost")
	results := make(chan error, 3)
	for i, ep := range eps {
		rank := func(w *fiber.Waiter) {
			h, err := ep.Register(w)
			if err != nil {
				results <- err
				return
			}
			defer h.Unregister()
			var werr error
			switch i {
			case 0: // a goroutine in Recv
				_, werr = h.Recv(h.World(), 1, 0, nil)
			case 1: // a fiber in Wait
				var r *Request
				if r, werr = h.Irecv(h.World(), AnySource, 3, nil); werr == nil {
					werr = h.Wait(r)
				}
			case 2: // a fiber in WaitAny
				var r *Request
				if r, werr = h.Irecv(h.World(), 0, 3, nil); werr == nil {
					_, werr = WaitAny(h.Waiter(), r)
				}
			}
			if _, err := h.Isend(h.World(), i, 0, 0, nil); !errors.Is(err, errLost) {
				werr = fmt.Errorf("Isend after Abort: %v (wait: %w)", err, werr)
			}
			results <- werr
		}
		if i == 0 {
			go rank(fiber.NewGoroutineWaiter())
			continue
		}
		if err := p.Scheduler().Spawn(func(f *fiber.Fiber) { rank(f.Waiter()) }); err != nil {
			t.Fatal(err)
		}
	}
	waitBlocked(t, p)
	p.Abort(errLost)
	for range 3 {
		err := within(t, "a blocked call returning", results)
		var ae *AbortError
		if !errors.As(err, &ae) || ae.Rank != -1 || !errors.Is(err, errLost) {
			t.Errorf("after Abort: %v", err)
		}
	}
	if err := p.Finalize(); err != nil {
		t.Fatal(err)
	}
}

// TestRunContext: the job ends when its context does; ranks blocked see
// the cause, and so does Run.
func TestRunContext(t *testing.T) {
	for _, mode := range runModes {
		t.Run(mode.name, func(t *testing.T) {
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			errStop := errors.New("enough")
			errs := make([]error, 2)
			err := mode.ctx(ctx, 2, func(ep *Endpoint) error {
				if ep.Rank() == 1 {
					cancel(errStop)
				}
				_, errs[ep.Rank()] = ep.Recv(ep.World(), AnySource, 0, nil)
				return errs[ep.Rank()]
			})
			if !errors.Is(err, errStop) {
				t.Fatalf("RunContext: %v, want the context's cause", err)
			}
			for r, e := range errs {
				if !errors.Is(e, ErrAborted) || !errors.Is(e, errStop) {
					t.Errorf("rank %d: %v", r, e)
				}
			}
			// A context that ended before: no rank runs.
			ran := false
			if err := mode.ctx(ctx, 2, func(*Endpoint) error { ran = true; return nil }); !errors.Is(err, context.Canceled) || ran {
				t.Fatalf("RunContext with a done context: %v (ranks ran: %v)", err, ran)
			}
		})
	}
}

// TestGoexitEndsTheJob: a rank that calls runtime.Goexit (t.FailNow) ends
// the job like an error: the rank waiting for it is not left hanging.
func TestGoexitEndsTheJob(t *testing.T) {
	var waiter error
	err := RunGoroutinesWith(ThreadSingle, Options{}, 2, func(ep *Endpoint) error {
		if ep.Rank() == 0 {
			goexit()
		}
		_, waiter = ep.Recv(ep.World(), 0, 0, nil)
		return waiter
	})
	if !errors.Is(err, errGoexit) || !errors.Is(waiter, errGoexit) {
		t.Fatalf("Run: %v; waiter: %v", err, waiter)
	}
}

func goexit() { runtime.Goexit() }
