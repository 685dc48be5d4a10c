package fiber

import (
	"fmt"
	"iter"
	"math/bits"
	"runtime/debug"

	"github.com/fibermpi/fibermpi/internal/invariants"
)

// A Fiber is a user-level thread: a function run by exactly one worker,
// cooperatively scheduled. A fiber runs until it returns or blocks (Yield,
// Waiter.Block, Event.Wait and every blocking fibermpi call made with the
// fiber's waiter); while it is blocked its worker runs other fibers.
//
// The *Fiber passed to the fiber's function belongs to that fiber: its
// methods other than Worker, Waiter and Scheduler must be called only from
// the fiber itself. A fiber never migrates to another worker.
//
// A fiber must not block its worker: a channel operation, a mutex, a
// sleeping system call or runtime.LockOSThread inside a fiber stops every
// fiber of that worker until it finishes. Blocking fibermpi calls yield
// instead. runtime.Goexit (and so testing.T.FailNow) inside a fiber is not
// supported: it ends the worker (see ErrGoexit).
type Fiber struct {
	// waiter is the fiber's Waiter; waiter.f points back here.
	waiter Waiter

	w    *worker
	slot uint32
	fn   func(*Fiber)

	// next and stop drive the fiber's runtime coroutine (iter.Pull); only
	// the owning worker calls them. yield is the coroutine's side of the
	// switch; only the fiber calls it.
	next  func() (struct{}, bool)
	stop  func()
	yield func(struct{}) bool

	started   bool // next has been called at least once (worker only)
	nested    bool // resumed by another fiber (direct handoff), not the worker
	looked    bool // park has looked at the word once in this block (fiber only)
	cancelled bool // set by the worker while the fiber is suspended
	returned  bool // fn returned normally (fiber only)

	// qnext links fibers in a worker's spawn queue.
	qnext *Fiber
}

// Worker returns the index of the worker that runs the fiber.
func (f *Fiber) Worker() int { return f.w.id }

// Scheduler returns the scheduler the fiber belongs to, so a fiber can spawn
// others.
func (f *Fiber) Scheduler() *Scheduler { return f.w.s }

// Waiter returns the fiber's waiter, to pass to Event.Wait or to any layer
// that blocks on the fiber's behalf.
func (f *Fiber) Waiter() *Waiter { return &f.waiter }

// Yield lets the worker run the other runnable fibers, then resumes the
// fiber. It must be called from the fiber itself.
func (f *Fiber) Yield() {
	f.w.signal(f.slot)
	f.block()
}

// WorkerIdle reports whether f's worker has nothing else to do: no other
// fiber is runnable, no spawn is queued, no Close is under way. It must be
// called from f itself. A fiber waiting for something that only polling
// brings (a transport's arrivals from other processes) may poll itself
// while WorkerIdle holds, rather than block and leave the polling to the
// worker's idle hook: the same polling, without the two coroutine switches
// of a block and a resume. It costs a few loads of the worker's run
// bit-vector (it is exact: unlike the worker's own look before it sleeps,
// it reads the level-1 words of the lines level 2 marks).
func (f *Fiber) WorkerIdle() bool {
	return f.w.cur == f && !f.w.othersRunnable(f.slot)
}

// WorkerAlone reports whether f is the only fiber of its worker, and its
// worker has nothing else to do (WorkerIdle): no other fiber lives on it,
// not even a blocked one, and none waits for a slot. It must be called
// from f itself. A fiber that takes what it waits for without polling for
// anyone else (endpoint's blocking Recv from another process) does so only
// while it is alone: a blocked fiber of the worker would wait for the
// polling it skips. With no other fiber on the worker no other run bit
// can stand for one, so it looks only at what WorkerIdle looks at first
// (the running pass's bits, a queued spawn, a stop), not at the
// bit-vector: a few loads.
func (f *Fiber) WorkerAlone() bool {
	w := f.w
	return len(w.fibers)-len(w.free) == 1 && w.pendHead == len(w.pending) && w.cur == f && !w.passOrQueue()
}

// Wait blocks the fiber until e has fired; it is e.Wait(f.Waiter()).
func (f *Fiber) Wait(e *Event) { e.Wait(&f.waiter) }

// block suspends the fiber until its run bit is set, and takes that bit
// (Waiter.Block, Yield); see park.
func (f *Fiber) block() { f.waiter.park(nil) }

// park suspends w's fiber until its run bit is set and takes that bit; with
// an event, it arms the event with w and waits until it has fired
// (Event.Wait). A goroutine waiter goes to Event.parkGoroutine.
//
// The slow way is to switch back to the worker, which scans its bit-vector
// and resumes the next runnable fiber: two coroutine switches per handoff.
// The fast way (direct handoff) is for the blocking fiber, when its worker
// resumed it, to take the runnable bits of its own level-1 word and resume
// those fibers itself, nested: a neighbour it resumes blocks by switching
// straight back to it, so a ping-pong between two fibers of one word costs
// one switch per handoff. Nesting is one level deep (a nested fiber always
// switches back to its resumer), and a worker grants at most maxDirect
// direct handoffs before its own scan gets a turn, so every runnable fiber
// still runs in a bounded number of steps.
//
// A resumed fiber returns from the switch through every frame between it
// and the fiber's code, and after a coroutine switch the CPU mispredicts
// those returns (its return-address stack holds the other coroutine's
// calls): about 6 ns a frame here. So both switches, g.next and f.yield,
// are called from this one function, which Event.Wait and Block (both
// inlined into their callers) reach in one call, and the event loop is in
// here rather than around a call.
func (w *Waiter) park(e *Event) {
	f := w.f
	if f == nil {
		if e == nil {
			<-w.ch
		} else {
			e.parkGoroutine(w)
		}
		return
	}
	if invariants.Enabled {
		invariants.Check(f.w.cur == f, "fiber: Block called from outside the fiber")
	}
	if e != nil && (!e.Arm(w) || e.Done()) {
		return
	}
	wk := f.w
	for {
		resumed := false
		for !f.nested && !resumed {
			g := f.neighbour()
			if g == f {
				resumed = true
				break
			}
			if g == nil {
				break
			}
			g.nested = true
			wk.cur = g
			g.started = true
			_, ok := g.next()
			wk.cur = f
			g.nested = false
			if !ok {
				wk.exit(g)
			}
		}
		if !resumed {
			f.yield(struct{}{})
		}
		if f.cancelled {
			if e != nil && e.Done() {
				return // the wait is over: the caller sees its outcome
			}
			panic(errCancel)
		}
		if e == nil || e.Done() {
			return
		}
	}
}

// neighbour takes the runnable bits of f's level-1 word and picks what park
// does next: f itself once its own bit is set (taken), another runnable
// fiber of the word to resume, or nil to yield to the worker (the word is
// empty or the direct-handoff budget is spent). On its first look it prefers
// the other fibers to f, so that Yield lets them run.
func (f *Fiber) neighbour() *Fiber {
	w := f.w
	j := f.slot / 64
	me := uint64(1) << (f.slot % 64)
	for w.direct < maxDirect && !w.stop.Load() {
		word := w.local
		if w.localWord == j {
			w.local = 0
		} else {
			word = 0
		}
		if w.l1[j].Load() != 0 {
			word |= w.l1[j].Swap(0)
		}
		if word == 0 {
			return nil
		}
		first := !f.looked
		w.direct++
		f.looked = true
		if word&me != 0 && (!first || word == me) {
			w.giveBack(j, word&^me)
			f.looked = false
			return f
		}
		low := word &^ me
		low &= -low
		w.giveBack(j, word&^low)
		if g := w.fibers[j*64+uint32(bits.TrailingZeros64(low))]; g != nil {
			return g
		}
		// A late Wake for an ended fiber: look again.
	}
	f.looked = false
	return nil
}

// cancelSignal is the panic value that unwinds a cancelled fiber.
type cancelSignal struct{}

var errCancel any = cancelSignal{}

// body is the coroutine's function: it runs fn and turns a panic into a
// report instead of letting it escape into the worker.
func (f *Fiber) body(yield func(struct{}) bool) {
	f.yield = yield
	defer f.finish()
	f.fn(f)
	f.returned = true
}

// finish runs on the fiber as it ends, normally or not.
func (f *Fiber) finish() {
	r := recover()
	switch {
	case r == errCancel:
		// Cancelled by Close: not an error.
	case r != nil:
		f.w.s.report(&PanicError{Worker: f.w.id, Value: r, Stack: debug.Stack()})
	case !f.returned:
		// Neither a return nor a panic: runtime.Goexit. iter.Pull will
		// propagate it into the worker, which cannot survive it.
		f.w.s.report(&PanicError{Worker: f.w.id, Value: ErrGoexit, Stack: debug.Stack()})
	}
}

// start creates the fiber's coroutine. It must run on the owning worker's
// goroutine, after that goroutine locked its OS thread: the runtime ties a
// coroutine to the thread-lock state it was created under.
func (f *Fiber) start() {
	f.next, f.stop = iter.Pull(f.body)
}

// PanicError reports a fiber that panicked (or called runtime.Goexit). The
// scheduler collects them and returns them, joined, from Wait and Close.
type PanicError struct {
	Worker int    // the worker that ran the fiber
	Value  any    // the value passed to panic, or ErrGoexit
	Stack  []byte // the fiber's stack at the panic
}

// Error describes the panic.
func (e *PanicError) Error() string {
	return fmt.Sprintf("fiber: panic in fiber on worker %d: %v", e.Worker, e.Value)
}

// Unwrap returns the panic value if it is an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}
