package endpoint

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/fibermpi/fibermpi/fiber"
)

// TestWaitsWithLimitsYield: a fiber rank's WaitContext, WaitForContext and
// WaitTimeout yield to the worker's other fibers. Here the rank that ends
// the first wait runs on the same (only) worker: a wait that blocked the
// worker would never end.
func TestWaitsWithLimitsYield(t *testing.T) {
	if !currentWorks() {
		t.Skip("fiber.Current cannot tell fibers from goroutines on this system")
	}
	for _, progress := range []ProgressMode{ProgressIdle, ProgressCaller} {
		ctx, cancel := context.WithCancel(context.Background())
		err := RunWith(ThreadSingle, Options{Workers: 1, Progress: progress}, 2, func(ep *Endpoint) error {
			w := ep.World()
			if ep.Rank() == 1 {
				cancel() // runs only if rank 0's wait yielded
				return ep.Send(w, 1, 0, 2, []byte{7})
			}
			r, err := ep.Irecv(w, 1, 1, nil) // never sent
			if err != nil {
				return err
			}
			if err := r.WaitContext(ctx); !errors.Is(err, context.Canceled) {
				return fmt.Errorf("WaitContext: %v", err)
			}
			if err := r.WaitForContext(ep.Waiter(), ctx); !errors.Is(err, context.Canceled) {
				return fmt.Errorf("WaitForContext on an ended context: %v", err)
			}
			if err := r.WaitTimeout(ep.Waiter(), time.Millisecond); !errors.Is(err, ErrTimeout) {
				return fmt.Errorf("WaitTimeout: %v", err)
			}
			if !r.Cancel() {
				return errors.New("Cancel")
			}
			buf := make([]byte, 1)
			r, err = ep.Irecv(w, 1, 2, buf)
			if err != nil {
				return err
			}
			if err := r.WaitTimeout(ep.Waiter(), time.Hour); err != nil || buf[0] != 7 {
				return fmt.Errorf("WaitTimeout for a sent message: %v %v", err, buf)
			}
			return nil
		})
		cancel()
		if err != nil {
			t.Fatalf("%v: %v", progress, err)
		}
	}
}

// currentWorks reports whether fiber.Current tells fibers apart here.
func currentWorks() bool {
	s, err := fiber.New(fiber.Config{Workers: 1})
	if err != nil {
		return false
	}
	defer s.Close()
	ok := false
	_ = s.Spawn(func(me *fiber.Fiber) { ok = fiber.Current() == me })
	_ = s.Wait()
	return ok
}
