package packet

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/cpu"

	"github.com/fibermpi/fibermpi/internal/invariants"
)

// NoWorker is the worker index for callers that have no private deque:
// plain goroutines and the progress engine. They take from the shared
// pool first and steal second, and return packets to the shared pool.
const NoWorker = -1

// Pool is a fixed set of packets, kept in one private deque per worker
// and a shared pool.
//
// Ownership: deque w is owned by worker w — a goroutine locked to one OS
// thread, running fibers — and only that worker may call Get(w) or
// Put(w, pk); two goroutines must never use the same worker index at the
// same time (caught in invariants builds). The fibers of worker w all use
// index w: they never run at once. Code that runs on worker w's thread
// between fibers (the idle hook, progress driven by the worker) may use w
// too. Any goroutine may call Get(NoWorker) and Put(NoWorker, ...); a
// dedicated progress goroutine (the communication server) uses NoWorker.
// Every other method may be called from anywhere. Neither Get nor Put
// blocks or yields, so both may be called from a fiber. A Pool must not
// be copied. Its memory goes back to the Go heap when the pool and all
// its packets are unreachable.
//
// Get(w) takes the top of deque w (the packet w used last: its lines are
// likely still in w's cache); if that is empty, the top of the shared
// pool; if that is empty too, it steals the bottom (least recently used)
// packet of another worker's deque, starting at a random one. Put(w, p)
// pushes p on top of deque w; when the deque is full, its bottom packet
// moves to the shared pool first. NoWorker callers skip the first step.
type Pool struct {
	// Read-only after New.
	cfg     Config
	base    unsafe.Pointer // first packet of the initial slab
	stride  uintptr        // bytes from one packet to the next
	n0      uint32         // packets in the initial slab
	lines   int
	workers []deque
	first   *slab // keeps the initial slab alive

	_ cpu.CacheLinePad

	shared stack

	// Slow-path event counters, written with Add where the event happens
	// and Loaded by Stats.
	steals    atomic.Uint64 // packets taken from another worker's deque
	spills    atomic.Uint64 // packets moved from a full deque to shared
	exhausted atomic.Uint64 // Gets that returned nil
	_         cpu.CacheLinePad

	// Growth (OverflowGrow only). growMu serialises growth; total is
	// Stored under it and Loaded by Stats and by the next grower.
	growMu    sync.Mutex
	total     atomic.Int64
	growShift uint
	// chunks[k] holds packets n0+k<<growShift ... ; Stored once under
	// growMu before any of its packets is published (pushed to shared),
	// Loaded by at() after the pop that received such a packet.
	chunks []atomic.Pointer[slab]
}

// New makes a pool as cfg describes (zero fields take their defaults). All
// packets are allocated here, in one slab; each deque starts full and the
// shared pool starts with cfg.Shared packets. The error, if any, is a
// *ConfigError from Validate.
func New(cfg Config) (*Pool, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	n := cfg.initial()
	lines := cfg.PayloadSize / CacheLine
	s := newSlab(n, lines, 0)
	p := &Pool{
		cfg:     cfg,
		base:    s.base,
		stride:  uintptr(1+lines) * CacheLine,
		n0:      uint32(n),
		lines:   lines,
		workers: make([]deque, cfg.Workers),
		first:   s,
	}
	p.total.Store(int64(n))
	p.shared.init()
	next := uint32(0)
	for w := range p.workers {
		d := &p.workers[w]
		d.init(cfg.PerWorker)
		for range cfg.PerWorker {
			if d.pushTop(next) != pushed {
				panic("packet: internal error: fresh deque refused a packet")
			}
			next++
		}
	}
	// Push the shared packets in reverse so that Get pops them in index
	// (address) order.
	for i := n - 1; i >= int(next); i-- {
		p.shared.push(p.at(uint32(i)))
	}
	if cfg.Overflow == OverflowGrow {
		g := uint(0)
		for 1<<g < cfg.GrowBy {
			g++
		}
		p.growShift = g
		p.chunks = make([]atomic.Pointer[slab], (cfg.MaxPackets-n+cfg.GrowBy-1)/cfg.GrowBy)
	}
	return p, nil
}

// at returns packet i.
func (p *Pool) at(i uint32) *Packet {
	if i < p.n0 {
		// Safety: i is below the initial slab's count, so the header
		// lies inside it (see slab.at).
		return (*Packet)(unsafe.Add(p.base, uintptr(i)*p.stride))
	}
	return p.atGrown(i)
}

//go:noinline
func (p *Pool) atGrown(i uint32) *Packet {
	j := i - p.n0
	return p.chunks[j>>p.growShift].Load().at(j&(1<<p.growShift-1), p.stride)
}

// Get returns a free packet with a zeroed header and Len 0 (the payload
// bytes are left as they were: unspecified), or nil if the pool is
// exhausted: every packet is in use and the overflow policy allows no
// more. Nil is back-pressure, not an error: make progress (which returns
// packets to the pool) and try again. Get never blocks (under
// OverflowGrow, a Get that grows the pool allocates and may wait for
// another Get that is growing it).
//
// w is the caller's worker index, in [0, Workers), or NoWorker. It panics
// if w is out of range.
func (p *Pool) Get(w int) *Packet {
	if uint(w) < uint(len(p.workers)) {
		d := &p.workers[w]
		if invariants.Enabled {
			d.enter(w)
			defer d.leave()
		}
		if i, ok := d.popTop(); ok {
			return p.hand(p.at(i))
		}
	} else if w != NoWorker {
		panicWorker(w, len(p.workers))
	}
	return p.getSlow(w)
}

// getSlow is Get after the caller's own deque came up empty (or there is
// none): the shared pool, then stealing, then growth.
//
//go:noinline
func (p *Pool) getSlow(w int) *Packet {
	if i, ok := p.shared.pop(p); ok {
		return p.hand(p.at(i))
	}
	if pk := p.steal(w); pk != nil {
		return p.hand(pk)
	}
	if p.cfg.Overflow == OverflowGrow {
		if pk := p.grow(); pk != nil {
			return p.hand(pk)
		}
	}
	p.exhausted.Add(1)
	return nil
}

// steal takes the bottom packet of some deque other than w's, trying each
// once starting at a random one, and again while a race was lost.
func (p *Pool) steal(w int) *Packet {
	n := len(p.workers)
	if n == 0 {
		return nil
	}
	start := int(rand.Uint32N(uint32(n)))
	for {
		contended := false
		for k := range n {
			v := start + k
			if v >= n {
				v -= n
			}
			if v == w {
				continue
			}
			i, ok, empty := p.workers[v].popBottom()
			if ok {
				p.steals.Add(1)
				return p.at(i)
			}
			contended = contended || !empty
		}
		if !contended {
			return nil
		}
	}
}

// grow adds a chunk of packets under OverflowGrow and returns one of
// them, or nil if the pool is at MaxPackets.
func (p *Pool) grow() *Packet {
	if p.total.Load() >= int64(p.cfg.MaxPackets) {
		return nil // at the limit: do not queue on the lock
	}
	p.growMu.Lock()
	defer p.growMu.Unlock()
	// Someone may have grown (or returned packets) while we waited.
	if i, ok := p.shared.pop(p); ok {
		return p.at(i)
	}
	total := p.total.Load()
	room := int64(p.cfg.MaxPackets) - total
	if room <= 0 {
		return nil
	}
	k := (total - int64(p.n0)) >> p.growShift
	n := min(int64(1)<<p.growShift, room)
	s := newSlab(int(n), p.lines, uint32(total))
	p.chunks[k].Store(s)
	p.total.Store(total + n)
	for i := n - 1; i >= 1; i-- {
		p.shared.push(s.at(uint32(i), p.stride))
	}
	return s.at(0, p.stride)
}

// hand prepares a packet for its new owner.
func (p *Pool) hand(pk *Packet) *Packet {
	if invariants.Enabled {
		checkPoison(pk)
		pk.link.Store(linkInUse)
	}
	pk.clearHeader()
	return pk
}

// Put returns pk to the pool. w is the caller's worker index, in
// [0, Workers), or NoWorker; pk may come from any worker. pk and every
// slice of its payload are dead to the caller afterwards. Put panics if w
// is out of range, if pk is nil or belongs to another pool, and — in
// invariants builds — if pk is already free (double return).
func (p *Pool) Put(w int, pk *Packet) {
	if pk == nil || pk.index >= uint32(p.total.Load()) || p.at(pk.index) != pk {
		panicForeign(pk)
	}
	if uint(w) >= uint(len(p.workers)) && w != NoWorker {
		panicWorker(w, len(p.workers))
	}
	if w == NoWorker {
		if invariants.Enabled {
			release(pk)
		}
		p.shared.push(pk)
		return
	}
	d := &p.workers[w]
	if invariants.Enabled {
		d.enter(w)
		defer d.leave()
		release(pk)
	}
	for {
		switch d.pushTop(pk.index) {
		case pushed:
			return
		case pushBusy:
			// A thief is still reading the slot's previous occupant;
			// rather than wait for it, send this packet to the shared
			// pool.
			p.shared.push(pk)
			p.spills.Add(1)
			return
		}
		// Full: the least recently used packet goes to the shared pool.
		// Only thieves race us here, and they only make room.
		if i, ok, _ := d.popBottom(); ok {
			p.shared.push(p.at(i))
			p.spills.Add(1)
		}
	}
}

// release marks pk free and poisons it (invariants builds only).
func release(pk *Packet) {
	if !pk.link.CompareAndSwap(linkInUse, linkNil) {
		invariants.Failf("packet: double Put of packet %d", pk.index)
	}
	poison(pk)
}

// Owns reports whether pk is one of this pool's packets.
func (p *Pool) Owns(pk *Packet) bool {
	return pk != nil && pk.index < uint32(p.total.Load()) && p.at(pk.index) == pk
}

// Workers returns the number of private deques.
func (p *Pool) Workers() int { return len(p.workers) }

// PayloadSize returns the payload capacity of every packet in bytes.
func (p *Pool) PayloadSize() int { return p.lines * CacheLine }

// Config returns the effective configuration (defaults filled in).
func (p *Pool) Config() Config { return p.cfg }

// String describes the pool and its current state.
func (p *Pool) String() string {
	s := p.Stats()
	return fmt.Sprintf("packet.Pool{%s, packets: %d, free: %d shared + %d private, in use: %d}",
		p.cfg, s.Packets, s.Shared, s.Private, s.InUse)
}

// Stats is a snapshot of where a pool's packets are. The counts are exact
// while no Get or Put runs; otherwise they are estimates.
type Stats struct {
	// Packets is the number of packets the pool holds, free or not.
	Packets int
	// Shared is the number of free packets in the shared pool.
	Shared int
	// Private is the total of free packets in the private deques;
	// PerWorker[w] is the number in deque w.
	Private   int
	PerWorker []int
	// InUse is Packets - Shared - Private: the packets owned by callers.
	InUse int
	// Steals counts packets taken from another worker's deque, Spills
	// packets moved from a full deque to the shared pool, Exhausted Gets
	// that returned nil, Grows growth steps.
	Steals, Spills, Exhausted uint64
	Grows                     int
}

// Stats returns a snapshot of the pool (it allocates PerWorker).
func (p *Pool) Stats() Stats {
	s := Stats{
		Packets:   int(p.total.Load()),
		Shared:    p.shared.len(p, int(p.total.Load())),
		PerWorker: make([]int, len(p.workers)),
		Steals:    p.steals.Load(),
		Spills:    p.spills.Load(),
		Exhausted: p.exhausted.Load(),
	}
	for w := range p.workers {
		s.PerWorker[w] = p.workers[w].len()
		s.Private += s.PerWorker[w]
	}
	s.InUse = s.Packets - s.Shared - s.Private
	if g := p.growShift; p.chunks != nil {
		s.Grows = int((int64(s.Packets) - int64(p.n0) + 1<<g - 1) >> g)
	}
	return s
}

// Free returns the number of free packets in deque w, or in the shared
// pool for NoWorker (counted by walking it: O(packets)). The count is
// exact while no Get or Put runs. It panics if w is out of range.
func (p *Pool) Free(w int) int {
	if w == NoWorker {
		return p.shared.len(p, int(p.total.Load()))
	}
	if uint(w) >= uint(len(p.workers)) {
		panicWorker(w, len(p.workers))
	}
	return p.workers[w].len()
}

//go:noinline
func panicWorker(w, n int) {
	panic(fmt.Sprintf("packet: worker index %d out of range [0, %d) and not NoWorker", w, n))
}

//go:noinline
func panicForeign(pk *Packet) {
	if pk == nil {
		panic("packet: Put of a nil packet")
	}
	panic(fmt.Sprintf("packet: Put of packet %d, which belongs to another pool", pk.index))
}

//go:noinline
func panicConcurrentOwner(w int) {
	invariants.Failf("packet: two goroutines use worker index %d at once", w)
}
