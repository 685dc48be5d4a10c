package comm

import (
	"context"
	"sync"

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
	ch  chan struct{} // closed at the end
	w   *fiber.Waiter // the caller's waiter
	st  *state        // the communicator reference, released at the end
	mu  sync.Mutex    // guards end, fns and err
	end bool
	fns []func()
	err error
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
	h := &handoff{ch: make(chan struct{}), w: q.s.x.ep.Waiter(), st: q.st}
	q.st = nil
	q.h = h
	s := q.s
	if s.done {
		h.finish(s.err)
		return h.ch
	}
	// From here the caller's engine forgets s, and s works through a copy
	// of its context with the helper's handle and an engine of its own.
	s.x.eng.remove(s)
	hw := fiber.NewGoroutineWaiter()
	helper, err := s.x.ep.RegisterHelper(hw)
	if err != nil {
		s.abort(err)
		h.finish(s.err)
		return h.ch
	}
	x := *s.x
	x.ep, x.eng = helper, &engine{active: []*sched{s}}
	s.x = &x
	go func() {
		err := s.finishAll()
		_ = helper.Unregister()
		h.finish(err)
	}()
	return h.ch
}

// finish records the collective's end: err, the channel, the waiting
// functions, the communicator reference.
func (h *handoff) finish(err error) {
	h.mu.Lock()
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

// remove drops s from the engine's collectives (Done handed it over).
func (e *engine) remove(s *sched) {
	for i, a := range e.active {
		if a == s {
			e.active = append(e.active[:i], e.active[i+1:]...)
			return
		}
	}
}

// pendingInto appends the engine's requests still in flight: what a wait
// of its caller must wake for so that its collectives keep moving.
func (e *engine) pendingInto(dst []*endpoint.Request) []*endpoint.Request {
	for _, a := range e.active {
		for _, r := range a.reqs {
			if !r.Test() {
				dst = append(dst, r)
			}
		}
	}
	return dst
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
	if q.h != nil {
		return q.h.waitContext(ctx)
	}
	if ctx.Done() == nil {
		return q.Wait()
	}
	s := q.s
	eng, w := s.x.eng, s.x.ep.Waiter()
	var pend []*endpoint.Request
	for {
		eng.poll()
		if s.done {
			q.finish()
			return s.err
		}
		pend = eng.pendingInto(pend[:0])
		if _, err := endpoint.WaitAnyContext(ctx, w, pend...); err != nil && ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// base, waiter, done and collective make *CollRequest a Waitable.
func (q *CollRequest) base() *endpoint.Request { return nil }
func (q *CollRequest) waiter() *fiber.Waiter {
	if q.h != nil {
		return q.h.w
	}
	return q.s.x.ep.Waiter()
}
func (q *CollRequest) done() error {
	if q.h != nil {
		_, err := q.h.test()
		return err
	}
	q.finish()
	return q.s.err
}
func (q *CollRequest) collective() *CollRequest { return q }

// isDone advances the collective without blocking and reports whether it
// has completed.
func (q *CollRequest) isDone() bool {
	ok, _ := q.Test()
	return ok
}
