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
	p p2p // T only types the buffers: the state is the same for every T
}

// p2p is a point-to-point request's state. It does not depend on the
// element type, so that the waits over many requests (WaitAll) and the
// reuse of a request run as plain code, which inlines, instead of a
// generic instance's, which goes through a dictionary.
type p2p struct {
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
func (q *p2p) finish() Status {
	q.settle()
	return q.st
}

// settle computes the final status into q.st once. It writes the fields
// one by one, and done reads the error alone: a Status built as a value
// and copied went through the stack as 8-byte stores read back as 16-byte
// loads, which the processor cannot forward (perf: a third of a
// completion's time in mbw_mr).
func (q *p2p) settle() {
	if !q.finished {
		q.settleNow()
	}
}

// settleNow is settle's work, apart so that settle inlines.
func (q *p2p) settleNow() {
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

// done settles q and returns its error.
func (q *p2p) done() error {
	q.settle()
	return q.st.Err
}

// recycle readies q, new or complete, for another operation of a
// communicator with elements of size bytes, by the caller of waiter w. The
// caller then sets hold (Comm.hold) if the operation may stay pending.
func (q *p2p) recycle(w *fiber.Waiter, size int) error {
	if q.r != nil {
		if !q.r.Test() {
			return endpoint.ErrRequestActive
		}
		if !q.finished {
			q.release()
		}
	}
	q.r, q.w, q.size, q.unpack = nil, w, size, nil
	q.hold, q.finished = nil, false // settle writes every field of st
	return nil
}

// release drops the request's reference on its communicator.
func (q *p2p) release() {
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
	q.p.r.WaitFor(q.p.w)
	st := q.p.finish()
	return st, st.Err
}

// Test reports whether the request has completed, with its status if so. It
// never blocks.
func (q *Request[T]) Test() (Status, bool) {
	if q == nil || !q.p.r.Test() {
		return Status{}, false
	}
	return q.p.finish(), true
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
	if err := q.p.r.WaitForContext(q.p.w, ctx); err != nil && !q.p.r.Test() {
		return Status{}, err
	}
	st := q.p.finish()
	return st, st.Err
}

// WaitTimeout waits until the request completes or d passes, the way Wait
// does (a fiber yields, a goroutine parks). When d passes first it returns
// an error matching endpoint.ErrTimeout and the request stays pending.
func (q *Request[T]) WaitTimeout(d time.Duration) (Status, error) {
	if q == nil {
		return Status{}, endpoint.ErrNilRequest
	}
	if err := q.p.r.WaitTimeout(q.p.w, d); err != nil && !q.p.r.Test() {
		return Status{}, err
	}
	st := q.p.finish()
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
	return q.p.r.Done()
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
	return q.p.r.Cancel()
}

// parts and done make Request[T] a Waitable.
func (q *Request[T]) parts() (*p2p, *CollRequest) {
	if q == nil {
		return nil, nil
	}
	return &q.p, nil
}
func (q *Request[T]) done() error { return q.p.done() }
