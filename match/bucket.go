package match

import (
	"runtime"
	"sync/atomic"

	"github.com/fibermpi/fibermpi/internal/invariants"
)

// Layout constants, checked by TestLayout.
const (
	cacheLine  = 64
	slots      = 3             // data entries per bucket (Dang et al. 2016b §3.2)
	entrySize  = 16            // key + value, two 64-bit words
	bucketSize = 64            // control entry + three data entries
	sideSize   = 16            // per-slot sidecar: sequence + FIFO tail
	cacheSize  = 16            // per-bucket node cache: list head + count
	pairSize   = 2 * cacheLine // bucket line + sidecar line
	pairPad    = pairSize - bucketSize - slots*sideSize - cacheSize

	// maxCached is how many free nodes a bucket keeps for its slots'
	// FIFOs before it returns them to the table's free list.
	maxCached = 64
)

// Per-slot bits of bucket.meta: slot i uses bits 2i and 2i+1.
const (
	metaRecv = 1 // the slot's FIFO holds posted receives (else messages)
	metaMore = 2 // the slot's FIFO has items after the head (side.tail != nil)
	metaBits = 2

	// metaListed, in the meta of a chain's first bucket, mirrors the
	// chain's bit in core.listed.
	metaListed = 1 << 31
)

// opaque stands for the caller's *M or *R inside the table. The generic
// Table converts at its boundary; everything below is written once.
type opaque struct{}

// entry is one of Dang et al.'s 16-byte data entries: a key and the head of
// that key's FIFO.
type entry struct {
	key uint64 // packed Key; meaningful only while the slot is occupied
	// val is the head item (a *M or *R) of the key's FIFO, nil when the head
	// has been taken. Written under the chain's lock (Store, CompareAndSwap)
	// and by Empty without the lock (CompareAndSwap to nil); read by Load
	// under the lock. The CompareAndSwap on both sides decides who takes a
	// head that Empty and a locked operation want at once.
	val atomic.Pointer[opaque]
}

// bucket is Dang et al.'s 64-byte, 4-entry bucket: a control entry (spinlock,
// per-slot metadata, overflow pointer) and three data entries.
//
// The chain starting at a bucket of Table.pairs is guarded by that first
// bucket's mu; the mu of an overflow bucket is unused. meta, ovf and every
// key are read and written only with the chain's lock held.
type bucket struct {
	// mu is the spinlock: CompareAndSwap(0, 1) in lock pairs with Store(0)
	// in unlock.
	mu   atomic.Uint32
	meta uint32 // metaRecv/metaMore bits per slot
	ovf  *pair  // next bucket of the chain, nil at its end
	ents [slots]entry
}

// side is the per-slot data that does not fit in Dang et al.'s 16-byte entry.
// It lives on the cache line after the bucket and is touched only when the
// table stamps sequence numbers or a key has more than one item.
type side struct {
	seq  uint64 // sequence number of the head item (entry.val)
	tail *node  // last of the items after the head (circular: tail.next is the first)
}

// pair is what the table allocates: a bucket on its own cache line and its
// sidecar on the next one. Pairs are 128-byte aligned (see TestLayout), so
// two operations on different chains never share a line.
//
// The sidecar line also holds the bucket's node cache: nodes freed from its
// slots' FIFOs, reused by the next append to them, both with the chain
// locked, so the steady state of a key with a window of pending items takes
// no lock but the chain's. Up to maxCached nodes stay; the rest go to the
// table's free list.
type pair struct {
	b      bucket
	s      [slots]side
	cached *node  // free nodes, linked by next
	ncache uint32 // length of cached
	_      [pairPad]byte
}

// node holds an item after the head of a key's FIFO, or a posted wildcard
// receive. Nodes come from and return to the table's free list.
type node struct {
	next *node
	item *opaque
	seq  uint64
	key  uint64 // wildcard receives only
}

func (b *bucket) lock() {
	if b.mu.CompareAndSwap(0, 1) {
		return
	}
	b.lockSlow()
}

// lockSlow spins. Critical sections are a few dozen instructions, so the
// lock is almost always free within a microsecond; only then does it yield
// the processor, in case the holder was preempted. Yielding early is costly:
// the callers are often fiber workers, goroutines locked to their threads,
// for which runtime.Gosched is a park and unpark of the OS thread (20–35 µs;
// yielding every 16 spins made a contended bucket cost ~50 µs per message
// window in BenchmarkMessageRate).
//
//go:noinline
func (b *bucket) lockSlow() {
	for spins := 1; ; spins++ {
		if b.mu.Load() == 0 && b.mu.CompareAndSwap(0, 1) {
			return
		}
		if spins%spinsPerYield == 0 {
			runtime.Gosched()
		}
	}
}

// spinsPerYield is how many failed looks at a taken bucket lock come before
// a runtime.Gosched (a few microseconds of spinning).
const spinsPerYield = 4096

func (b *bucket) unlock() {
	if invariants.Enabled {
		invariants.Check(b.mu.Swap(0) == 1, "match: unlock of an unlocked bucket")
		return
	}
	b.mu.Store(0)
}

func (p *pair) recv(i int) bool { return p.b.meta>>(uint(i)*metaBits)&metaRecv != 0 }
func (p *pair) more(i int) bool { return p.b.meta>>(uint(i)*metaBits)&metaMore != 0 }

func (p *pair) setMeta(i int, bits uint32) {
	sh := uint(i) * metaBits
	p.b.meta = p.b.meta&^(3<<sh) | bits<<sh
}

func (p *pair) setMore(i int, on bool) {
	bit := uint32(metaMore) << (uint(i) * metaBits)
	if on {
		p.b.meta |= bit
	} else {
		p.b.meta &^= bit
	}
}

// occupied reports whether slot i holds a key: a head, or items waiting
// behind a head that Empty took.
func (p *pair) occupied(i int) bool { return p.occ(i, p.b.meta) }

// find looks for key k in the chain headed by h, which must be locked. It
// returns the slot holding k (p nil if none) and the first free slot seen
// (fp nil if none).
//
// It is on the path of every Post and Arrive, so a bucket's three slots
// are written out, each tested with constant shifts of one load of meta
// (BenchmarkManyFibers, tags/8: 112 → 65 instructions a message; comm's
// BenchmarkShmLoopbackPingPong: 113 → 66, scripts/instr-per-op.sh).
func find(h *pair, k uint64) (p *pair, i int, fp *pair, fi int) {
	for q := h; q != nil; q = q.b.ovf {
		meta := q.b.meta
		if q.occ(0, meta) {
			if q.b.ents[0].key == k {
				return hitAt(q, 0, k, fp, fi)
			}
		} else if fp == nil {
			fp, fi = q, 0
		}
		if q.occ(1, meta) {
			if q.b.ents[1].key == k {
				return hitAt(q, 1, k, fp, fi)
			}
		} else if fp == nil {
			fp, fi = q, 1
		}
		if q.occ(2, meta) {
			if q.b.ents[2].key == k {
				return hitAt(q, 2, k, fp, fi)
			}
		} else if fp == nil {
			fp, fi = q, 2
		}
	}
	return nil, 0, fp, fi
}

// find writes out exactly three slots.
var _ [slots - 3]struct{}
var _ [3 - slots]struct{}

// occ is occupied(j) with meta, q's meta word, already loaded (find
// loads it once for the three slots).
func (q *pair) occ(j int, meta uint32) bool {
	return q.b.ents[j].val.Load() != nil || meta>>(uint(j)*metaBits)&metaMore != 0
}

// hitAt is find's result for a hit at (q, j).
func hitAt(q *pair, j int, k uint64, fp *pair, fi int) (*pair, int, *pair, int) {
	if invariants.Enabled {
		checkUnique(q, j, k)
	}
	return q, j, fp, fi
}

// checkUnique panics if a slot after (p, i) in the chain also holds k.
func checkUnique(p *pair, i int, k uint64) {
	for q, j := p, i+1; q != nil; q, j = q.b.ovf, 0 {
		for ; j < slots; j++ {
			invariants.Check(!q.occupied(j) || q.b.ents[j].key != k, "match: a key in two slots of one chain")
		}
	}
}
