package packet

import (
	"sync/atomic"

	"golang.org/x/sys/cpu"
)

// deque is a worker's private pool: a bounded work-stealing deque of
// packet indices after Chase and Lev, with the owner working LIFO at top
// and thieves taking the least recently used entry at bottom.
//
// Ownership: exactly one goroutine, the owner (the worker the deque
// belongs to), calls pushTop and popTop, and never two at once. Any
// goroutine, the owner included, may call popBottom at any time.
//
// The live entries are the positions [bottom, top); position k lives in
// ring[k&mask]. top is written only by the owner; bottom only grows, by
// CAS, so a thief's CAS cannot succeed on a stale snapshot. Go's atomics
// are sequentially consistent, which gives popTop the store→load order
// Chase–Lev needs between moving top and reading bottom.
//
// Unlike textbook Chase–Lev, a thief reads its slot after winning the CAS
// on bottom, not before. That is what lets the owner write slots with
// plain stores — one atomic read-modify-write per owner operation instead
// of two — but the owner must then not overwrite a slot whose previous
// occupant a thief has claimed and not yet read. Each slot carries a
// generation for that: the owner bumps gen on every push, a thief stores
// the gen it consumed into done once it has read the slot, and pushTop
// reuses a slot only if its previous occupant was taken by the owner
// itself (popped) or done == gen. A slot still being read is treated as
// full, and Put sends the packet to the shared pool instead of waiting.
type deque struct {
	// top is one past the owner's end. Written only by the owner: Add(1)
	// in pushTop publishes the slot written before it (a thief's Load of
	// top pairs with it before the thief reads the slot); Add(-1) in
	// popTop reserves a position before popTop Loads bottom.
	top  atomic.Int64
	ring []slot
	mask int64
	cap  int64
	// owned is non-zero while an owner operation runs; used only in
	// builds with the invariants tag, to catch two goroutines using one
	// worker index (CompareAndSwap on entry pairs with Store on exit).
	owned atomic.Uint32
	_     cpu.CacheLinePad
	// bottom is the least recently used end. Advanced only by a
	// successful CompareAndSwap (popBottom, or popTop's race for the last
	// entry); Loaded by pushTop (full check) and popTop (empty check).
	bottom atomic.Int64
	_      cpu.CacheLinePad
}

// slot is one ring entry.
type slot struct {
	// idx is the packet index, gen the number of pushes into this slot so
	// far. Both are written by the owner in pushTop before top.Add
	// publishes them, and read either by the owner (popTop) or by the one
	// thief whose CAS on bottom claimed the position.
	idx uint32
	// popped is owner-only: the last occupant was taken by the owner.
	popped bool
	gen    uint64
	// done is the gen of the last occupant a thief consumed: Stored by
	// popBottom after it has read idx; Loaded by pushTop before it writes
	// the slot again.
	done atomic.Uint64
}

// init sizes the deque to hold up to capacity entries.
func (d *deque) init(capacity int) {
	n := 1
	for n < capacity {
		n <<= 1
	}
	d.ring = make([]slot, n)
	d.mask = int64(n - 1)
	d.cap = int64(capacity)
}

// pushResult says what pushTop did.
type pushResult uint8

const (
	pushed pushResult = iota
	// pushFull: the deque holds cap entries.
	pushFull
	// pushBusy: a thief has claimed the previous occupant of the slot and
	// not finished reading it.
	pushBusy
)

// pushTop adds x at the top, or reports why not, changing nothing. Owner
// only.
func (d *deque) pushTop(x uint32) pushResult {
	t := d.top.Load()
	if t-d.bottom.Load() >= d.cap {
		return pushFull
	}
	s := &d.ring[t&d.mask]
	if !s.popped && s.done.Load() != s.gen {
		return pushBusy
	}
	s.gen++
	s.idx = x
	s.popped = false
	d.top.Add(1)
	return pushed
}

// popTop removes and returns the most recently pushed entry. Owner only.
func (d *deque) popTop() (uint32, bool) {
	t := d.top.Add(-1) // reserve position t before looking at bottom
	if t <= d.bottom.Load() {
		return d.popLast(t)
	}
	s := &d.ring[t&d.mask]
	s.popped = true
	return s.idx, true
}

// popLast is popTop when position t, already reserved, is the last entry
// or the deque is empty.
//
//go:noinline
func (d *deque) popLast(t int64) (uint32, bool) {
	// Look again: a thief that read top before our Add may have taken t
	// meanwhile, leaving bottom at t+1, which reads as empty below.
	b := d.bottom.Load()
	if t < b {
		d.top.Add(1)
		return 0, false
	}
	// A thief may be taking the last entry too. Whoever advances bottom
	// wins; either way the deque ends up empty at b+1.
	won := d.bottom.CompareAndSwap(b, b+1)
	d.top.Add(1)
	if !won {
		return 0, false
	}
	s := &d.ring[t&d.mask]
	s.popped = true
	return s.idx, true
}

// popBottom removes and returns the least recently used entry. It
// reports ok=false if the deque is empty (empty=true) or if it lost a race
// for the bottom entry (empty=false).
func (d *deque) popBottom() (x uint32, ok, empty bool) {
	b := d.bottom.Load()
	t := d.top.Load()
	if b >= t {
		return 0, false, true
	}
	if !d.bottom.CompareAndSwap(b, b+1) {
		return 0, false, false
	}
	s := &d.ring[b&d.mask]
	x = s.idx
	s.done.Store(s.gen)
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
