package endpoint

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/fibermpi/fibermpi/fiber"
	"github.com/fibermpi/fibermpi/packet"
)

// Waits with a limit, for fibers and goroutines alike: they yield a fiber
// (a select on a timer or on ctx.Done() would block its worker) and park a
// goroutine. A caller in one of them is not counted as blocked by the
// deadlock watchdog: its wait ends on its own.

// WaitTimeout waits for r with w, as WaitFor does, for at most d. If d
// passes first it returns an error matching ErrTimeout and r stays pending
// (Cancel a receive to withdraw it). A fiber yields, a goroutine parks.
func (r *Request) WaitTimeout(w *fiber.Waiter, d time.Duration) error {
	if r.ev.Done() {
		return r.status.Err
	}
	r.noteTimed(w)
	if r.ep.p.opts.Progress == ProgressCaller {
		deadline := time.Now().Add(d)
		if !r.pollWhile(w, func() bool { return time.Now().Before(deadline) }) {
			return fmt.Errorf("%w after %v", ErrTimeout, d)
		}
		return r.status.Err
	}
	if !r.ev.WaitTimeout(w, d) {
		return fmt.Errorf("%w after %v", ErrTimeout, d)
	}
	return r.status.Err
}

// WaitForContext waits for r with w, as WaitFor does, until ctx ends; then
// it returns ctx's error and r stays pending (Cancel a receive to withdraw
// it). A fiber yields, a goroutine parks: unlike WaitContext, it may be
// called from a fiber.
func (r *Request) WaitForContext(w *fiber.Waiter, ctx context.Context) error {
	if r.ev.Done() {
		return r.status.Err
	}
	r.noteTimed(w)
	if r.ep.p.opts.Progress == ProgressCaller {
		if !r.pollWhile(w, func() bool { return ctx.Err() == nil }) {
			return ctx.Err()
		}
		return r.status.Err
	}
	if err := r.ev.WaitContext(w, ctx); err != nil {
		return err
	}
	return r.status.Err
}

// pollWhile is poll that gives up when more turns false; it reports
// whether r completed.
func (r *Request) pollWhile(w *fiber.Waiter, more func() bool) bool {
	p := r.ep.p
	worker := packet.NoWorker
	if f := w.Fiber(); f != nil {
		worker = f.Worker()
	}
	for !r.ev.Done() {
		p.tr.Progress(worker)
		if r.ev.Done() {
			break
		}
		if !more() {
			return false
		}
		p.pause(w)
	}
	return true
}

// WaitAnyContext is WaitAny until ctx ends: it returns the index of a
// completed request and its status' error, or −1 and ctx's error if ctx
// ends first (the requests stay pending). Nil requests are skipped; with
// none left it returns −1 and ErrNilRequest. A fiber yields and a goroutine
// parks, as in WaitAny; it may be called from a fiber, unlike a select on
// ctx.Done().
func WaitAnyContext(ctx context.Context, w *fiber.Waiter, reqs ...*Request) (int, error) {
	var over atomic.Bool
	var stop func() bool
	defer func() {
		if stop != nil {
			stop()
		}
	}()
	for {
		done, armed := armAny(w, reqs)
		if done >= 0 {
			return done, reqs[done].status.Err
		}
		if armed == 0 {
			return -1, ErrNilRequest
		}
		if err := ctx.Err(); err != nil {
			disarm(w, reqs)
			return -1, err
		}
		if stop == nil {
			stop = context.AfterFunc(ctx, func() {
				over.Store(true)
				w.Wake()
			})
		}
		for _, r := range reqs { // a wait with a limit (deadlock.go)
			if r != nil {
				r.noteTimed(w)
				break
			}
		}
		w.Block()
		disarm(w, reqs)
		if i := firstDone(reqs); i >= 0 {
			return i, reqs[i].status.Err
		}
		if over.Load() {
			return -1, ctx.Err()
		}
	}
}
