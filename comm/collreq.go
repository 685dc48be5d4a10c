package comm

import (
	"context"
	"sync"
	"time"

	"github.com/fibermpi/fibermpi/endpoint"
	"github.com/fibermpi/fibermpi/fiber"
)

// A nonblocking collective advances round by round, and a round starts
// only when its caller looks at the collective (Test, Wait, any wait of
// the same caller): the caller is its progress. Done is the exception: a
// select on a channel cannot make progress, so the first Done hands the
// collective to a goroutine of its own, which runs its remaining rounds
// through a helper handle of the caller's endpoint
// (endpoint.Endpoint.RegisterHelper) and closes the channel at the end.

// handoff is a collective handed to its progress goroutine by Done. The
// goroutine alone touches the schedule until it completes; the caller
// learns of the end through the channel, or through a function run at the
// end (notify), and only then reads err.
type handoff struct {
	ch   chan struct{} // closed at the end
	w    *fiber.Waiter // the caller's waiter
	keep bool          // the caller progresses it still (see Done)
	st   *state        // the communicator reference, released at the end
	mu   sync.Mutex    // guards end, fns and err
	end  bool
	fns  []func()
	err  error
}

// Done returns a channel that is closed when the collective completes, for
// select in a goroutine. The first call hands the collective's remaining
// rounds to a goroutine that runs them (see the top of collreq.go), so the
// collective completes without its caller; Test, Wait and WaitContext
// still tell its error. Below endpoint.ThreadMultiple that goroutine acts
// as the caller: until the channel is closed (or Wait returns), the caller
// makes no other call through its endpoint. A fiber must not select on
// the channel (that blocks its worker and every fiber of it): fibers use
// Wait or WaitContext. A nil request's channel is closed.
func (q *CollRequest) Done() <-chan struct{} {
	if q == nil {
		return closedChan
	}
	if q.h != nil {
		return q.h.ch
	}
	h := &handoff{ch: make(chan struct{}), w: q.w, st: q.st}
	q.st = nil
	q.h = h
	op := q.op
	if op.finished() {
		h.finish(op.failure())
		return h.ch
	}
	rb, ok := op.(rebinder)
	if !ok {
		// A collective in two levels (twolevel.go) builds its stages as
		// it goes, on the caller's handle: it stays with the caller, and
		// the channel closes when the caller's Test or Wait (or any wait
		// of the caller) finds it complete.
		h.keep = true
		return h.ch
	}
	// From here the caller's engine forgets op, which works through the
	// helper's handle and an engine of its own.
	q.eng.remove(op)
	helper, err := rb.handle().RegisterHelper(fiber.NewGoroutineWaiter())
	if err != nil {
		h.finish(err)
		return h.ch
	}
	rb.rebind(helper)
	eng := &engine{active: []collOp{op}}
	go func() {
		eng.wait(helper.Waiter(), op)
		_ = helper.Unregister()
		h.finish(op.failure())
	}()
	return h.ch
}

// rebinder is a collective that can move to a helper's handle: a message
// schedule, or a collective through memory.
type rebinder interface {
	handle() *endpoint.Endpoint // the caller's
	rebind(ep *endpoint.Endpoint)
}

func (s *sched) handle() *endpoint.Endpoint   { return s.x.ep }
func (x *shmBase) handle() *endpoint.Endpoint { return x.ep }

// rebind moves a schedule to ep: its later rounds go through ep, and its
// waits use ep's waiter.
func (s *sched) rebind(ep *endpoint.Endpoint) {
	x := *s.x
	x.ep = ep
	s.x = &x
}

// rebind moves a collective through memory to ep's caller.
func (x *shmBase) rebind(ep *endpoint.Endpoint) {
	x.ep, x.proc, x.w = ep, ep.Proc(), ep.Waiter()
}

// finish records the collective's end: err, the channel, the waiting
// functions, the communicator reference.
func (h *handoff) finish(err error) {
	h.mu.Lock()
	if h.end {
		h.mu.Unlock()
		return
	}
	h.end, h.err = true, err
	fns := h.fns
	h.fns = nil
	h.mu.Unlock()
	h.st.release()
	close(h.ch)
	for _, fn := range fns {
		fn()
	}
}

// notify runs fn when the collective ends (at once if it has).
func (h *handoff) notify(fn func()) {
	h.mu.Lock()
	if !h.end {
		h.fns = append(h.fns, fn)
		h.mu.Unlock()
		return
	}
	h.mu.Unlock()
	fn()
}

// test reports whether the collective has ended, and its error if so.
func (h *handoff) test() (bool, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.end, h.err
}

// wait waits for the end with the caller's waiter (a fiber yields).
func (h *handoff) wait() error {
	_ = h.waitContext(context.Background())
	_, err := h.test()
	return err
}

// waitContext waits for the end or ctx's, whichever comes first.
func (h *handoff) waitContext(ctx context.Context) error {
	if end, err := h.test(); end {
		return err
	}
	ev := new(fiber.Event)
	h.notify(func() { ev.Signal() })
	if ctx.Done() == nil {
		ev.Wait(h.w)
	} else if err := ev.WaitContext(h.w, ctx); err != nil {
		return err
	}
	_, err := h.test()
	return err
}

// remove drops op from the engine's collectives (Done handed it over).
func (e *engine) remove(op collOp) {
	for i, a := range e.active {
		if a == op {
			e.active = append(e.active[:i], e.active[i+1:]...)
			return
		}
	}
}

// WaitContext waits until the collective completes, as Wait does (a fiber
// yields, a goroutine parks), or until ctx ends: then it returns ctx's
// error and the collective stays pending — a collective cannot be
// withdrawn, since the other ranks take part in it: wait again, or end the
// job (Comm.Abort, endpoint.RunContext). Meanwhile the caller's other
// collectives keep moving, as in Wait.
func (q *CollRequest) WaitContext(ctx context.Context) error {
	if q == nil {
		return endpoint.ErrNilRequest
	}
	if q.h != nil && !q.h.keep {
		return q.h.waitContext(ctx)
	}
	if ctx.Done() == nil {
		return q.Wait()
	}
	// Poll and wait with a limit: a fiber yields between looks, and the
	// wait wakes for any of the caller's collectives' messages.
	var pend []*endpoint.Request
	for {
		q.eng.poll()
		if q.op.finished() {
			return q.complete()
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		pend, shm, ready := q.eng.pendingInto(pend[:0])
		switch {
		case ready:
		case len(pend) > 0 && !shm:
			_, _ = endpoint.WaitAnyContext(ctx, q.w, pend...)
		default:
			fiber.Sleep(q.w, 20*time.Microsecond) // memory collectives: look again soon
		}
	}
}

// complete ends a completed collective at its caller: the reference, the
// handed-over channel (keep), the error.
func (q *CollRequest) complete() error {
	q.finish()
	return q.op.failure()
}

// pendingInto appends the requests in flight of the engine's message
// schedules, and says whether a collective through memory is pending
// (shm) and whether one may progress at once (ready).
func (e *engine) pendingInto(dst []*endpoint.Request) (out []*endpoint.Request, shm, ready bool) {
	for _, a := range e.active {
		var sh, rd bool
		dst, sh, rd = a.prepare(dst)
		if sh {
			a.unprepare()
		}
		shm, ready = shm || sh, ready || rd
	}
	return dst, shm, ready
}

// parts and done make *CollRequest a Waitable.
func (q *CollRequest) done() error {
	if q.h != nil && !q.h.keep {
		_, err := q.h.test()
		return err
	}
	return q.complete()
}
func (q *CollRequest) parts() (*p2p, *CollRequest) {
	if q == nil {
		return nil, nil
	}
	return nil, q
}

// isDone advances the collective without blocking and reports whether it
// has completed.
func (q *CollRequest) isDone() bool {
	ok, _ := q.Test()
	return ok
}
