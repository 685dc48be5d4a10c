package main

import (
	"math"
	"sync/atomic"

	"github.com/fibermpi/fibermpi/fiber"
	"golang.org/x/sys/cpu"
)

// bflag is the shared-memory counterpart of a halo message (Snir 2009 §4.3.4's
// done[id][color]): its owner publishes the number of the last half-sweep in
// which it finished a boundary row, and the one neighbour that reads that row
// waits until the number reaches the half-sweep it needs. The proposal counts
// arrivals and resets the counter each half-sweep, with two sets of counters
// for the two colors; a monotone number needs neither reset nor second set.
type bflag struct {
	_ cpu.CacheLinePad
	// done is the last half-sweep published: Store in publish, Load in await.
	done atomic.Int64
	// reader is the neighbour's waiter. It is set once, before the start
	// gate (which orders it before every publish), and only read afterwards.
	reader *fiber.Waiter
	_      cpu.CacheLinePad
}

// publish announces that half-sweep h's boundary row is final and wakes the
// reader (a stale wake-up is harmless: await loops on the number).
func (f *bflag) publish(h int64) {
	f.done.Store(h)
	f.reader.Wake()
}

// await blocks w, the reader, until half-sweep h has been published. A fiber
// yields to its worker meanwhile.
func (f *bflag) await(h int64, w *fiber.Waiter) {
	for f.done.Load() < h {
		w.Block()
	}
}

// barrier is a reusable barrier over n fibers that also reduces a float64 by
// max: every member calls reduce once per round, and all get the maximum of
// the round's values once the last one has arrived. It replaces OpenMP's
// barrier in the funneled variant and computes the residual of the threads of
// one process; the harness uses it as the start gate.
type barrier struct {
	n int64
	// arrived counts the arrivals of all rounds: Add in reduce; the member
	// whose Add reaches round·n is the last of the round and releases it.
	arrived atomic.Int64
	_       cpu.CacheLinePad
	// round is the last round released: Store by the last arriver after it
	// has read every value and written result; Load by the waiting members.
	round  atomic.Int64
	result float64 // the released round's maximum (see round)
	_      cpu.CacheLinePad
	m      []member
}

// member is one fiber's slot in a barrier.
type member struct {
	_      cpu.CacheLinePad
	val    float64       // this round's value, written before arriving
	rounds int64         // rounds this member has entered (its own counter)
	w      *fiber.Waiter // set on the first round, read by last arrivers
	_      cpu.CacheLinePad
}

func newBarrier(n int) *barrier { return &barrier{n: int64(n), m: make([]member, n)} }

// wait blocks member id (whose waiter is w) until all n members have called
// wait or reduce for the round; last, if not nil, runs in the last member to
// arrive before any is released.
func (b *barrier) wait(id int, w *fiber.Waiter, last func()) {
	b.reduce(id, w, math.Inf(-1), last)
}

// reduce is wait that also returns the maximum of the values the members
// passed this round.
func (b *barrier) reduce(id int, w *fiber.Waiter, v float64, last func()) float64 {
	me := &b.m[id]
	if me.w == nil {
		me.w = w
	}
	me.rounds++
	k := me.rounds
	me.val = v
	if b.arrived.Add(1) == k*b.n {
		m := math.Inf(-1)
		for i := range b.m {
			m = max(m, b.m[i].val)
		}
		b.result = m
		if last != nil {
			last()
		}
		b.round.Store(k)
		for i := range b.m {
			if i != id {
				b.m[i].w.Wake()
			}
		}
		return m
	}
	for b.round.Load() < k {
		w.Block()
	}
	return b.result
}
