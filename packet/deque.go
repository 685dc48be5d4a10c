package packet

import (
	"sync/atomic"

	"golang.org/x/sys/cpu"
)

// deque is a worker's private pool: a bounded Chase–Lev work-stealing
// deque of packet indices.
//
// Ownership: exactly one goroutine, the owner (the worker the deque
// belongs to), calls pushTop and popTop, and never two at once. Any
// goroutine, the owner included, may call popBottom at any time.
//
// The live entries are ring[bottom..top) (mod len(ring)). The owner works
// LIFO at top, so the packet it gets is the one it touched last;
// popBottom takes the least recently used entry. top is written only by
// the owner; bottom only grows, by CAS, so a thief's CAS cannot succeed on
// a stale snapshot (no ABA). Go's atomics are sequentially consistent,
// which gives popTop the store→load ordering Chase–Lev needs between
// publishing the new top and reading bottom.
type deque struct {
	// top is the next free slot at the owner's end. Written by the owner
	// (pushTop's Store publishes the slot written before it; popTop's
	// Store reserves the slot before it reads bottom); read by popBottom,
	// whose Load pairs with those Stores.
	top atomic.Int64
	// ring holds packet indices. A slot is written (Store) by pushTop
	// before the Store to top that publishes it, and read (Load) by popTop
	// or by popBottom before its CAS on bottom; a thief may read a slot
	// the owner is overwriting, but then its CAS fails, so the value is
	// discarded.
	ring []atomic.Uint32
	mask int64
	cap  int64
	// owned is non-zero while an owner operation runs; kept only in
	// builds with the invariants tag, to catch two goroutines using one
	// worker index (CompareAndSwap on entry pairs with Store on exit).
	owned atomic.Uint32
	_     cpu.CacheLinePad
	// bottom is the least recently used end. Advanced only by a
	// successful CompareAndSwap in popBottom or in popTop's last-entry
	// race; Loaded by pushTop (full check) and popTop (empty check).
	bottom atomic.Int64
	_      cpu.CacheLinePad
}

// init sizes the deque to hold up to capacity entries.
func (d *deque) init(capacity int) {
	n := 1
	for n < capacity {
		n <<= 1
	}
	d.ring = make([]atomic.Uint32, n)
	d.mask = int64(n - 1)
	d.cap = int64(capacity)
}

// pushTop adds x at the top. It reports false, changing nothing, if the
// deque holds cap entries. Owner only.
func (d *deque) pushTop(x uint32) bool {
	t := d.top.Load()
	if t-d.bottom.Load() >= d.cap {
		return false
	}
	d.ring[t&d.mask].Store(x)
	d.top.Store(t + 1)
	return true
}

// popTop removes and returns the most recently pushed entry. Owner only.
func (d *deque) popTop() (uint32, bool) {
	t := d.top.Load() - 1
	d.top.Store(t) // reserve slot t before looking at bottom
	b := d.bottom.Load()
	if t < b { // empty
		d.top.Store(b)
		return 0, false
	}
	x := d.ring[t&d.mask].Load()
	if t > b {
		return x, true
	}
	// The last entry: a thief may be taking it too. Whoever advances
	// bottom wins; either way the deque ends up empty at b+1.
	ok := d.bottom.CompareAndSwap(b, b+1)
	d.top.Store(b + 1)
	return x, ok
}

// popBottom removes and returns the least recently used entry. It
// reports false if the deque is empty or if it lost a race for the
// bottom entry; callers that must not give up on a race loop on
// (empty=false).
func (d *deque) popBottom() (x uint32, ok, empty bool) {
	b := d.bottom.Load()
	t := d.top.Load()
	if b >= t {
		return 0, false, true
	}
	x = d.ring[b&d.mask].Load()
	if !d.bottom.CompareAndSwap(b, b+1) {
		return 0, false, false
	}
	return x, true, false
}

// len returns the number of entries; exact only while no operation runs.
func (d *deque) len() int {
	b := d.bottom.Load()
	t := d.top.Load()
	if t < b {
		return 0
	}
	return int(t - b)
}

// enter and leave bracket an owner operation in invariants builds.
func (d *deque) enter(w int) {
	if !d.owned.CompareAndSwap(0, 1) {
		panicConcurrentOwner(w)
	}
}

func (d *deque) leave() { d.owned.Store(0) }
