package comm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fibermpi/fibermpi/endpoint"
	"github.com/fibermpi/fibermpi/fiber"
)

// The run-never-hangs scenarios at the comm level: collectives in the
// deadlock report, waits with a limit from fibers.

// TestDeadlockPartialCollective: two ranks enter a Barrier on a Dup of the
// world, the third waits in a Recv from rank 0 instead. The report says who
// is in the collective, on which communicator, and who waits for whom.
func TestDeadlockPartialCollective(t *testing.T) {
	for _, goroutines := range []bool{false, true} {
		opts := endpoint.Options{Watch: endpoint.Watch{Deadlock: 20 * time.Millisecond}}
		body := func(ep *endpoint.Endpoint) error {
			w, err := World[int](ep)
			if err != nil {
				return err
			}
			d, err := w.Dup()
			if err != nil {
				return err
			}
			if w.Rank() == 2 {
				_, err := w.Recv(make([]int, 1), 0, 5)
				return err
			}
			return d.Barrier()
		}
		var err error
		if goroutines {
			err = endpoint.RunGoroutinesWith(endpoint.ThreadSingle, opts, 3, body)
		} else {
			err = endpoint.RunWith(endpoint.ThreadSingle, opts, 3, body)
		}
		var d *endpoint.DeadlockError
		if !errors.As(err, &d) {
			t.Fatalf("goroutines=%v: %v, want a deadlock", goroutines, err)
		}
		msg := d.Error()
		for _, s := range []string{
			"rank 2 in Recv: receive from rank 0, tag 5, on the world",
			"in a collective on the communicator of context",
		} {
			if !strings.Contains(msg, s) {
				t.Errorf("the report lacks %q:\n%s", s, msg)
			}
		}
		// Rank 0 and 1 wait in the barrier (through memory: the ranks
		// share the process) for rank 2, the one that has not begun it.
		for _, w := range d.Waiting[:2] {
			if w.Call != "a collective" || len(w.Ops) != 1 || !w.Ops[0].Collective || w.Ops[0].PeerRank != 2 {
				t.Errorf("rank %d waits for %+v, want a collective's wait for rank 2 alone", w.Rank, w.Ops)
			}
		}
		if len(d.Cycle) == 0 {
			t.Errorf("no wait-for cycle in\n%s", msg)
		}
	}
}

// TestFiberWaitsWithLimits: Request.WaitTimeout and WaitContext from a
// fiber rank yield: the other rank, on the same worker, runs meanwhile
// (with a blocking wait it could not, and the test would hang).
func TestFiberWaitsWithLimits(t *testing.T) {
	err := endpoint.RunWith(endpoint.ThreadSingle, endpoint.Options{Workers: 1}, 2, func(ep *endpoint.Endpoint) error {
		c, err := World[int](ep)
		if err != nil {
			return err
		}
		if c.Rank() == 1 {
			return c.Send([]int{42}, 0, 0)
		}
		buf := make([]int, 1)
		q, err := c.Irecv(buf, 1, 1) // tag 1: never sent
		if err != nil {
			return err
		}
		if _, err := q.WaitTimeout(time.Millisecond); !errors.Is(err, endpoint.ErrTimeout) {
			return fmt.Errorf("WaitTimeout: %v", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		defer cancel()
		if _, err := q.WaitContext(ctx); !errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("WaitContext: %v", err)
		}
		if !q.Cancel() {
			return errors.New("Cancel failed")
		}
		// Rank 1 ran on this worker while rank 0 waited: its message is here.
		if _, ok, err := c.Iprobe(1, 0); !ok || err != nil {
			return fmt.Errorf("rank 1's message has not arrived (%v): the waits did not yield", err)
		}
		q, err = c.Irecv(buf, 1, 0)
		if err != nil {
			return err
		}
		st, err := q.WaitTimeout(time.Hour)
		if err != nil || buf[0] != 42 || st.Count != 1 {
			return fmt.Errorf("WaitTimeout for a message that is there: %+v %v", st, err)
		}
		fiber.Sleep(c.Waiter(), time.Millisecond)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
