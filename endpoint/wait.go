package endpoint

import (
	"context"
	"fmt"
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
