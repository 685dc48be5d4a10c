package fiber

import "sync/atomic"

// A Waiter is something that can block and be woken: a fiber, or a plain
// goroutine. The layers above fibermpi's scheduler (requests, endpoints)
// hold a *Waiter for their caller and never need to know which kind it is.
//
// A Waiter behaves like a binary semaphore with one permit: Wake grants the
// permit (granting it twice is the same as once) and Block consumes it,
// waiting for it if it is not there. Block may therefore return once for
// several Wakes, and a Wake meant for an earlier wait may let a later Block
// return at once, so callers always wait in a loop on their own condition:
//
//	for !done() {
//		w.Block()
//	}
//
// Event does exactly that and is what most code should use.
type Waiter struct {
	// f is the fiber this waiter belongs to, nil for a goroutine waiter.
	f *Fiber
	// ch holds the permit of a goroutine waiter (capacity 1).
	ch chan struct{}
}

// NewGoroutineWaiter returns a Waiter for a plain goroutine: Block parks the
// goroutine on a channel, Go's way, and Wake readies it. Calling Block from a
// fiber with such a waiter blocks the fiber's whole worker; fibers use
// (*Fiber).Waiter instead.
func NewGoroutineWaiter() *Waiter {
	return &Waiter{ch: make(chan struct{}, 1)}
}

// Fiber returns the fiber this waiter belongs to, or nil for a goroutine
// waiter.
func (w *Waiter) Fiber() *Fiber { return w.f }

// Wake grants the waiter's permit, so its current or next Block returns. It
// may be called from any goroutine, fiber or worker, any number of times.
// For a fiber it is one atomic OR into its worker's run bit-vector (two when
// the bit's group was idle), and a wake-up of the worker only if that worker
// sleeps.
func (w *Waiter) Wake() {
	if f := w.f; f != nil {
		f.w.signal(f.slot)
		return
	}
	select {
	case w.ch <- struct{}{}:
	default: // the permit is already there
	}
}

// Block waits until the permit is granted and consumes it. A fiber yields to
// its worker, which runs other fibers meanwhile; a goroutine parks. Block
// must be called by the waiter's own fiber or goroutine.
//
// If the fiber's scheduler is closing, Block does not return: it unwinds the
// fiber with a panic that the scheduler recovers (deferred calls run).
func (w *Waiter) Block() { w.park(nil) }

// Event states. The armed waiter itself lives in Event.w: pointer
// read-modify-writes in Go are calls with a write-barrier check, several
// times the cost of an integer atomic, so the state that Signal and Arm race
// on is an integer and the pointer is only loaded, and stored when the
// waiter changes.
const (
	evIdle      uint32 = iota // not fired, no waiter armed
	evArmed                   // not fired, Event.w is armed
	evSignalled               // fired
	evMarked                  // evArmed, and seen so by Mark since it was armed (watch.go)
)

// Event is a one-shot synchronization object: any number of goroutines may
// Signal it, the first Signal fires it, and a Wait returns once it has fired,
// whether the Signal came before or after the Wait began (the "signalled
// flag" of Dang et al. 2016a §3.1). It wakes its waiter exactly once.
//
// The zero value is an unfired event ready to use. An Event must not be
// copied after first use. Reset makes a fired event reusable (see Reset for
// when).
type Event struct {
	// state is evIdle, evArmed or evSignalled. Arm's CompareAndSwap pairs
	// with Signal's Swap: whichever comes second sees the other's value, so
	// a wake-up is never lost.
	state atomic.Uint32
	// w is the waiter armed last. Only an arming waiter stores it, before
	// the atomic that moves state to evArmed, and only if it changes; Signal
	// loads it after its Swap saw evArmed. A Signal finishing after its
	// waiter returned and the event was reused wakes the new waiter at worst,
	// which Waiter allows (a spurious wake).
	w atomic.Pointer[Waiter]
}

// Signal fires the event and wakes its waiter, if one is armed. It reports
// whether this call fired it (false if it had fired already). It never
// blocks and may be called from anywhere.
func (e *Event) Signal() bool {
	switch e.state.Swap(evSignalled) {
	case evSignalled:
		return false
	case evArmed, evMarked:
		e.w.Load().Wake()
	}
	return true
}

// Done reports whether the event has fired. It is one atomic load.
func (e *Event) Done() bool { return e.state.Load() == evSignalled }

// Wait returns once the event has fired. If it has not fired yet, w (the
// caller's own waiter) is armed and blocked: a fiber yields, a goroutine
// parks. Only one waiter may wait on an event at a time; a second concurrent
// Wait with a different waiter panics.
//
// Wait is small enough to inline, so that a fiber's wait is one call (to
// Waiter.park, which arms the event) between the caller and the coroutine
// switch.
func (e *Event) Wait(w *Waiter) {
	if !e.Done() {
		w.park(e)
	}
}

// parkGoroutine is Wait for a goroutine waiter.
func (e *Event) parkGoroutine(w *Waiter) {
	if !e.Arm(w) {
		return
	}
	for !e.Done() {
		<-w.ch
	}
}

// Arm registers w to be woken when the event fires, without blocking, and
// reports whether it did: false means the event has fired already. Arming
// the same waiter on several events and then blocking once is how a caller
// waits for whichever fires first (WaitAny); Disarm the others afterwards.
// Arm panics if another waiter is armed.
func (e *Event) Arm(w *Waiter) bool {
	switch e.state.Load() {
	case evSignalled:
		return false
	case evArmed, evMarked:
		if e.w.Load() != w {
			panic("fiber: two waiters on one Event")
		}
		return true
	}
	if e.w.Load() != w {
		e.w.Store(w)
	}
	// Only Signal races with us now, and it can only move idle to fired.
	return e.state.CompareAndSwap(evIdle, evArmed)
}

// Disarm removes w if it is armed on the event and the event has not fired,
// and reports whether it did. A Signal racing with Disarm either wakes w or
// finds it gone; never both, never neither. An event that is not armed
// costs one load, not a failed compare-and-swap: only w arms it, so an idle
// event stays idle while w disarms.
func (e *Event) Disarm(w *Waiter) bool {
	if s := e.state.Load(); (s != evArmed && s != evMarked) || e.w.Load() != w {
		return false
	}
	return e.state.CompareAndSwap(evArmed, evIdle) || e.state.CompareAndSwap(evMarked, evIdle)
}

// Reset returns a fired (or never armed) event to its zero state so it can be
// reused. It must not race with Wait or Arm, nor with a Signal that has not
// fired the event yet; once a Wait returned, the Signal that fired the event
// may still be finishing, and that is allowed (it may then wake the event's
// next waiter spuriously).
func (e *Event) Reset() { e.state.Store(evIdle) }

// Rearm is Reset followed by Arm(w) in one store: the event is unfired and
// w is its waiter, so a later Wait(w) skips the compare-and-swap of Arm. The
// same rules as Reset apply.
func (e *Event) Rearm(w *Waiter) {
	if e.w.Load() != w {
		e.w.Store(w)
	}
	e.state.Store(evArmed)
}
