package comm

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/fibermpi/fibermpi/endpoint"
)

// Holes found by an independent acceptance run (issue 13, item 4): each
// once hung, crashed or answered wrongly.

// bounded runs fn and fails the test if it has not returned after a long
// while: a safety net against a hang, not a measurement.
func bounded(t *testing.T, what string, fn func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		return err
	case <-time.After(time.Minute):
		t.Fatalf("%s hangs", what)
		return nil
	}
}

// recovered turns a panic of fn into an error.
func recovered(fn func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("panic: %v", v)
		}
	}()
	return fn()
}

// TestFreedCommEveryCallFails: every call on a freed communicator fails
// with ErrFreed, wildcards included (an Irecv(AnySource) used to be
// accepted and its Cancel+Wait to panic; Recv(AnySource, AnyTag) hung).
func TestFreedCommEveryCallFails(t *testing.T) {
	err := bounded(t, "calls on a freed communicator", func() error {
		return endpoint.Run(2, func(ep *endpoint.Endpoint) error {
			w, err := World[int64](ep)
			if err != nil {
				return err
			}
			c, err := w.Dup()
			if err != nil {
				return err
			}
			view, err := As[byte](c) // shares the communicator
			if err != nil {
				return err
			}
			if err := c.Free(); err != nil {
				return err
			}
			buf := make([]int64, 4)
			calls := []struct {
				name string
				call func() error
			}{
				{"Iprobe(AnySource, AnyTag)", func() error { _, _, err := c.Iprobe(AnySource, AnyTag); return err }},
				{"Iprobe(0, 0)", func() error { _, _, err := c.Iprobe(0, 0); return err }},
				{"Irecv(AnySource)", func() error {
					q, err := c.Irecv(buf, AnySource, 0)
					if err == nil {
						q.Cancel()
						_, err = q.Wait()
						return fmt.Errorf("accepted (then Wait: %v)", err)
					}
					return err
				}},
				{"IrecvInto(AnySource, AnyTag)", func() error { var q Request[int64]; return c.IrecvInto(&q, buf, AnySource, AnyTag) }},
				{"Isend", func() error { _, err := c.Isend(buf, 1-c.Rank(), 0); return err }},
				{"Send", func() error { return c.Send(buf, 1-c.Rank(), 0) }},
				{"Ssend", func() error { return c.Ssend(buf, 1-c.Rank(), 0) }},
				{"Sendrecv", func() error {
					_, err := c.Sendrecv(buf, 1-c.Rank(), 0, buf, AnySource, AnyTag)
					return err
				}},
				{"Send on an As view", func() error { return view.Send([]byte{1}, 1-c.Rank(), 0) }},
				{"Barrier", c.Barrier},
				{"Dup", func() error { _, err := c.Dup(); return err }},
				{"Free again", c.Free},
				{"Recv(AnySource, AnyTag)", func() error { _, err := c.Recv(buf, AnySource, AnyTag); return err }},
				{"Probe(AnySource, AnyTag)", func() error { _, err := c.Probe(AnySource, AnyTag); return err }},
			}
			var errs []error
			for _, call := range calls {
				if err := recovered(call.call); !errors.Is(err, ErrFreed) {
					errs = append(errs, fmt.Errorf("%s on a freed communicator: %v, want ErrFreed", call.name, err))
				}
			}
			return errors.Join(errs...)
		})
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestPartialElement: a message that is not a whole number of elements of
// the receiving Comm's type is an error (it used to be Count 0, no error).
func TestPartialElement(t *testing.T) {
	err := bounded(t, "a 3-byte message into int64s", func() error {
		return endpoint.Run(2, func(ep *endpoint.Endpoint) error {
			c, err := World[int64](ep)
			if err != nil {
				return err
			}
			if c.Rank() == 0 {
				b, err := As[byte](c)
				if err != nil {
					return err
				}
				if err := b.Send([]byte{1, 2, 3}, 1, 0); err != nil {
					return err
				}
				return b.Send(make([]byte, 19), 1, 1)
			}
			st, err := c.Recv(make([]int64, 2), 0, 0)
			var pe *PartialError
			if !errors.As(err, &pe) || !errors.Is(err, ErrPartial) || pe.Bytes != 3 || pe.Size != 8 || st.Bytes != 3 || st.Count != 0 {
				return fmt.Errorf("Recv of 3 bytes into int64s: %+v, %v; want a *PartialError", st, err)
			}
			q, err := c.Irecv(make([]int64, 3), 0, 1)
			if err != nil {
				return err
			}
			if st, err := q.Wait(); !errors.Is(err, ErrPartial) || st.Count != 2 || st.Bytes != 19 {
				return fmt.Errorf("Wait for 19 bytes into int64s: %+v, %v; want ErrPartial, 2 whole elements", st, err)
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestNewChecksRank: New refuses a rank that is not the handle's.
func TestNewChecksRank(t *testing.T) {
	err := endpoint.Run(2, func(ep *endpoint.Endpoint) error {
		other := 1 - ep.Rank()
		if _, err := New[int](ep, ep.World(), other); !errors.Is(err, endpoint.ErrRank) {
			return fmt.Errorf("New as rank %d through rank %d's handle: %v, want ErrRank", other, ep.Rank(), err)
		}
		_, err := New[int](ep, ep.World(), ep.Rank())
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// collectiveErrs runs k ranks of fn on both kinds of rank, with a bound,
// and returns each rank's error (what fn returned).
func collectiveErrs(t *testing.T, k int, fn func(c *Comm[int]) error) [][]error {
	t.Helper()
	var out [][]error
	for _, goroutines := range []bool{false, true} {
		errs := make([]error, k)
		body := func(ep *endpoint.Endpoint) error {
			c, err := World[int](ep)
			if err != nil {
				return err
			}
			errs[c.Rank()] = recovered(func() error { return fn(c) })
			return nil
		}
		bounded(t, "the collective", func() error {
			if goroutines {
				return endpoint.RunGoroutinesWith(endpoint.ThreadSingle, endpoint.Options{}, k, body)
			}
			return endpoint.RunWith(endpoint.ThreadSingle, endpoint.Options{}, k, body)
		})
		out = append(out, errs)
	}
	return out
}

// TestCollectiveMismatchEveryRankFails: collectives whose inputs disagree
// across ranks end with an error at every rank, the documented one: the
// rank that finds the problem gets it (a *CountError or a *MismatchError),
// every other rank an *AbortError that wraps it — from the collective, or
// from its next call if it had finished it. They used to hang (Scatter with
// a short root buffer), or return nil on one side (Bcast, Alltoallv), or
// ErrTruncate where ErrMismatch was promised (Allreduce).
func TestCollectiveMismatchEveryRankFails(t *testing.T) {
	cases := []struct {
		name string
		want error
		fn   func(c *Comm[int]) error
	}{
		{"Scatter short root buffer", ErrCount, func(c *Comm[int]) error {
			send := make([]int, 5) // 3 ranks × 2 = 6 needed
			return c.Scatter(send, make([]int, 2), 0)
		}},
		{"Bcast lengths", ErrMismatch, func(c *Comm[int]) error {
			return c.Bcast(make([]int, []int{4, 3, 5}[c.Rank()]), 0)
		}},
		{"Alltoallv counts", ErrMismatch, func(c *Comm[int]) error {
			// Rank 0 sends 2 elements to rank 1, which expects 1.
			sc, rc := []int{1, 1, 1}, []int{1, 1, 1}
			if c.Rank() == 0 {
				sc[1] = 2
			}
			sd, rd := []int{0, 1, 3}, []int{0, 1, 2}
			return c.Alltoallv(make([]int, 4), sc, sd, make([]int, 3), rc, rd)
		}},
		{"Allreduce lengths", ErrMismatch, func(c *Comm[int]) error {
			n := []int{4, 3, 4}[c.Rank()]
			return c.Allreduce(make([]int, n), make([]int, n), Sum[int]())
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for mode, errs := range collectiveErrs(t, 3, func(c *Comm[int]) error {
				if err := tc.fn(c); err != nil {
					return err
				}
				return c.Barrier() // a rank that finished learns here
			}) {
				for r, err := range errs {
					if !errors.Is(err, tc.want) {
						t.Errorf("mode %d rank %d: %v, want an error matching %v", mode, r, err, tc.want)
					}
				}
			}
		})
	}
}
