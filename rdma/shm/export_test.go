//go:build linux

package shm

import (
	"fmt"
	"time"
)

// RingsString describes every ring's positions, for test failures.
func (t *Transport) RingsString() string {
	s := fmt.Sprintf("rank %d:", t.rank)
	for _, ir := range t.in {
		s += fmt.Sprintf(" in[from %d] head %d tail %d queued %d;", ir.from, ir.ctl.head.Load(), ir.ctl.tail.Load(), ir.queued.Load())
	}
	for _, o := range t.out {
		if o != nil {
			s += fmt.Sprintf(" out[to %d] tail %d head %d;", o.proc, o.ctl.tail.Load(), o.ctl.head.Load())
		}
	}
	return s
}

// PreferAttach makes t's large Puts towards process proc go by
// cross-memory attach, as if measured faster than the rings, with the
// next probe (pace.go) an hour away: a test slowed down by a loaded
// machine must not see a probe send its Put through the rings.
func (t *Transport) PreferAttach(proc int) {
	o := t.out[proc]
	o.mu.lock()
	o.pace = putPace{ring: 1, attach: 2, probed: time.Now().Add(time.Hour)}
	o.mu.unlock()
}

// PreferRings makes t's large Puts towards process proc go through the
// rings, as if measured faster than attach, with the next probe an hour
// away.
func (t *Transport) PreferRings(proc int) {
	o := t.out[proc]
	o.mu.lock()
	o.pace = putPace{ring: 2, attach: 1, probed: time.Now().Add(time.Hour)}
	o.mu.unlock()
}

// PaceAttach returns the attach average of t's pace towards proc, in
// bytes per nanosecond.
func (t *Transport) PaceAttach(proc int) float64 {
	o := t.out[proc]
	o.mu.lock()
	defer o.mu.unlock()
	return o.pace.attach
}

// SplitReadTook returns the owner's service time of t's split read
// number seq towards proc, as the owner left it in the ring (readTook),
// and whether its slot still holds it.
func (t *Transport) SplitReadTook(proc int, seq uint64) (time.Duration, bool) {
	o := t.out[proc]
	return tookOf(o.ctl.readTook[seq%readSlots].Load(), seq)
}

// RefuseAttach makes t behave as if the kernel refused it cross-memory
// attach to process proc (a split Put's read from it fails).
func (t *Transport) RefuseAttach(proc int) {
	o := t.out[proc]
	o.mu.lock()
	o.cma = false
	o.mu.unlock()
}

// SetSplitWait sets how long t's split Puts wait for their owner's read
// before they cancel it.
func (t *Transport) SetSplitWait(d time.Duration) { t.splitWait = d }
