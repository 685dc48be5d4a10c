package match

import "unsafe"

// Table is a concurrent MPI matching table for arrived messages (*M) and
// posted receives (*R). Both are owned by the caller; the table only holds
// the pointers and hands each one back exactly once (matched, probed without
// removal, cancelled or emptied). All methods are safe for concurrent use.
//
// Create tables with New; a Table must not be copied after first use.
//
// Blocking: no method yields a fiber or parks on the fast path. Exact-key
// operations hold one bucket's spinlock for a few dozen instructions
// (spinning, and calling runtime.Gosched now and then, if it is taken).
// While a wildcard receive is posted, Arrive, wildcard Post and wildcard
// Cancel also take a sync.Mutex shared by the table; from a fiber that can
// block the worker for as long as a wildcard Post's scan.
type Table[M, R any] struct {
	c core
}

// Item is a message or a posted receive: exactly one field is non-nil. It is
// what Dang et al.'s Insert stores and returns.
type Item[M, R any] struct {
	Msg  *M
	Recv *R
}

// Slot is the address of an entry, returned by Insert so that Empty is one
// atomic instruction. The zero Slot is valid and holds nothing.
type Slot struct {
	e *entry
	v *opaque
}

// New returns an empty table configured by cfg. The error matches ErrConfig
// if cfg is invalid.
func New[M, R any](cfg Config) (*Table[M, R], error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	t := new(Table[M, R])
	t.c.init(cfg)
	return t, nil
}

// Config returns the configuration the table was created with.
func (t *Table[M, R]) Config() Config { return t.c.cfg }

// Safety (for the four conversions below): *M and *R are stored as *opaque,
// a pointer to a zero-size type, and converted back to the same type they
// came from, decided by the key's FIFO kind. The pointer is kept in a
// pointer-typed word, so the garbage collector keeps the object alive and
// finds it whatever the static type; nothing is ever read through *opaque.

func fromMsg[M any](m *M) *opaque  { return (*opaque)(unsafe.Pointer(m)) }
func fromRecv[R any](r *R) *opaque { return (*opaque)(unsafe.Pointer(r)) }
func toMsg[M any](p *opaque) *M    { return (*M)(unsafe.Pointer(p)) }
func toRecv[R any](p *opaque) *R   { return (*R)(unsafe.Pointer(p)) }

// Arrive matches a message that arrived with the exact key k. If a posted
// receive matches, the earliest posted one (exact or wildcard) is removed
// and returned with ok true; otherwise m is queued as unexpected, behind any
// earlier message with the same key, and ok is false.
//
// The error is ErrWildcardKey if k holds a wildcard, ErrNilValue if m is nil;
// the table is then unchanged. While no wildcard receive is posted Arrive
// takes only its bucket's spinlock; while one is, it serialises with the
// other wildcard paths on the table's mutex.
func (t *Table[M, R]) Arrive(k Key, m *M) (r *R, ok bool, err error) {
	if k.IsWildcard() {
		return nil, false, ErrWildcardKey
	}
	if m == nil {
		return nil, false, ErrNilValue
	}
	p, ok := t.c.arrive(k.v, fromMsg(m))
	return toRecv[R](p), ok, nil
}

// TryArrive is Arrive for a message that need not be queued: if a posted
// receive matches k (by the same rules as Arrive), it is removed and
// returned with ok true; otherwise the table is unchanged and ok is false.
// A sender that can reach the receiver's table (both in one process) uses it
// to hand data straight to a posted receive, and makes and Arrives a real
// message only when none is posted. The error is ErrWildcardKey if k holds a
// wildcard.
func (t *Table[M, R]) TryArrive(k Key) (r *R, ok bool, err error) {
	if k.IsWildcard() {
		return nil, false, ErrWildcardKey
	}
	p, ok := t.c.arrive(k.v, nil)
	return toRecv[R](p), ok, nil
}

// Vacant is the hold Vacate took of an exact key's chain; Release lets it
// go. Release it once, and only a Vacant that Vacate returned with true.
type Vacant struct{ h *pair }

// Release ends the hold: posts and arrivals of the key go on.
func (v Vacant) Release() { v.h.b.unlock() }

// Vacate reports whether nothing is queued or posted under the exact key k
// and no wildcard receive is posted, and if so holds k's chain until
// Release: no receive or message of k can come meanwhile. A caller that
// takes a message of k from a transport itself during the hold matches it
// as a receive posted and matched at that moment would: no receive posted
// before it is passed over, and no message of k that arrived before it is
// left behind. It returns false, holding nothing, for a wildcard key.
func (t *Table[M, R]) Vacate(k Key) (Vacant, bool) {
	if k.IsWildcard() {
		return Vacant{}, false
	}
	h := t.c.chain(k.v)
	h.b.lock()
	// wild also counts wildcard Posts under way: one that adds to it after
	// this load comes after the hold.
	if t.c.wild.Load() != 0 {
		h.b.unlock()
		return Vacant{}, false
	}
	if p, _, _, _ := find(h, k.v); p != nil {
		h.b.unlock()
		return Vacant{}, false
	}
	return Vacant{h}, true
}

// TryArriveRun is TryArrive for len(rs) messages that arrived one after
// the other with the same exact key k, under one lock of k's bucket: it
// removes the receives posted for k, the earliest first, one per message,
// into rs, and returns how many it took, n. The first n messages go to
// rs[:n] in order, as n calls of TryArrive would give them; the rest find
// no receive and the caller queues them as before. While a wildcard
// receive is posted it matches the first message alone, as TryArrive
// (n is 0 or 1): the caller then goes message by message, so that each
// sees the wildcards in order. The error is ErrWildcardKey if k holds a
// wildcard.
func (t *Table[M, R]) TryArriveRun(k Key, rs []*R) (n int, err error) {
	if k.IsWildcard() {
		return 0, ErrWildcardKey
	}
	// Safety: as for toRecv, element by element: a *R and a *opaque are
	// both one pointer word, so rs's backing array is len(rs) pointer
	// words either way, and the garbage collector finds them as pointers
	// under either type. The view does not outlive the call.
	return t.c.arriveRun(k.v, unsafe.Slice((**opaque)(unsafe.Pointer(unsafe.SliceData(rs))), len(rs))), nil
}

// Post matches a receive with key k, which may hold AnySource and AnyTag.
// If an unexpected message matches, it is removed and returned with its
// exact key and ok true: for a given source, the earliest arrived matching
// message (MPI non-overtaking; among sources the choice is open). Otherwise
// r is queued as posted and ok is false; a later Arrive or Cancel hands it
// back.
//
// The error is ErrWildcardNotAllowed if k holds a wildcard the Config
// excludes, ErrNilValue if r is nil. A wildcard Post scans every chain that
// may hold a message (like an MPI queue, it is linear in what is pending)
// and serialises with the other wildcard paths; an exact Post costs what
// Arrive does.
func (t *Table[M, R]) Post(k Key, r *R) (m *M, mk Key, ok bool, err error) {
	if r == nil {
		return nil, Key{}, false, ErrNilValue
	}
	if k.IsWildcard() {
		if err := t.c.allowed(k); err != nil {
			return nil, Key{}, false, err
		}
		p, key, ok := t.c.postWild(k, fromRecv(r))
		return toMsg[M](p), Key{key}, ok, nil
	}
	p := t.c.post(k.v, fromRecv(r))
	if p == nil {
		return nil, Key{}, false, nil
	}
	return toMsg[M](p), k, true, nil
}

// Probe reports the message that Post(k, ...) would match now, without
// removing it. Under concurrency the answer may be stale by the time it is
// used: another Post may take the message. The errors are Post's.
func (t *Table[M, R]) Probe(k Key) (m *M, mk Key, ok bool, err error) {
	if k.IsWildcard() {
		if err := t.c.allowed(k); err != nil {
			return nil, Key{}, false, err
		}
		p, key, ok := t.c.probeWild(k)
		return toMsg[M](p), Key{key}, ok, nil
	}
	p := t.c.probe(k.v)
	if p == nil {
		return nil, Key{}, false, nil
	}
	return toMsg[M](p), k, true, nil
}

// Cancel removes the receive r posted with key k if no message has matched
// it yet, and reports whether it did. After Cancel returns true the table no
// longer holds r; after false, r was matched (or never posted with k).
func (t *Table[M, R]) Cancel(k Key, r *R) bool {
	if r == nil {
		return false
	}
	if k.IsWildcard() {
		return t.c.cancelWild(k, fromRecv(r))
	}
	return t.c.cancel(k.v, fromRecv(r))
}

// Leads reports whether the receive r, posted with the exact key k, is the
// first receive queued under k while no wildcard receive is posted: then the
// next message to arrive under k goes to r, unless r is cancelled first. A
// receiver-driven rendezvous offers r's buffer to the sender only then.
func (t *Table[M, R]) Leads(k Key, r *R) bool {
	if r == nil || k.IsWildcard() {
		return false
	}
	return t.c.leads(k.v, fromRecv(r))
}

// Insert is Dang et al.'s primitive (Dang et al. 2016b §2.2, §3.2): if nothing is queued
// under the exact key k it stores it and returns stored true; otherwise it
// stores nothing and returns the head of k's queue in cur. Either way s is
// the entry holding the returned item, for Empty. With it, a receiver and an
// arriving message find each other whichever comes first:
//
//	cur, s, stored, _ := t.Insert(k, match.Item[M, R]{Recv: r})
//	if !stored && cur.Msg != nil && t.Empty(s) {
//		// the message cur.Msg is ours
//	}
//
// Insert does not see wildcard receives, so it needs a table whose Config
// sets NoAnySource and NoAnyTag (else ErrNeedsHints). It may be mixed with
// Arrive, Post, Probe and Cancel on such a table. The other errors are
// ErrWildcardKey and ErrNilValue (it must hold exactly one pointer).
func (t *Table[M, R]) Insert(k Key, it Item[M, R]) (cur Item[M, R], s Slot, stored bool, err error) {
	if t.c.wildOK {
		return cur, s, false, ErrNeedsHints
	}
	if k.IsWildcard() {
		return cur, s, false, ErrWildcardKey
	}
	var v *opaque
	var kind uint32
	switch {
	case it.Msg != nil && it.Recv == nil:
		v, kind = fromMsg(it.Msg), kindMsg
	case it.Recv != nil && it.Msg == nil:
		v, kind = fromRecv(it.Recv), kindRecv
	default:
		return cur, s, false, ErrNilValue
	}
	e, c, ck, stored := t.c.insert(k.v, v, kind)
	if ck == kindRecv {
		cur.Recv = toRecv[R](c)
	} else {
		cur.Msg = toMsg[M](c)
	}
	return cur, Slot{e: e, v: c}, stored, nil
}

// Empty removes the item Insert returned in s, if it is still there, with
// one atomic compare-and-swap (Dang et al.'s single store, made safe against a
// concurrent Arrive or Post taking the same item). It reports whether this
// call removed it: true means the caller now owns the item; false means
// someone else took it first. Items queued behind it under the same key move
// up at the next operation on that key.
//
// A Slot is good until its item has been handed back (by this Empty or by a
// match). Do not keep one longer: Empty compares the item's pointer, so if
// the same object were queued again into the same entry, a stale Slot would
// take it.
func (t *Table[M, R]) Empty(s Slot) bool {
	if s.e == nil {
		return false
	}
	return s.e.val.CompareAndSwap(s.v, nil)
}

// allowed checks a wildcard key against the Config's hints.
func (t *core) allowed(k Key) error {
	if t.cfg.NoAnySource && k.v&sourceField == sourceField {
		return ErrWildcardNotAllowed
	}
	if t.cfg.NoAnyTag && k.v&tagField == tagField {
		return ErrWildcardNotAllowed
	}
	return nil
}
