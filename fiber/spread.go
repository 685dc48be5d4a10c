package fiber

import (
	"slices"
	"sync/atomic"
	"time"
)

// Spreading the workers of an unpinned scheduler over the CPUs.
//
// Two workers of one program on one CPU run one after the other: each
// pauses (sched_yield) when it waits for the other, which hands the CPU
// over, so both always look runnable or running, and the program runs at
// the speed of one CPU while another may be idle. The kernel puts them
// there when, as one of them wakes up, it prefers a busy CPU to waking an
// idle one (some kernels pack tasks onto few CPUs on purpose, as this
// project's 2-CPU virtual machines do), and its balancer then leaves them
// there: both were run within the last half millisecond, too recently to
// move. Measured on the red-black example (512×512, two fibers on two
// workers): every iteration of a run took 150–170 µs with both workers on
// one CPU, 65–90 µs with one each, and about a third of quiet runs began
// on one CPU and stayed there to the end.
//
// A worker notices that it shares its CPU when a pause takes long (another
// thread ran meanwhile, crowdPause), and finds out with whom: if another
// awake worker of the scheduler last saw itself on the same CPU and some
// allowed CPU has no awake worker, it binds its thread to that CPU, which
// moves it there at once, and stays bound: moved and left free, it was put
// back within a millisecond (a packing kernel measures the two workers by
// their recent use of the CPU, half of one each while they shared it).
//
// A worker crowded for a time slice (otherPause) by a thread that is not a
// worker of the scheduler (another program: a busy machine) gives up its
// binding, if any, and goes back to the CPU it came from: there, a binding
// does harm, since the other program takes time slices of milliseconds
// where a sibling worker hands the CPU over at every meeting (measured:
// with two busy loops beside the example, runs in which the workers bound
// themselves took twice as long). It then binds again only after a wait
// that doubles, up to spreadMaxWait, while such crowding keeps coming
// within spreadProbe of the last, and is spreadMinWait otherwise: on a
// busy machine the workers are left to the kernel. Shorter crowding (a
// kernel thread, the Go runtime's own threads) is ignored.

const (
	otherPause    = 250 * time.Microsecond // a pause this long was another program's time slice
	idleWindow    = 20 * time.Millisecond  // a CPU idle less than half of this long is busy
	idleMinWindow = 2 * time.Millisecond   // one idle half of this long is quiet
	spreadProbe   = 100 * time.Millisecond // crowding this often means a busy machine
	spreadMinWait = time.Millisecond       // wait before binding again on a quiet machine
	spreadMaxWait = time.Second            // longest wait, on a busy one
)

// spreader is a worker's spreading state, owner only.
type spreader struct {
	cpus []int // the CPUs the scheduler's threads may run on
	// claims[i] is the id of the worker bound to cpus[i], or -1; shared
	// by the scheduler's spreaders.
	claims  []atomic.Int32
	bound   int32     // the CPU the worker is bound to, or -1
	from    int32     // the CPU it left when it bound itself
	boundAt time.Time // when it bound itself
	// lastOther is when another program's thread last crowded it.
	lastOther time.Time
	// idle is each CPU's idle time (of cpus, by index) at the last look,
	// taken at looked; nil where the kernel does not tell. cur is scratch
	// space for the next look.
	idle, cur []time.Duration
	looked    time.Time
	read      time.Time // when idle times were last read
	wait      time.Duration
	next      time.Time    // no binding before this
	binds     atomic.Int32 // bindings made (tests read it)
	unbinds   atomic.Int32 // bindings given up for another program
}

// newSpreaders returns one spreader per worker, or nil if the workers are
// pinned, alone, or cannot be bound here.
func newSpreaders(cfg Config) []*spreader {
	if cfg.Pin || cfg.Workers < 2 || !canBind {
		return nil
	}
	cpus, err := allowedCPUs()
	if err != nil || len(cpus) < 2 {
		return nil
	}
	claims := make([]atomic.Int32, len(cpus))
	for i := range claims {
		claims[i].Store(-1)
	}
	out := make([]*spreader, cfg.Workers)
	for i := range out {
		sp := &spreader{cpus: cpus, claims: claims, bound: -1, from: -1, wait: spreadMinWait,
			idle: make([]time.Duration, len(cpus)), cur: make([]time.Duration, len(cpus))}
		// The first look, so that a worker crowded at its start can
		// decide idleWindow later.
		if idleTimes(cpus, sp.idle) {
			sp.looked = time.Now()
		} else {
			sp.idle, sp.cur = nil, nil
		}
		out[i] = sp
	}
	return out
}

// cpuNow, bindThread, runnable and idleTimes are getcpu, bindTo,
// runnableThreads and cpuIdleTimes; tests replace them.
var (
	cpuNow     = getcpu
	bindThread = bindTo
	runnable   = runnableThreads
	idleTimes  = cpuIdleTimes
)

// crowded is called by worker w when a pause that ended at now took d,
// at least crowdPause.
func (sp *spreader) crowded(w *worker, now time.Time, d time.Duration) {
	me := cpuNow()
	w.at.Store(me)
	if !w.siblingOn(me) {
		if d < otherPause {
			return // a short-lived thread: a kernel thread, the Go runtime
		}
		// Another program's thread ran here for a time slice: the
		// machine is busy. Bound, go back and unbind. Either way, bind
		// again only after a wait that doubles while such crowding keeps
		// coming (within spreadProbe of the last one, or of the binding).
		last := sp.lastOther
		if sp.bound >= 0 {
			if bindThread(sp.from, sp.cpus) && bindThread(-1, sp.cpus) {
				w.at.Store(sp.from)
			}
			sp.claims[slices.Index(sp.cpus, int(sp.bound))].Store(-1)
			sp.bound = -1
			sp.unbinds.Add(1)
			if sp.boundAt.After(last) {
				last = sp.boundAt
			}
		}
		if now.Sub(last) < spreadProbe {
			sp.wait = min(2*sp.wait, spreadMaxWait)
		} else {
			sp.wait = spreadMinWait
		}
		sp.lastOther, sp.next = now, now.Add(sp.wait)
		return
	}
	if sp.bound >= 0 || now.Before(sp.next) {
		// Bound, a sibling was put here: it is free, and moves itself.
		return
	}
	target := int32(-1)
	for i, c := range sp.cpus {
		if int32(c) != me && !w.siblingOn(int32(c)) && sp.claims[i].Load() < 0 {
			target = int32(c)
			break
		}
	}
	if target < 0 {
		return
	}
	switch sp.idleness(w, target, now) {
	case probing:
		return
	case busy:
		// The CPU it would move to runs another program: sharing one
		// with the sibling is better than sharing one with that.
		sp.wait = min(2*sp.wait, spreadMaxWait)
		sp.lastOther, sp.next = now, now.Add(sp.wait)
		return
	}
	// Claim the CPU first: two workers sharing one decide at about the
	// same time, and must not both bind to the same other one.
	claim := &sp.claims[slices.Index(sp.cpus, int(target))]
	if !claim.CompareAndSwap(-1, int32(w.id)) {
		return
	}
	if !bindThread(target, sp.cpus) {
		claim.Store(-1)
		return
	}
	w.at.Store(target)
	sp.bound, sp.from, sp.boundAt = target, me, now
	sp.binds.Add(1)
}

// What a spreader knows of a CPU it would move to.
const (
	probing = iota // not yet: a first look taken, the second comes later
	busy           // busy more than half the time lately
	quiet          // idle at least half the time lately
)

// idleness tells whether cpu has been idle lately: from two looks at its
// idle time (idleTimes) between idleWindow and spreadProbe apart, or, where
// the kernel does not tell, from the number of runnable threads of the
// machine against the scheduler's awake workers.
func (sp *spreader) idleness(w *worker, cpu int32, now time.Time) int {
	i := slices.Index(sp.cpus, int(cpu))
	if sp.idle != nil && i >= 0 {
		dt := now.Sub(sp.looked)
		if dt < idleMinWindow || now.Sub(sp.read) < idleMinWindow/2 {
			return probing // keep the first look; read at most so often
		}
		sp.read = now
		if idleTimes(sp.cpus, sp.cur) {
			d := sp.cur[i] - sp.idle[i]
			switch {
			case dt > spreadProbe:
				// Too old: this look is the new first one.
			case 2*d >= dt:
				copy(sp.idle, sp.cur)
				sp.looked = now
				return quiet
			case dt < idleWindow:
				// The kernel counts idle time in steps of 10 ms: too
				// soon to call the CPU busy.
				return probing
			default:
				copy(sp.idle, sp.cur)
				sp.looked = now
				return busy
			}
			copy(sp.idle, sp.cur)
			sp.looked = now
			return probing
		}
	}
	if n := runnable(); n >= 0 && n <= w.awake() {
		return quiet
	}
	return busy
}

// siblingOn reports whether another awake worker of w's scheduler last saw
// itself on cpu.
func (w *worker) siblingOn(cpu int32) bool {
	for _, o := range w.s.workers {
		if o != w && !o.sleeping.Load() && o.at.Load() == cpu {
			return true
		}
	}
	return false
}

// awake returns how many workers of w's scheduler are not asleep.
func (w *worker) awake() int {
	n := 0
	for _, o := range w.s.workers {
		if !o.sleeping.Load() {
			n++
		}
	}
	return n
}
