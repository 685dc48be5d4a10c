// Package breath lets a goroutine that never stops running go through the
// Go scheduler now and then, before the runtime's monitor does it for it.
//
// To the Go runtime a fiber worker is one goroutine that never stops:
// fibers switch as coroutines, without the scheduler. So is a
// communication server that polls without parking. The runtime's monitor
// thread (sysmon) preempts a goroutine that has run for 10 ms on one
// scheduling. If the goroutine is in a system call or a cgo call at that
// moment, as a worker that polls MPI or TCP mostly is, the monitor takes
// its P, hands the P to another thread (waking it) and then, having done
// something, looks again every 20 µs for a millisecond or more before it
// slows down again. On a process bound to one CPU every look takes that
// CPU from the worker: fmpi-osu over MPI woke the monitor some 1 500 times
// a second in each process (BENCHMARKS.md, issue 17, session 16).
//
// A Clock turned once per round of such a loop reads the time every Turns
// rounds and, once Period has passed since the last time, calls
// runtime.Gosched: the goroutine is scheduled anew, which the monitor sees,
// so it neither preempts it nor takes its P. A locked goroutine's Gosched
// hands its P to another thread and back, a few microseconds on one CPU;
// at one in Period that is about what the preemptions it replaces cost.
package breath

import (
	"runtime"
	"sync/atomic"
	"time"
)

const (
	// Turns is how many rounds pass between two looks at the clock.
	Turns = 8
	// Period is the least time between two breaths: under the monitor's
	// 10 ms, with room for long rounds (a large copy in one MPI call).
	Period = 6 * time.Millisecond
)

// Clock decides when its goroutine breathes. The zero value is ready; the
// first look at the clock breathes. One goroutine turns it; Breaths may be
// read by any.
type Clock struct {
	turns uint32
	last  time.Time
	n     atomic.Uint64
}

// Turn counts one round of the caller's loop and breathes if it is time.
func (c *Clock) Turn() {
	if c.turns++; c.turns%Turns == 0 {
		c.look()
	}
}

func (c *Clock) look() {
	// From the zero time, Sub saturates: the first look breathes.
	if now := time.Now(); now.Sub(c.last) >= Period {
		c.last = now
		c.n.Add(1)
		runtime.Gosched()
	}
}

// Breaths returns how many times the goroutine breathed.
func (c *Clock) Breaths() uint64 { return c.n.Load() }
