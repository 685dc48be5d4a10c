package endpoint_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/fibermpi/fibermpi/endpoint"
	"github.com/fibermpi/fibermpi/fiber"
)

// Run starts k ranks as fibers in this process; each gets its registered
// endpoint. Rank 0 sends bytes to rank 1, which prints them.
func ExampleRun() {
	err := endpoint.Run(2, func(ep *endpoint.Endpoint) error {
		w := ep.World()
		if ep.Rank() == 0 {
			return ep.Send(w, 0, 1, 7, []byte("hello, rank 1"))
		}
		buf := make([]byte, 64)
		st, err := ep.Recv(w, 0, 7, buf)
		if err != nil {
			return err
		}
		fmt.Printf("rank %d got %q from rank %d (tag %d)\n", ep.Rank(), buf[:st.Count], st.Source, st.Tag)
		return nil
	})
	if err != nil {
		fmt.Println(err)
	}
	// Output: rank 1 got "hello, rank 1" from rank 0 (tag 7)
}

// Init and CreateEndpoints give endpoints to goroutines too; each goroutine
// registers with its endpoint before calling through it.
func ExampleProcess_CreateEndpoints() {
	p, err := endpoint.Init(endpoint.ThreadMultiple, endpoint.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	eps, err := p.CreateEndpoints(2)
	if err != nil {
		fmt.Println(err)
		return
	}
	done := make(chan error)
	go func() {
		h, err := eps[1].Register(fiber.NewGoroutineWaiter())
		if err != nil {
			done <- err
			return
		}
		buf := make([]byte, 5)
		_, err = h.Recv(h.World(), 0, 0, buf)
		fmt.Printf("goroutine rank 1 got %q\n", buf)
		done <- err
	}()
	h, err := eps[0].Register(fiber.NewGoroutineWaiter())
	if err == nil {
		err = h.Send(h.World(), 0, 1, 0, []byte("hello"))
	}
	if err == nil {
		err = <-done
	}
	fmt.Println(err, p.Finalize())
	// Output:
	// goroutine rank 1 got "hello"
	// <nil> <nil>
}

// The first rank to fail ends the job, and it does so the same way whether
// the ranks are fibers (Run, RunWith) or goroutines (RunGoroutines): the
// ranks waiting for it get an *AbortError that names it, so they return
// at once, and Run returns its failure first — its error, or its panic as
// a *PanicError (with the stack).
func ExampleRunWith_errors() {
	runs := []struct {
		name string
		run  func(endpoint.ThreadLevel, endpoint.Options, int, func(*endpoint.Endpoint) error) error
	}{{"RunWith", endpoint.RunWith}, {"RunGoroutines", endpoint.RunGoroutinesWith}}
	for _, r := range runs {
		for _, how := range []string{"error", "panic"} {
			var waiting error
			err := r.run(endpoint.ThreadSingle, endpoint.Options{}, 3, func(ep *endpoint.Endpoint) error {
				switch ep.Rank() {
				case 1:
					if how == "panic" {
						panic("index out of range")
					}
					return errors.New("bad input")
				case 2: // waits for a message rank 1 never sends
					_, waiting = ep.Recv(ep.World(), 1, 0, nil)
					return waiting
				}
				return nil
			})
			var ae *endpoint.AbortError
			errors.As(waiting, &ae)
			fmt.Printf("%s, %s: %v (rank 2's Recv: aborted by rank %d)\n", r.name, how, err, ae.Rank)
		}
	}
	// Output:
	// RunWith, error: rank 1: bad input (rank 2's Recv: aborted by rank 1)
	// RunWith, panic: rank 1 panicked: index out of range (rank 2's Recv: aborted by rank 1)
	// RunGoroutines, error: rank 1: bad input (rank 2's Recv: aborted by rank 1)
	// RunGoroutines, panic: rank 1 panicked: index out of range (rank 2's Recv: aborted by rank 1)
}

// Two ranks that both receive first wait forever in MPI. Here the job
// fails with a *DeadlockError (after Options.Watch.Deadlock, 1.5 s by
// default) that says who waits for whom.
func ExampleRun_deadlock() {
	opts := endpoint.Options{Watch: endpoint.Watch{Deadlock: 100 * time.Millisecond}}
	err := endpoint.RunWith(endpoint.ThreadSingle, opts, 2, func(ep *endpoint.Endpoint) error {
		_, err := ep.Recv(ep.World(), 1-ep.Rank(), 0, make([]byte, 8))
		return err // an *AbortError wrapping the deadlock
	})
	var d *endpoint.DeadlockError
	if errors.As(err, &d) {
		for _, w := range d.Waiting {
			fmt.Printf("rank %d in %s: %v\n", w.Rank, w.Call, w.Ops[0])
		}
		fmt.Println("cycle:", d.Cycle)
	}
	// Output:
	// rank 0 in Recv: receive from rank 1, tag 0, on the world (8 bytes)
	// rank 1 in Recv: receive from rank 0, tag 0, on the world (8 bytes)
	// cycle: [0 1 0]
}
