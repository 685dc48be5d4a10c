package endpoint_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fibermpi/fibermpi/endpoint"
	"github.com/fibermpi/fibermpi/fiber"
)

// each runs fn on k fiber ranks and prints the line each returns, in rank
// order, then the job's error if any.
func each(k int, fn func(ep *endpoint.Endpoint) (string, error)) {
	lines := make([]string, k)
	err := endpoint.Run(k, func(ep *endpoint.Endpoint) error {
		s, err := fn(ep)
		lines[ep.Rank()] = s // each rank its own slot; Run's return orders it before the reads
		return err
	})
	for _, s := range lines {
		if s != "" {
			fmt.Println(s)
		}
	}
	if err != nil {
		fmt.Println(err)
	}
}

// Rank and Size are the caller's rank in the world and the world's size.
func ExampleEndpoint_Rank() {
	each(3, func(ep *endpoint.Endpoint) (string, error) {
		return fmt.Sprintf("rank %d of %d", ep.Rank(), ep.Size()), nil
	})
	// Output:
	// rank 0 of 3
	// rank 1 of 3
	// rank 2 of 3
}

// Size is the number of ranks in the world.
func ExampleEndpoint_Size() {
	each(1, func(ep *endpoint.Endpoint) (string, error) {
		return fmt.Sprint("world of ", ep.Size(), ", communicator of ", ep.World().Size()), nil
	})
	// Output: world of 1, communicator of 1
}

// Comm.Size is the number of ranks of an endpoint-level communicator.
func ExampleComm_Size() {
	each(2, func(ep *endpoint.Endpoint) (string, error) {
		if ep.Rank() > 0 {
			return "", nil
		}
		return fmt.Sprint(ep.World().Size(), ep.Process().Size()), nil
	})
	// Output: 2 2
}

// World is the communicator of every rank; Send and Recv name ranks in it.
func ExampleEndpoint_World() {
	each(2, func(ep *endpoint.Endpoint) (string, error) {
		w := ep.World()
		if ep.Rank() == 0 {
			return "", ep.Send(w, 0, 1, 0, []byte{42})
		}
		b := make([]byte, 1)
		_, err := ep.Recv(w, 0, 0, b)
		return fmt.Sprint("got ", b[0], " on a world of ", w.Size()), err
	})
	// Output: got 42 on a world of 2
}

// Process is the communicator of the ranks in this OS process: with Run,
// all of them.
func ExampleEndpoint_Process() {
	each(3, func(ep *endpoint.Endpoint) (string, error) {
		if ep.Rank() != 0 {
			return "", nil
		}
		return fmt.Sprint("ranks in this process: ", ep.Process().Size()), nil
	})
	// Output: ranks in this process: 3
}

// Send copies the bytes out (eagerly) or waits for the receiver
// (rendezvous): either way the buffer may be reused when it returns. me is
// the sender's rank in the communicator.
func ExampleEndpoint_Send() {
	each(2, func(ep *endpoint.Endpoint) (string, error) {
		if ep.Rank() == 0 {
			buf := []byte("first")
			if err := ep.Send(ep.World(), 0, 1, 0, buf); err != nil {
				return "", err
			}
			copy(buf, "again") // safe: Send has returned
			return "", ep.Send(ep.World(), 0, 1, 0, buf)
		}
		a, b := make([]byte, 5), make([]byte, 5)
		if _, err := ep.Recv(ep.World(), 0, 0, a); err != nil {
			return "", err
		}
		_, err := ep.Recv(ep.World(), 0, 0, b)
		return fmt.Sprintf("%s %s", a, b), err // messages between a pair arrive in order
	})
	// Output: first again
}

// Recv into a buffer too short: the message is consumed, the buffer holds
// its first bytes, and the error is a *TruncateError.
func ExampleEndpoint_Recv() {
	each(2, func(ep *endpoint.Endpoint) (string, error) {
		if ep.Rank() == 0 {
			return "", ep.Send(ep.World(), 0, 1, 3, []byte("too long"))
		}
		buf := make([]byte, 3)
		st, err := ep.Recv(ep.World(), endpoint.AnySource, endpoint.AnyTag, buf)
		var te *endpoint.TruncateError
		return fmt.Sprintf("%q from %d tag %d; truncated %v (%d of %d bytes)",
			buf, st.Source, st.Tag, errors.As(err, &te), te.Have, te.Got), nil
	})
	// Output: "too" from 0 tag 3; truncated true (3 of 8 bytes)
}

// TruncateError matches ErrTruncate with errors.Is.
func ExampleTruncateError_Is() {
	var err error = &endpoint.TruncateError{Have: 4, Got: 10}
	fmt.Println(errors.Is(err, endpoint.ErrTruncate), err)
	// Output: true endpoint: message of 10 bytes truncated to the 4-byte receive buffer
}

// Ssend returns only once the receiver has matched the message.
func ExampleEndpoint_Ssend() {
	each(2, func(ep *endpoint.Endpoint) (string, error) {
		if ep.Rank() == 0 {
			err := ep.Ssend(ep.World(), 0, 1, 0, []byte{1})
			return "rank 1 has it", err
		}
		_, err := ep.Recv(ep.World(), 0, 0, make([]byte, 1))
		return "", err
	})
	// Output: rank 1 has it
}

// Isend and Irecv start transfers and return requests; post the receive,
// send, then wait for both.
func ExampleEndpoint_Isend() {
	each(2, func(ep *endpoint.Endpoint) (string, error) {
		other := 1 - ep.Rank()
		in := make([]byte, 1)
		rq, err := ep.Irecv(ep.World(), other, 0, in)
		if err != nil {
			return "", err
		}
		sq, err := ep.Isend(ep.World(), ep.Rank(), other, 0, []byte{byte('a' + ep.Rank())})
		if err != nil {
			return "", err
		}
		err = endpoint.WaitAll(ep.Waiter(), rq, sq)
		return fmt.Sprintf("rank %d got %c", ep.Rank(), in[0]), err
	})
	// Output:
	// rank 0 got b
	// rank 1 got a
}

// Irecv's request gives the Status once complete.
func ExampleEndpoint_Irecv() {
	each(2, func(ep *endpoint.Endpoint) (string, error) {
		if ep.Rank() == 1 {
			return "", ep.Send(ep.World(), 1, 0, 5, []byte("hi"))
		}
		q, err := ep.Irecv(ep.World(), endpoint.AnySource, endpoint.AnyTag, make([]byte, 8))
		if err != nil {
			return "", err
		}
		if err := ep.Wait(q); err != nil {
			return "", err
		}
		st := q.Status()
		return fmt.Sprintf("%d bytes from %d, tag %d", st.Count, st.Source, st.Tag), nil
	})
	// Output: 2 bytes from 1, tag 5
}

// Issend's request completes when the receive matches, not when the data
// is copied out.
func ExampleEndpoint_Issend() {
	each(2, func(ep *endpoint.Endpoint) (string, error) {
		w := ep.World()
		if ep.Rank() == 0 {
			q, err := ep.Issend(w, 0, 1, 0, []byte{7})
			if err != nil {
				return "", err
			}
			before := q.Test()
			if err := ep.Send(w, 0, 1, 1, nil); err != nil { // go ahead
				return "", err
			}
			return fmt.Sprint("matched before the go-ahead: ", before), ep.Wait(q)
		}
		if _, err := ep.Recv(w, 0, 1, nil); err != nil {
			return "", err
		}
		_, err := ep.Recv(w, 0, 0, make([]byte, 1))
		return "", err
	})
	// Output: matched before the go-ahead: false
}

// IrecvInto and IsendInto reuse requests the caller owns: no allocation
// per message in a loop.
func ExampleEndpoint_IrecvInto() {
	each(2, func(ep *endpoint.Endpoint) (string, error) {
		w := ep.World()
		var q endpoint.Request // reused every round
		b := make([]byte, 1)
		sum := 0
		for i := range 5 {
			if ep.Rank() == 0 {
				b[0] = byte(i)
				r, err := ep.IsendInto(&q, w, 0, 1, 0, b)
				if err == nil {
					err = ep.Wait(r)
				}
				if err != nil {
					return "", err
				}
				continue
			}
			if err := ep.IrecvInto(&q, w, 0, 0, b); err != nil {
				return "", err
			}
			if err := ep.Wait(&q); err != nil {
				return "", err
			}
			sum += int(b[0])
		}
		if ep.Rank() == 0 {
			return "", nil
		}
		return fmt.Sprint("sum ", sum), nil
	})
	// Output: sum 10
}

// IsendInto returns the request to wait on: r itself, or for an eager
// send a shared request that is already complete.
func ExampleEndpoint_IsendInto() {
	each(2, func(ep *endpoint.Endpoint) (string, error) {
		w := ep.World()
		if ep.Rank() == 1 {
			_, err := ep.Recv(w, 0, 0, make([]byte, 4))
			return "", err
		}
		var mine endpoint.Request
		r, err := ep.IsendInto(&mine, w, 0, 1, 0, []byte("tiny"))
		if err != nil {
			return "", err
		}
		return fmt.Sprint("eager: ", ep.Eager(4), ", complete at once: ", r.Test()), ep.Wait(r)
	})
	// Output: eager: true, complete at once: true
}

// Eager says which protocol a send of n bytes takes: small ones are copied
// into a packet (the send completes at once), large ones wait for the
// receiver. Options.EagerLimit sets the bound.
func ExampleEndpoint_Eager() {
	opts := endpoint.Options{EagerLimit: 1024}
	err := endpoint.RunWith(endpoint.ThreadSingle, opts, 1, func(ep *endpoint.Endpoint) error {
		fmt.Println(ep.Eager(1024), ep.Eager(1025))
		return nil
	})
	fmt.Println(err)
	// Output:
	// true false
	// <nil>
}

// Probe waits for a message without receiving it, to size the buffer.
func ExampleEndpoint_Probe() {
	each(2, func(ep *endpoint.Endpoint) (string, error) {
		if ep.Rank() == 1 {
			return "", ep.Send(ep.World(), 1, 0, 2, []byte("sized by Probe"))
		}
		st, err := ep.Probe(ep.World(), endpoint.AnySource, endpoint.AnyTag)
		if err != nil {
			return "", err
		}
		buf := make([]byte, st.Count)
		_, err = ep.Recv(ep.World(), int(st.Source), int(st.Tag), buf)
		return string(buf), err
	})
	// Output: sized by Probe
}

// Iprobe checks for a message without blocking; a polling fiber yields
// between looks.
func ExampleEndpoint_Iprobe() {
	each(2, func(ep *endpoint.Endpoint) (string, error) {
		if ep.Rank() == 1 {
			return "", ep.Ssend(ep.World(), 1, 0, 4, []byte{1, 2})
		}
		for {
			st, ok, err := ep.Iprobe(ep.World(), 1, 4)
			if err != nil {
				return "", err
			}
			if ok {
				_, err := ep.Recv(ep.World(), 1, 4, make([]byte, st.Count))
				return fmt.Sprintf("%d bytes waiting from rank %d, tag %d", st.Count, st.Source, st.Tag), err
			}
			ep.Waiter().Fiber().Yield() // not there yet: let the sender run
		}
	})
	// Output: 2 bytes waiting from rank 1, tag 4
}

// Wait waits for a request with the handle's caller and returns its
// status's error.
func ExampleEndpoint_Wait() {
	each(1, func(ep *endpoint.Endpoint) (string, error) {
		q, err := ep.Irecv(ep.World(), 0, 0, nil)
		if err != nil {
			return "", err
		}
		q.Cancel()
		err = ep.Wait(q)
		return fmt.Sprint(errors.Is(err, endpoint.ErrCancelled)), nil
	})
	// Output: true
}

// Waiter is how the caller blocks: a fiber's waiter yields it.
func ExampleEndpoint_Waiter() {
	each(1, func(ep *endpoint.Endpoint) (string, error) {
		return fmt.Sprint("fiber: ", ep.Waiter().Fiber() != nil), nil
	})
	// Output: fiber: true
}

// Request.Done is a channel closed on completion, for select in a
// goroutine rank.
func ExampleRequest_Done() {
	err := endpoint.RunGoroutines(2, func(ep *endpoint.Endpoint) error {
		if ep.Rank() == 1 {
			return ep.Send(ep.World(), 1, 0, 0, []byte("done"))
		}
		buf := make([]byte, 4)
		q, err := ep.Irecv(ep.World(), 1, 0, buf)
		if err != nil {
			return err
		}
		select {
		case <-q.Done():
			fmt.Println(string(buf), q.Status().Err)
		case <-time.After(time.Minute):
			fmt.Println("no message")
		}
		return nil
	})
	fmt.Println(err)
	// Output:
	// done <nil>
	// <nil>
}

// Request.WaitContext waits until the request completes or ctx ends; a
// goroutine rank parks.
func ExampleRequest_WaitContext() {
	err := endpoint.RunGoroutines(1, func(ep *endpoint.Endpoint) error {
		q, err := ep.Irecv(ep.World(), 0, 0, nil) // nobody sends
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		err = q.WaitContext(ctx)
		fmt.Println(errors.Is(err, context.DeadlineExceeded), q.Test())
		q.Cancel()
		return nil
	})
	fmt.Println(err)
	// Output:
	// true false
	// <nil>
}

// WaitForContext is WaitContext for a fiber: pass the caller's waiter.
func ExampleRequest_WaitForContext() {
	each(1, func(ep *endpoint.Endpoint) (string, error) {
		q, err := ep.Irecv(ep.World(), 0, 0, nil)
		if err != nil {
			return "", err
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		err = q.WaitForContext(ep.Waiter(), ctx)
		q.Cancel()
		return fmt.Sprint(errors.Is(err, context.Canceled)), nil
	})
	// Output: true
}

// WaitFor waits with a given waiter; the error is the status's.
func ExampleRequest_WaitFor() {
	each(2, func(ep *endpoint.Endpoint) (string, error) {
		if ep.Rank() == 0 {
			return "", ep.Send(ep.World(), 0, 1, 0, []byte{9})
		}
		b := make([]byte, 1)
		q, err := ep.Irecv(ep.World(), 0, 0, b)
		if err == nil {
			err = q.WaitFor(ep.Waiter())
		}
		return fmt.Sprint(b[0]), err
	})
	// Output: 9
}

// WaitTimeout gives up after d with ErrTimeout; the request stays pending.
func ExampleRequest_WaitTimeout() {
	each(1, func(ep *endpoint.Endpoint) (string, error) {
		q, err := ep.Irecv(ep.World(), 0, 0, nil)
		if err != nil {
			return "", err
		}
		err = q.WaitTimeout(ep.Waiter(), 5*time.Millisecond)
		return fmt.Sprint(errors.Is(err, endpoint.ErrTimeout), q.Cancel()), nil
	})
	// Output: true true
}

// Test reports completion without blocking; Status is final once it does.
func ExampleRequest_Test() {
	each(1, func(ep *endpoint.Endpoint) (string, error) {
		q, err := ep.Irecv(ep.World(), 0, 0, make([]byte, 2))
		if err != nil {
			return "", err
		}
		before := q.Test()
		if err := ep.Send(ep.World(), 0, 0, 0, []byte{1, 2}); err != nil { // to itself
			return "", err
		}
		if err := ep.Wait(q); err != nil {
			return "", err
		}
		return fmt.Sprint(before, q.Test(), q.Status().Count), nil
	})
	// Output: false true 2
}

// Status holds the source, tag, byte count and error of a completed
// receive.
func ExampleRequest_Status() {
	each(2, func(ep *endpoint.Endpoint) (string, error) {
		if ep.Rank() == 0 {
			return "", ep.Send(ep.World(), 0, 1, 11, []byte("abc"))
		}
		q, err := ep.Irecv(ep.World(), endpoint.AnySource, endpoint.AnyTag, make([]byte, 8))
		if err == nil {
			err = ep.Wait(q)
		}
		st := q.Status()
		return fmt.Sprintf("source %d tag %d count %d err %v", st.Source, st.Tag, st.Count, st.Err), err
	})
	// Output: source 0 tag 11 count 3 err <nil>
}

// Cancel withdraws a receive nobody matched; it completes with
// ErrCancelled. A send cannot be cancelled.
func ExampleRequest_Cancel() {
	each(1, func(ep *endpoint.Endpoint) (string, error) {
		q, err := ep.Irecv(ep.World(), 0, 99, nil)
		if err != nil {
			return "", err
		}
		ok := q.Cancel()
		return fmt.Sprint(ok, errors.Is(ep.Wait(q), endpoint.ErrCancelled)), nil
	})
	// Output: true true
}

// WaitAll waits for every request and returns the first error.
func ExampleWaitAll() {
	each(3, func(ep *endpoint.Endpoint) (string, error) {
		w := ep.World()
		if ep.Rank() != 0 {
			return "", ep.Send(w, ep.Rank(), 0, 0, []byte{byte(ep.Rank())})
		}
		got := make([]byte, 3)
		var reqs []*endpoint.Request
		for src := 1; src < 3; src++ {
			q, err := ep.Irecv(w, src, 0, got[src:src+1])
			if err != nil {
				return "", err
			}
			reqs = append(reqs, q)
		}
		err := endpoint.WaitAll(ep.Waiter(), reqs...)
		return fmt.Sprint(got), err
	})
	// Output: [0 1 2]
}

// WaitAny returns the index of a completed request: serve whichever peer
// speaks first.
func ExampleWaitAny() {
	each(3, func(ep *endpoint.Endpoint) (string, error) {
		w := ep.World()
		if ep.Rank() == 2 {
			return "", ep.Send(w, 2, 0, 0, []byte{2})
		}
		if ep.Rank() == 1 {
			return "", nil // never sends
		}
		a, _ := ep.Irecv(w, 1, 0, make([]byte, 1))
		b, err := ep.Irecv(w, 2, 0, make([]byte, 1))
		if err != nil {
			return "", err
		}
		i, err := endpoint.WaitAny(ep.Waiter(), a, b)
		a.Cancel()
		return fmt.Sprint("request ", i, " first"), err
	})
	// Output: request 1 first
}

// WaitAnyContext is WaitAny with a deadline: -1 and ctx's error when it
// ends first.
func ExampleWaitAnyContext() {
	each(1, func(ep *endpoint.Endpoint) (string, error) {
		q, err := ep.Irecv(ep.World(), 0, 0, nil)
		if err != nil {
			return "", err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
		defer cancel()
		i, err := endpoint.WaitAnyContext(ctx, ep.Waiter(), q)
		q.Cancel()
		return fmt.Sprint(i, errors.Is(err, context.DeadlineExceeded)), nil
	})
	// Output: -1 true
}

// WaitSome returns every index complete so far (at least one).
func ExampleWaitSome() {
	each(1, func(ep *endpoint.Endpoint) (string, error) {
		w := ep.World()
		a, _ := ep.Irecv(w, 0, 1, make([]byte, 1))
		b, _ := ep.Irecv(w, 0, 2, make([]byte, 1))
		c, err := ep.Irecv(w, 0, 3, make([]byte, 1))
		if err != nil {
			return "", err
		}
		for _, tag := range []int{1, 3} { // to itself, eager: complete before WaitSome
			if err := ep.Send(w, 0, 0, tag, []byte{0}); err != nil {
				return "", err
			}
		}
		idx, err := endpoint.WaitSome(ep.Waiter(), a, b, c)
		b.Cancel()
		return fmt.Sprint(idx), err
	})
	// Output: [0 2]
}

// TestAll reports, without blocking, whether every request is complete.
func ExampleTestAll() {
	each(1, func(ep *endpoint.Endpoint) (string, error) {
		q, err := ep.Irecv(ep.World(), 0, 0, nil)
		if err != nil {
			return "", err
		}
		before := endpoint.TestAll(q)
		if err := ep.Send(ep.World(), 0, 0, 0, nil); err != nil {
			return "", err
		}
		if err := ep.Wait(q); err != nil {
			return "", err
		}
		return fmt.Sprint(before, endpoint.TestAll(q)), nil
	})
	// Output: false true
}

// Abort ends the job in this rank's name; the others' calls fail with an
// *AbortError naming it.
func ExampleEndpoint_Abort() {
	each(2, func(ep *endpoint.Endpoint) (string, error) {
		if ep.Rank() == 0 {
			return "", ep.Abort(errors.New("giving up"))
		}
		_, err := ep.Recv(ep.World(), 0, 0, nil)
		var ae *endpoint.AbortError
		if !errors.As(err, &ae) {
			return "", err
		}
		return fmt.Sprint("rank 1 sees abort by rank ", ae.Rank), nil
	})
	// Output:
	// rank 1 sees abort by rank 0
	// rank 0: giving up
}

// Progress polls the transport once for the caller; a rank that waits by
// polling something other than a request calls it.
func ExampleEndpoint_Progress() {
	each(1, func(ep *endpoint.Endpoint) (string, error) {
		_ = ep.Progress() // whether it handled anything depends on timing
		return "polled", nil
	})
	// Output: polled
}

// Proc is the process an endpoint belongs to.
func ExampleEndpoint_Proc() {
	each(2, func(ep *endpoint.Endpoint) (string, error) {
		p := ep.Proc()
		return fmt.Sprintf("rank %d: process %d of %d, %v", ep.Rank(), p.Rank(), p.Procs(), p.ThreadLevel()), nil
	})
	// Output:
	// rank 0: process 0 of 1, THREAD_SINGLE
	// rank 1: process 0 of 1, THREAD_SINGLE
}

// Addr is the endpoint's transport address; Process.Owner says which
// process holds an address.
func ExampleEndpoint_Addr() {
	each(2, func(ep *endpoint.Endpoint) (string, error) {
		return fmt.Sprint("owner ", ep.Proc().Owner(ep.Addr()), ", in the world at ", ep.World().Addrs[ep.Rank()] == ep.Addr()), nil
	})
	// Output:
	// owner 0, in the world at true
	// owner 0, in the world at true
}

// Unregister ends a handle; calls through it then fail with
// ErrNotRegistered.
func ExampleEndpoint_Unregister() {
	p, err := endpoint.Init(endpoint.ThreadMultiple, endpoint.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	eps, err := p.CreateEndpoints(1)
	if err != nil {
		fmt.Println(err)
		return
	}
	h, err := eps[0].Register(fiber.NewGoroutineWaiter())
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(h.Unregister())
	fmt.Println(errors.Is(h.Send(h.World(), 0, 0, 0, nil), endpoint.ErrNotRegistered))
	fmt.Println(p.Finalize())
	// Output:
	// <nil>
	// true
	// <nil>
}

// Register binds an endpoint to its caller. At ThreadSingle an endpoint
// takes one caller: a second Register fails.
func ExampleEndpoint_Register() {
	p, err := endpoint.Init(endpoint.ThreadSingle, endpoint.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	eps, err := p.CreateEndpoints(1)
	if err != nil {
		fmt.Println(err)
		return
	}
	h, err := eps[0].Register(fiber.NewGoroutineWaiter())
	fmt.Println(h.Rank(), err)
	_, err = eps[0].Register(fiber.NewGoroutineWaiter())
	fmt.Println(err != nil)
	fmt.Println(h.Unregister(), p.Finalize())
	// Output:
	// 0 <nil>
	// true
	// <nil> <nil>
}

// RegisterHelper gives a goroutine a handle that acts for the rank: here
// it receives while the rank goes on.
func ExampleEndpoint_RegisterHelper() {
	each(2, func(ep *endpoint.Endpoint) (string, error) {
		if ep.Rank() == 0 {
			return "", ep.Send(ep.World(), 0, 1, 0, []byte("via helper"))
		}
		h, err := ep.RegisterHelper(fiber.NewGoroutineWaiter())
		if err != nil {
			return "", err
		}
		got := make(chan string, 1)
		go func() {
			defer h.Unregister()
			buf := make([]byte, 10)
			_, err := h.Recv(h.World(), 0, 0, buf)
			got <- fmt.Sprint(string(buf), " ", err)
		}()
		var s string
		for s == "" { // the rank's fiber must not block its worker on a channel
			select {
			case s = <-got:
			default:
				ep.Waiter().Fiber().Yield()
			}
		}
		return s, nil
	})
	// Output: via helper <nil>
}

// RunGoroutinesWith is RunGoroutines with a thread level and options.
func ExampleRunGoroutinesWith() {
	opts := endpoint.Options{EagerLimit: -1} // every send by rendezvous
	err := endpoint.RunGoroutinesWith(endpoint.ThreadMultiple, opts, 2, func(ep *endpoint.Endpoint) error {
		if ep.Rank() == 0 {
			fmt.Println(ep.Proc().ThreadLevel(), ep.Eager(1))
		}
		return nil
	})
	fmt.Println(err)
	// Output:
	// THREAD_MULTIPLE false
	// <nil>
}

// RunGoroutinesContext ends the job when ctx does.
func ExampleRunGoroutinesContext() {
	ctx, cancel := context.WithCancel(context.Background())
	err := endpoint.RunGoroutinesContext(ctx, endpoint.ThreadSingle, endpoint.Options{}, 2, func(ep *endpoint.Endpoint) error {
		if ep.Rank() == 0 {
			cancel() // e.g. the user pressed ^C
			return nil
		}
		_, err := ep.Recv(ep.World(), 0, 0, nil)
		return err
	})
	fmt.Println(errors.Is(err, context.Canceled))
	// Output: true
}
