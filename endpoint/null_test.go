package endpoint

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/fibermpi/fibermpi/fiber"
)

// TestProcNull: every send to ProcNull and every receive or probe of it
// completes at once, on fibers and goroutines, with MPI's status; a bad tag
// is still an error; a real message after them is unaffected.
func TestProcNull(t *testing.T) {
	for _, run := range []struct {
		name string
		fn   func(ThreadLevel, Options, int, func(*Endpoint) error) error
	}{{"fibers", RunWith}, {"goroutines", RunGoroutinesWith}} {
		t.Run(run.name, func(t *testing.T) {
			err := run.fn(ThreadSingle, Options{}, 2, func(ep *Endpoint) error {
				w := ep.World()
				me := ep.Rank()
				if err := ep.Send(w, me, ProcNull, 3, []byte{1, 2}); err != nil {
					return fmt.Errorf("Send to ProcNull: %v", err)
				}
				if err := ep.Ssend(w, me, ProcNull, 3, make([]byte, 1<<20)); err != nil {
					return fmt.Errorf("Ssend to ProcNull: %v", err)
				}
				r, err := ep.Isend(w, me, ProcNull, 3, []byte{1})
				if err != nil || !r.Test() {
					return fmt.Errorf("Isend to ProcNull: %v, complete %v", err, err == nil && r.Test())
				}
				buf := []byte{9, 9}
				st, err := ep.Recv(w, ProcNull, AnyTag, buf)
				want := Status{Source: ProcNull, Tag: int32(AnyTag)}
				if err != nil || st != want || buf[0] != 9 {
					return fmt.Errorf("Recv from ProcNull: %+v %v, buffer %v", st, err, buf)
				}
				r, err = ep.Irecv(w, ProcNull, 5, buf)
				if err != nil || !r.Test() || r.Status() != want {
					return fmt.Errorf("Irecv from ProcNull: %v", err)
				}
				if r.Cancel() {
					return errors.New("Cancel of a completed ProcNull receive reported true")
				}
				var q Request
				if err := ep.IrecvInto(&q, w, ProcNull, 5, buf); err != nil || !q.Test() {
					return fmt.Errorf("IrecvInto from ProcNull: %v", err)
				}
				if st, ok, err := ep.Iprobe(w, ProcNull, 1); !ok || err != nil || st != want {
					return fmt.Errorf("Iprobe of ProcNull: %+v %v %v", st, ok, err)
				}
				if st, err := ep.Probe(w, ProcNull, 1); err != nil || st != want {
					return fmt.Errorf("Probe of ProcNull: %+v %v", st, err)
				}
				if err := ep.Send(w, me, ProcNull, -5, nil); !errors.Is(err, ErrTag) {
					return fmt.Errorf("Send to ProcNull with tag -5: %v, want ErrTag", err)
				}
				if _, err := ep.Irecv(w, ProcNull, -5, nil); !errors.Is(err, ErrTag) {
					return fmt.Errorf("Irecv from ProcNull with tag -5: %v, want ErrTag", err)
				}
				if err := ep.Send(w, me, -3, 0, nil); !errors.Is(err, ErrRank) {
					return fmt.Errorf("Send to rank -3: %v, want ErrRank", err)
				}
				// The real exchange still works after all that.
				other := 1 - me
				if err := ep.Send(w, me, other, 0, []byte{byte(me)}); err != nil {
					return err
				}
				st, err = ep.Recv(w, other, 0, buf)
				if err != nil || int(st.Source) != other || buf[0] != byte(other) {
					return fmt.Errorf("Recv from %d: %+v %v %v", other, st, err, buf)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestWaitAnyContext: WaitAnyContext returns a completed request's index,
// or the context's error with the requests still pending; it yields a
// fiber (the rank that completes the wait shares the one worker).
func TestWaitAnyContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	err := RunWith(ThreadSingle, Options{Workers: 1}, 2, func(ep *Endpoint) error {
		w := ep.World()
		if ep.Rank() == 1 {
			cancel() // runs only once rank 0 has yielded
			return ep.Send(w, 1, 0, 2, []byte{4})
		}
		a, err := ep.Irecv(w, 1, 1, nil) // never sent
		if err != nil {
			return err
		}
		buf := make([]byte, 1)
		b, err := ep.Irecv(w, 1, 2, buf)
		if err != nil {
			return err
		}
		// b may complete before or after ctx ends; wait for it with a
		// context that does not end.
		i, err := WaitAnyContext(context.Background(), ep.Waiter(), nil, a, b)
		if i != 2 || err != nil || buf[0] != 4 {
			return fmt.Errorf("WaitAnyContext = %d, %v (buffer %v), want 2, nil", i, err, buf)
		}
		<-ctx.Done() // ended by rank 1 already
		if i, err := WaitAnyContext(ctx, ep.Waiter(), a); i != -1 || !errors.Is(err, context.Canceled) {
			return fmt.Errorf("WaitAnyContext on an ended context = %d, %v", i, err)
		}
		if a.Test() {
			return errors.New("the unsent receive completed")
		}
		tctx, tcancel := context.WithTimeout(context.Background(), time.Millisecond)
		defer tcancel()
		if i, err := WaitAnyContext(tctx, ep.Waiter(), a); i != -1 || !errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("WaitAnyContext past a deadline = %d, %v", i, err)
		}
		if i, err := WaitAnyContext(ctx, ep.Waiter(), nil, nil); i != -1 || !errors.Is(err, ErrNilRequest) {
			return fmt.Errorf("WaitAnyContext of nil requests = %d, %v", i, err)
		}
		a.Cancel()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestRegisterHelper: a helper handle of a ThreadSingle endpoint registers
// beside its caller (Register would not), sends from its own goroutine,
// and Unregister leaves the caller's registration alone.
func TestRegisterHelper(t *testing.T) {
	err := Run(2, func(ep *Endpoint) error {
		w := ep.World()
		if ep.Rank() == 1 {
			buf := make([]byte, 1)
			_, err := ep.Recv(w, 0, 0, buf)
			if err == nil && buf[0] != 42 {
				err = fmt.Errorf("got %v", buf)
			}
			return err
		}
		if _, err := ep.Register(fiber.NewGoroutineWaiter()); !errors.Is(err, ErrThreadLevel) {
			return fmt.Errorf("second Register at ThreadSingle: %v", err)
		}
		h, err := ep.RegisterHelper(fiber.NewGoroutineWaiter())
		if err != nil {
			return err
		}
		done := make(chan error, 1)
		go func() {
			err := h.Send(w, 0, 1, 0, []byte{42})
			done <- errors.Join(err, h.Unregister())
		}()
		var e fiber.Event
		go func() { e.Signal() }()
		e.Wait(ep.Waiter())
		for {
			select {
			case err := <-done:
				if err != nil {
					return err
				}
				if err := h.Unregister(); !errors.Is(err, ErrNotRegistered) {
					return fmt.Errorf("second Unregister: %v", err)
				}
				var unreg Endpoint
				if _, err := unreg.RegisterHelper(fiber.NewGoroutineWaiter()); !errors.Is(err, ErrNotRegistered) {
					return fmt.Errorf("RegisterHelper of an unregistered handle: %v", err)
				}
				return nil
			default:
				fiber.Sleep(ep.Waiter(), time.Millisecond)
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
}
