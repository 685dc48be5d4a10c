package fiber

import (
	"context"
	"sync/atomic"
	"time"
)

// Timed waits that yield. Inside a fiber, time.Sleep, a select on a timer
// and a wait on ctx.Done() block the worker's thread and with it every
// other fiber of the worker; these do the same waits the fiber way.

// Sleep pauses the caller w for at least d. A fiber yields to its worker,
// which runs other fibers meanwhile, until a timer wakes it; a goroutine
// waiter (or a nil w) sleeps with time.Sleep. A d of zero or less only
// yields (a fiber) or returns (a goroutine).
func Sleep(w *Waiter, d time.Duration) {
	if w == nil || w.f == nil {
		time.Sleep(d)
		return
	}
	if d <= 0 {
		w.f.Yield()
		return
	}
	e := new(Event)
	t := time.AfterFunc(d, func() { e.Signal() })
	defer t.Stop() // also when Close unwinds the fiber
	e.Wait(w)
}

// WaitTimeout is Wait with a time limit: it returns true once e has fired,
// or false if d passes first, in which case w is no longer armed on e. A
// fiber yields and a goroutine parks, as in Wait.
func (e *Event) WaitTimeout(w *Waiter, d time.Duration) bool {
	if e.Done() {
		return true
	}
	if d <= 0 {
		return false
	}
	var over atomic.Bool
	t := time.AfterFunc(d, func() {
		over.Store(true)
		w.Wake()
	})
	defer t.Stop()
	return e.waitUnless(w, &over)
}

// WaitContext is Wait until ctx ends: it returns nil once e has fired, or
// ctx's error if ctx ends first, in which case w is no longer armed on e. A
// fiber yields and a goroutine parks, as in Wait; unlike a select on
// ctx.Done(), it never blocks a fiber's worker.
func (e *Event) WaitContext(w *Waiter, ctx context.Context) error {
	if e.Done() {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	var over atomic.Bool
	stop := context.AfterFunc(ctx, func() {
		over.Store(true)
		w.Wake()
	})
	defer stop()
	if e.waitUnless(w, &over) {
		return nil
	}
	return ctx.Err()
}

// waitUnless arms e with w and blocks w until e fires (true) or over is set
// (false, e disarmed). Whoever sets over wakes w afterwards. A wake-up that
// comes after the return is a spurious one for w's next wait, which
// Waiter allows.
func (e *Event) waitUnless(w *Waiter, over *atomic.Bool) bool {
	if !e.Arm(w) {
		return true
	}
	for !e.Done() {
		if over.Load() {
			if e.Disarm(w) {
				return false
			}
			// A Signal took the event from armed to fired: it is done.
			return true
		}
		w.Block()
	}
	return true
}

// Cancelled reports whether v, a value recovered from a panic in a fiber,
// is the scheduler's cancellation: Close unwinding a fiber blocked in a
// wait. Code that recovers panics inside fibers must panic again with such
// a value (the scheduler recovers it itself).
func Cancelled(v any) bool { return v == errCancel }
