package comm

import (
	"context"
	"errors"
	"time"

	"github.com/fibermpi/fibermpi/endpoint"
	"github.com/fibermpi/fibermpi/fiber"
)

// Request is a pending send or receive on a Comm[T]: a future of its Status.
// It belongs to the caller that started it (its waits use that caller's
// waiter): a fiber yields in Wait, a goroutine parks.
//
// Isend and Irecv return a new request; IsendInto and IrecvInto start the
// operation in one the caller provides, its zero value or a completed one,
// so that a loop of nonblocking operations allocates nothing.
type Request[T any] struct {
	r      *endpoint.Request // own, or a shared completed send
	own    endpoint.Request  // embedded: one allocation per request
	w      *fiber.Waiter
	size   int
	unpack func(got int) error // for a derived-layout receive
	hold   *state              // keeps a freed communicator's context until finish (state.go)

	finished bool
	st       Status
}

// finish computes the final status once (unpacking a layout receive).
func (q *Request[T]) finish() Status {
	q.settle()
	return q.st
}

// settle computes the final status into q.st once. It writes the fields
// one by one, and done reads the error alone: a Status built as a value
// and copied went through the stack as 8-byte stores read back as 16-byte
// loads, which the processor cannot forward (perf: a third of a
// completion's time in mbw_mr).
func (q *Request[T]) settle() {
	if q.finished {
		return
	}
	q.finished = true
	q.release()
	es := q.r.Status() // four fields: the compiler keeps it in registers
	st := &q.st
	st.Source, st.Tag, st.Bytes, st.Err = int(es.Source), int(es.Tag), es.Count, es.Err
	st.Count = elements(es.Count, q.size)
	checkWhole(st, q.size)
	if q.unpack != nil && !errors.Is(st.Err, endpoint.ErrCancelled) {
		if err := q.unpack(st.Bytes); err != nil && st.Err == nil {
			st.Err = err
		}
	}
}

// recycle readies q, new or complete, for another operation on c.
func (q *Request[T]) recycle(c *Comm[T]) error {
	if q == nil {
		return endpoint.ErrNilRequest
	}
	if q.r != nil {
		if !q.r.Test() {
			return endpoint.ErrRequestActive
		}
		if !q.finished {
			q.release()
		}
	}
	q.r, q.w, q.size, q.unpack = nil, c.ep.Waiter(), c.size, nil
	q.hold, q.finished, q.st = c.hold(), false, Status{}
	return nil
}

// release drops the request's reference on its communicator.
func (q *Request[T]) release() {
	if q.hold != nil { // most communicators cannot be freed: no call
		q.hold.release()
		q.hold = nil
	}
}

// Wait waits until the request completes and returns its status and the
// status' error. A nil request returns endpoint.ErrNilRequest.
func (q *Request[T]) Wait() (Status, error) {
	if q == nil {
		return Status{}, endpoint.ErrNilRequest
	}
	q.r.WaitFor(q.w)
	st := q.finish()
	return st, st.Err
}

// Test reports whether the request has completed, with its status if so. It
// never blocks.
func (q *Request[T]) Test() (Status, bool) {
	if q == nil || !q.r.Test() {
		return Status{}, false
	}
	return q.finish(), true
}

// WaitContext waits until the request completes or ctx ends, the way Wait
// does (a fiber yields, a goroutine parks), so a fiber may call it: unlike
// a select on ctx.Done(), it does not block the fiber's worker. When ctx
// ends first it returns ctx.Err() and the request stays pending (Cancel a
// receive to withdraw it). Call it from the caller that started the
// request, as Wait.
func (q *Request[T]) WaitContext(ctx context.Context) (Status, error) {
	if q == nil {
		return Status{}, endpoint.ErrNilRequest
	}
	if err := q.r.WaitForContext(q.w, ctx); err != nil && !q.r.Test() {
		return Status{}, err
	}
	st := q.finish()
	return st, st.Err
}

// WaitTimeout waits until the request completes or d passes, the way Wait
// does (a fiber yields, a goroutine parks). When d passes first it returns
// an error matching endpoint.ErrTimeout and the request stays pending.
func (q *Request[T]) WaitTimeout(d time.Duration) (Status, error) {
	if q == nil {
		return Status{}, endpoint.ErrNilRequest
	}
	if err := q.r.WaitTimeout(q.w, d); err != nil && !q.r.Test() {
		return Status{}, err
	}
	st := q.finish()
	return st, st.Err
}

// Done returns a channel that is closed when the request completes, for use
// in select by goroutines: a fiber that blocks on it (or on any channel)
// blocks its worker and every fiber of it — use Wait, WaitContext or
// WaitTimeout there (the stuck-fiber watchdog reports such a fiber).
// Requests that never call Done pay nothing for it.
func (q *Request[T]) Done() <-chan struct{} {
	if q == nil {
		return closedChan // a nil request is complete, as MPI_REQUEST_NULL
	}
	return q.r.Done()
}

// closedChan is the Done channel of a nil request.
var closedChan = func() chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}()

// Cancel withdraws a receive that has not matched a message; its status
// error is then endpoint.ErrCancelled. It reports whether it did. A receive
// that offered its buffer to a sender in another process (receiver-driven
// rendezvous) is withdrawn by asking the sender: Cancel reports true and the
// request completes later, cancelled or with the message if the sender had
// already taken the offer; Wait tells which, as in MPI.
func (q *Request[T]) Cancel() bool {
	if q == nil {
		return false
	}
	return q.r.Cancel()
}

// parts and done make Request[T] a Waitable.
func (q *Request[T]) parts() (*endpoint.Request, *fiber.Waiter, *CollRequest) {
	if q == nil {
		return nil, nil, nil
	}
	return q.r, q.w, nil
}
func (q *Request[T]) done() error {
	q.settle()
	return q.st.Err
}
