package match

import (
	"math/bits"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/cpu"

	"github.com/fibermpi/fibermpi/internal/invariants"
)

// Item kinds, as stored in the metaRecv bit.
const (
	kindMsg  = 0
	kindRecv = metaRecv
)

const (
	stripeBits = 6
	stripes    = 1 << stripeBits
	// hashMul is the 64-bit golden-ratio constant of Fibonacci hashing.
	hashMul = 0x9E3779B97F4A7C15
)

// stripe is one arrival counter, alone on its cache line.
type stripe struct {
	// n stamps arrivals from the sources hashed to this stripe: Add in
	// queueMsg, under the arriving key's chain lock; the values are compared
	// (never loaded) by wildcard Post and Probe, under their chain locks.
	n atomic.Uint64
	_ [cacheLine - 8]byte
}

// core is the non-generic table; Table[M, R] converts at its boundary.
type core struct {
	_ cpu.CacheLinePad

	// Read-only after New.
	pairs  []pair
	shift  uint   // 64 - log2(len(pairs))
	mul    uint64 // hash multiplier; 0 in tests makes every key collide
	wildOK bool   // some wildcard is allowed: Arrive checks wild
	stamp  bool   // arrivals are stamped with per-source order (AnyTag allowed, no overtaking)
	cfg    Config

	_ cpu.CacheLinePad

	// wild counts posted wildcard receives plus wildcard Posts in
	// progress. Add(1) in postWild before its scan pairs with the Load
	// that Arrive makes under its chain lock: either Arrive sees it and
	// takes the slow path, or the scan sees Arrive's message.
	wild atomic.Int64
	// epoch counts wildcard Posts: Add in postWild (under wmu) gives a
	// wildcard receive its sequence number; Load in Post gives an exact
	// receive the number of wildcard posts before it.
	epoch atomic.Uint64
	// seed is set (Load, then Store once, under a chain lock) by the first
	// Insert, before it hands out a Slot; Load under a chain lock by every
	// write of an entry's head. While it is false no Slot exists, nothing
	// touches an entry without its chain lock, and heads are written with
	// plain stores; once true they are written atomically, so that Empty can
	// take a head with one compare-and-swap and no lock.
	seed atomic.Bool

	_ cpu.CacheLinePad

	wmu   sync.Mutex // guards the wildcard list; taken before any chain lock
	whead *node      // posted wildcard receives, in posting order
	wtail *node

	_ cpu.CacheLinePad

	freeMu sync.Mutex // guards free and slab; taken after chain locks, never before
	free   *node
	slab   []pair // overflow buckets not yet handed out

	_ cpu.CacheLinePad

	// arrivals are the stamp counters (tables that stamp only): up to
	// stripes of them, fewer for small tables; arrShift maps a source
	// hash to one (64 − log2(len(arrivals)), so 64 when there is one).
	arrivals []stripe
	arrShift uint

	// listed has one bit per chain (tables that allow wildcards only): set
	// before a message may be queued in the chain, cleared by a scan that
	// finds no message there, both with the chain locked, so that a
	// wildcard Post scans only chains that may hold messages. Or in list
	// pairs with the Load in scan as wild's Add and Load do (see list).
	listed []atomic.Uint64
}

func (t *core) init(cfg Config) {
	n := cfg.buckets()
	t.pairs = make([]pair, n)
	t.shift = uint(64 - bits.TrailingZeros(uint(n)))
	t.mul = hashMul
	t.cfg = cfg
	t.wildOK = !(cfg.NoAnySource && cfg.NoAnyTag)
	t.stamp = !cfg.NoAnyTag && !cfg.AllowOvertaking
	if t.wildOK {
		t.listed = make([]atomic.Uint64, (n+63)/64)
	}
	if t.stamp {
		// One stripe per four buckets, up to stripes: a small table
		// (one endpoint among many) keeps its memory small.
		k := min(stripes, max(1, n/4))
		t.arrivals = make([]stripe, k)
		t.arrShift = uint(64 - bits.TrailingZeros(uint(k)))
	}
}

// chain returns the first bucket of k's chain.
func (t *core) chain(k uint64) *pair {
	return &t.pairs[t.index(k)]
}

// index returns the number of k's chain.
func (t *core) index(k uint64) uint { return uint((k * t.mul) >> t.shift) }

// list sets h's bit in listed, if it is not set, with h locked. Arrive calls
// it before loading wild: a wildcard Post adds to wild before it loads the
// bits, so either Arrive sees the Post or the Post sees the bit. Once set,
// the bit stays until a scan, under the same lock, finds no message, so
// the steady state costs one test of meta.
func (t *core) list(h *pair, j uint) {
	if h.b.meta&metaListed != 0 || t.listed == nil {
		return
	}
	h.b.meta |= metaListed
	t.listed[j/64].Or(1 << (j % 64))
}

// stripeOf returns the arrival counter for k's (context, source).
func (t *core) stripeOf(k uint64) *atomic.Uint64 {
	return &t.arrivals[((k>>sourceShift)*hashMul)>>t.arrShift].n
}

func (t *core) newNode() *node {
	t.freeMu.Lock()
	n := t.free
	if n != nil {
		t.free = n.next
	}
	t.freeMu.Unlock()
	if n == nil {
		return new(node)
	}
	n.next = nil
	return n
}

func (t *core) freeNode(n *node) {
	n.item = nil // let the caller's object go
	t.freeMu.Lock()
	n.next = t.free
	t.free = n
	t.freeMu.Unlock()
}

// cacheNode frees n, a node of one of p's slots, into p's node cache, or to
// the free list when the cache is full. The chain must be locked.
func (t *core) cacheNode(p *pair, n *node) {
	if p.ncache == maxCached {
		t.freeNode(n)
		return
	}
	n.item = nil // let the caller's object go
	n.next = p.cached
	p.cached, p.ncache = n, p.ncache+1
}

// The FIFO of a slot is its head (entry.val, side.seq) followed by a
// circular list of nodes whose tail is side.tail. All of the following are
// called with the chain locked.

// promote moves the first node behind the head into the head, after Empty
// took the head. The head must be nil and more(i) set.
func (t *core) promote(p *pair, i int) {
	t.setHead(&p.b.ents[i], t.unlinkFirst(p, i))
}

// setHead writes e's head with the chain locked: a plain store while no
// Slot can exist, else an atomic one (see seed).
func (t *core) setHead(e *entry, v *opaque) {
	if t.seed.Load() {
		storeHead(e, v)
		return
	}
	// Safety: atomic.Pointer[opaque] is a single pointer word (TestLayout
	// checks its size and that this store is what Load then reads), so its
	// storage can be written as a *opaque; the compiler adds the write
	// barrier as for any pointer store. Every access to e.val is under the
	// chain lock while seed is false, so the lock orders this plain store
	// with every atomic Load.
	*(**opaque)(unsafe.Pointer(&e.val)) = v
}

// storeHead is setHead's atomic store, kept out of line so that setHead
// inlines.
//
//go:noinline
func storeHead(e *entry, v *opaque) { e.val.Store(v) }

// head returns slot i's head item, promoting if Empty took it; nil if the
// slot turned out to be empty.
func (t *core) head(p *pair, i int) *opaque {
	e := &p.b.ents[i]
	if v := e.val.Load(); v != nil {
		return v
	}
	if !p.more(i) {
		return nil
	}
	t.promote(p, i)
	return e.val.Load()
}

// take is popHead with the common cases first: while no Slot exists
// (seed unset) nothing can take a head without the chain's lock, so the
// head is there and moves with plain stores: the single item goes, or the
// first node behind it becomes the head (a FIFO of posted receives or of
// queued messages).
func (t *core) take(p *pair, i int) *opaque {
	if e := &p.b.ents[i]; !t.seed.Load() {
		if v := e.val.Load(); v != nil {
			var next *opaque
			if p.more(i) {
				next = t.unlinkFirst(p, i)
			}
			// Safety: as in setHead.
			*(**opaque)(unsafe.Pointer(&e.val)) = next
			return v
		}
	}
	return t.popHead(p, i)
}

// popHead removes and returns slot i's head; nil if the slot is empty.
func (t *core) popHead(p *pair, i int) *opaque {
	e := &p.b.ents[i]
	if !t.seed.Load() { // no Empty can race: plain stores
		v := t.head(p, i)
		if v == nil {
			return nil
		}
		var next *opaque
		if p.more(i) {
			next = t.unlinkFirst(p, i)
		}
		t.setHead(e, next)
		return v
	}
	for {
		v := t.head(p, i)
		if v == nil {
			return nil
		}
		if !p.more(i) {
			if e.val.CompareAndSwap(v, nil) {
				return v
			}
			continue // Empty took v first
		}
		if !e.val.CompareAndSwap(v, p.s[i].tail.next.item) {
			continue // Empty took v first
		}
		t.unlinkFirst(p, i)
		return v
	}
}

// unlinkFirst removes the first node behind slot i's head, makes its
// sequence number the head's, frees it and returns its item.
func (t *core) unlinkFirst(p *pair, i int) *opaque {
	s := &p.s[i]
	first := s.tail.next
	if first == s.tail {
		s.tail = nil
		p.setMore(i, false)
	} else {
		s.tail.next = first.next
	}
	s.seq = first.seq
	v := first.item
	t.cacheNode(p, first)
	return v
}

// fill makes the free slot (p, i) hold key k with the single item v.
func (t *core) fill(p *pair, i int, k uint64, v *opaque, kind uint32, seq uint64) {
	if invariants.Enabled {
		invariants.Check(!p.occupied(i), "match: filling an occupied slot")
	}
	p.b.ents[i].key = k
	p.setMeta(i, kind)
	p.s[i].seq = seq
	t.setHead(&p.b.ents[i], v)
}

// appendItem adds v behind the items of the occupied slot (p, i).
func (t *core) appendItem(p *pair, i int, v *opaque, seq uint64) {
	n := p.cached
	if n != nil {
		p.cached, p.ncache = n.next, p.ncache-1
	} else {
		n = t.newNode()
	}
	n.item, n.seq = v, seq
	s := &p.s[i]
	if s.tail == nil {
		n.next = n
	} else {
		n.next = s.tail.next
		s.tail.next = n
	}
	s.tail = n
	p.setMore(i, true)
}

// add queues v under key k in the chain h: behind the items of k's slot
// (p, i) if p is not nil, else in the free slot (fp, fi), else in a new
// overflow bucket linked after h.
func (t *core) add(h, p *pair, i int, fp *pair, fi int, k uint64, v *opaque, kind uint32, seq uint64) {
	if p != nil {
		if invariants.Enabled {
			invariants.Check(p.b.meta>>(uint(i)*metaBits)&metaRecv == kind, "match: mixing messages and receives in one FIFO")
		}
		t.appendItem(p, i, v, seq)
		return
	}
	if fp == nil {
		fp, fi = t.overflow(h), 0
	}
	t.fill(fp, fi, k, v, kind, seq)
}

// overflow links a new, empty bucket into the chain after h. Overflow
// buckets are cut from slabs as large as the smallest table, for the same
// cache-line alignment (a lone new(pair) is not aligned under -race), and
// are never freed: the chain keeps them for reuse.
func (t *core) overflow(h *pair) *pair {
	t.freeMu.Lock()
	if len(t.slab) == 0 {
		t.slab = make([]pair, min(len(t.pairs), minBuckets))
	}
	p := &t.slab[0]
	t.slab = t.slab[1:]
	t.freeMu.Unlock()
	p.b.ovf = h.b.ovf
	h.b.ovf = p
	return p
}

// removeItem removes v from slot i's FIFO wherever it is; false if absent.
func (t *core) removeItem(p *pair, i int, v *opaque) bool {
	for {
		h := t.head(p, i)
		if h == nil {
			return false
		}
		if h != v {
			break
		}
		if t.popHead(p, i) == v {
			return true
		}
	}
	s := &p.s[i]
	if s.tail == nil {
		return false
	}
	prev := s.tail
	for n := s.tail.next; ; prev, n = n, n.next {
		if n.item == v {
			if n == prev { // the only node
				s.tail = nil
				p.setMore(i, false)
			} else {
				prev.next = n.next
				if n == s.tail {
					s.tail = prev
				}
			}
			t.cacheNode(p, n)
			return true
		}
		if n == s.tail {
			return false
		}
	}
}
