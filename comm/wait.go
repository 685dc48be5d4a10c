package comm

import (
	"context"
	"time"

	"github.com/fibermpi/fibermpi/endpoint"
	"github.com/fibermpi/fibermpi/fiber"
)

// Waitable is any request of this package: a point-to-point *Request[T] of
// any element type or a nonblocking collective's *CollRequest. Each is a
// future: Done gives a channel for select (goroutines), and WaitAll,
// WaitAllContext, WaitAny, WaitAnyContext, WaitSome and TestAll take any
// mix of them.
//
// The interface is sealed (its other methods are unexported): a wait must
// yield a fiber instead of blocking its worker, which needs each request's
// own wake-up, and it must keep the caller's collectives moving.
type Waitable interface {
	// Done returns a channel closed when the request completes.
	Done() <-chan struct{}

	// parts returns a point-to-point request's state (else nil) and a
	// collective's *CollRequest (else nil): one call, for the loops over
	// many requests, which then work on the state directly.
	parts() (*p2p, *CollRequest)
	done() error // the final error, once complete
}

var (
	_ Waitable = (*Request[byte])(nil)
	_ Waitable = (*CollRequest)(nil)
)

// isNil reports whether q is no request at all.
func isNil(q Waitable) bool {
	if q == nil {
		return true
	}
	b, c := q.parts()
	return b == nil && c == nil
}

// complete reports, without blocking, whether q has completed (advancing a
// collective).
func complete(q Waitable) bool {
	b, c := q.parts()
	if c != nil {
		return c.isDone()
	}
	return b.r.Test()
}

// waiterOf returns the waiter of q's caller.
func waiterOf(q Waitable) *fiber.Waiter {
	b, c := q.parts()
	if c != nil {
		return c.w
	}
	return b.w
}

// WaitAll waits for every request (of any endpoints, element types and
// kinds) and returns nil if all succeeded, else a *WaitError with each
// request's error; each request's status stays with it (Request.Test). A
// nil request gives ErrNilRequest. A fiber yields, a goroutine parks, and
// the caller's pending collectives keep moving meanwhile. Waiting for
// requests that are all point-to-point allocates nothing when they succeed.
func WaitAll(reqs ...Waitable) error {
	return WaitAllContext(context.Background(), reqs...)
}

// WaitAllContext is WaitAll until ctx ends: then it returns ctx's error,
// and the requests that had not completed stay pending (Cancel a receive to
// withdraw it; a collective cannot be withdrawn).
func WaitAllContext(ctx context.Context, reqs ...Waitable) error {
	// First, requests that are all point-to-point and complete (a window
	// of eager sends, settled when they started; receives whose messages
	// came): one pass, which hands over to the general way at anything
	// else, before anything has waited. The general way: a check of every
	// request, the collectives' pass only when there are any, and the
	// waits, each request settled as it is found complete; one interface
	// call a request each.
	if ok, err := settledAll(reqs); ok {
		return err
	}
	colls := false
	for _, q := range reqs {
		if q == nil {
			return endpoint.ErrNilRequest
		}
		switch b, c := q.parts(); {
		case c != nil:
			colls = true
		case b == nil:
			return endpoint.ErrNilRequest
		}
	}
	bounded := ctx.Done() != nil
	// Collectives first: they need the caller to move on, and the
	// point-to-point requests complete on their own meanwhile.
	if colls {
		for _, q := range reqs {
			if _, c := q.parts(); c != nil {
				if !bounded {
					_ = c.Wait() // its error is collected below
				} else if c.WaitContext(ctx) != nil && ctx.Err() != nil && !c.isDone() {
					return ctx.Err()
				}
			}
		}
	}
	// Then each point-to-point request in turn, settled as soon as it is
	// complete (one pass).
	var errs waitErrs
	for i, q := range reqs {
		b, c := q.parts()
		var err error
		if c == nil {
			if !b.r.Test() {
				if bounded {
					_ = b.r.WaitForContext(b.w, ctx)
					if !b.r.Test() {
						return ctx.Err()
					}
				} else {
					b.r.WaitFor(b.w)
				}
			}
			err = b.done()
		} else {
			err = c.done()
		}
		errs.note(i, len(reqs), err)
	}
	return errs.err()
}

// waitErrs collects WaitAll's errors by request: nil while none failed.
type waitErrs []error

// note records err (if any) as request i's of n.
func (e *waitErrs) note(i, n int, err error) {
	if err != nil {
		if *e == nil {
			*e = make([]error, n)
		}
		(*e)[i] = err
	}
}

// err is WaitAll's error: nil, or a *WaitError with every request's.
func (e waitErrs) err() error {
	if e == nil {
		return nil
	}
	return &WaitError{Errs: e}
}

// settledAll settles reqs and reports true, with WaitAll's error, if they
// are all point-to-point and complete; otherwise it reports false, having
// only settled some complete ones (which settling again leaves alone).
func settledAll(reqs []Waitable) (bool, error) {
	var errs waitErrs
	for i, q := range reqs {
		if q == nil {
			return false, nil
		}
		b, _ := q.parts()
		if b == nil || !b.r.Test() {
			return false, nil
		}
		errs.note(i, len(reqs), b.done())
	}
	return true, errs.err()
}

// WaitAny waits until one request completes and returns its index and its
// error. Nil requests are skipped; with none left it returns −1 and
// ErrNilRequest. A fiber yields, a goroutine parks.
func WaitAny(reqs ...Waitable) (int, error) {
	return WaitAnyContext(context.Background(), reqs...)
}

// WaitAnyContext is WaitAny until ctx ends: then it returns −1 and ctx's
// error, and the requests stay pending.
func WaitAnyContext(ctx context.Context, reqs ...Waitable) (int, error) {
	var w *fiber.Waiter
	for _, q := range reqs {
		if !isNil(q) {
			w = waiterOf(q)
			break
		}
	}
	if w == nil {
		return -1, endpoint.ErrNilRequest
	}
	var pend []*endpoint.Request
	var engines []*engine
	for {
		for i, q := range reqs {
			if !isNil(q) && complete(q) {
				return i, q.done()
			}
		}
		// What to wake for: the point-to-point requests, every round in
		// flight of the collectives' engines (so that they all move), and
		// the end of any collective handed to its own goroutine.
		pend, engines = pend[:0], engines[:0]
		var handed []*handoff
		viaMemory := false // a collective through memory: look again soon
		for _, q := range reqs {
			if isNil(q) {
				continue
			}
			b, c := q.parts()
			switch {
			case c == nil:
				pend = append(pend, b.r)
			case c.h != nil && !c.h.keep:
				handed = append(handed, c.h)
			default:
				if e := c.eng; !containsEngine(engines, e) {
					engines = append(engines, e)
					var sh, rd bool
					pend, sh, rd = e.pendingInto(pend)
					viaMemory = viaMemory || sh || rd
				}
			}
		}
		wctx, cancel := ctx, context.CancelFunc(nil)
		if len(handed) > 0 {
			wctx, cancel = context.WithCancel(ctx)
			for _, h := range handed {
				h.notify(cancel)
			}
		}
		switch {
		case viaMemory:
			fiber.Sleep(w, 20*time.Microsecond)
		case len(pend) > 0 && wctx.Done() == nil:
			_, _ = endpoint.WaitAny(w, pend...)
		case len(pend) > 0:
			_, _ = endpoint.WaitAnyContext(wctx, w, pend...)
		default: // only handed collectives: until one ends (cancel)
			_ = new(fiber.Event).WaitContext(w, wctx)
		}
		if cancel != nil {
			cancel()
		}
		if ctx.Err() != nil {
			for i, q := range reqs {
				if !isNil(q) && complete(q) {
					return i, q.done()
				}
			}
			return -1, ctx.Err()
		}
	}
}

func containsEngine(es []*engine, e *engine) bool {
	for _, x := range es {
		if x == e {
			return true
		}
	}
	return false
}

// WaitSome waits until at least one request completes and returns the
// indices of all that have completed. Nil requests are skipped.
func WaitSome(reqs ...Waitable) ([]int, error) {
	if _, err := WaitAny(reqs...); err != nil && isNilErr(err, reqs) {
		return nil, err
	}
	var idx []int
	for i, q := range reqs {
		if !isNil(q) && complete(q) {
			q.done()
			idx = append(idx, i)
		}
	}
	return idx, nil
}

// isNilErr reports whether WaitAny's err means that every request was nil.
func isNilErr(err error, reqs []Waitable) bool {
	for _, q := range reqs {
		if !isNil(q) {
			return false
		}
	}
	return err == endpoint.ErrNilRequest
}

// TestAll reports whether every request has completed, without blocking
// (advancing the collectives among them). Nil requests count as complete.
func TestAll(reqs ...Waitable) bool {
	for _, q := range reqs {
		if !isNil(q) && !complete(q) {
			return false
		}
	}
	return true
}
