package match

import "github.com/fibermpi/fibermpi/internal/invariants"

// Operations on exact keys, the table's fast path.

// arrive is Table.Arrive on an exact key.
func (t *core) arrive(k uint64, m *opaque) (*opaque, bool) {
	j := t.index(k)
	h := &t.pairs[j]
	h.b.lock()
	t.list(h, j) // before the load of wild: see list
	// wild stays 0 on a table that allows no wildcard: one load either way.
	if t.wild.Load() != 0 {
		h.b.unlock()
		return t.arriveWild(h, j, k, m)
	}
	for {
		p, i, fp, fi := find(h, k)
		if p != nil && p.recv(i) {
			if r := t.take(p, i); r != nil {
				h.b.unlock()
				return r, true
			}
			continue // Empty emptied the slot under us: look again
		}
		if m != nil { // nil: TryArrive, which queues nothing
			t.queueMsg(h, p, i, fp, fi, k, m)
		}
		h.b.unlock()
		return nil, false
	}
}

// arriveRun is TryArriveRun: arrive for len(out) messages with key k, none
// of them queued, under one hold of the chain lock.
func (t *core) arriveRun(k uint64, out []*opaque) int {
	if len(out) == 0 {
		return 0
	}
	j := t.index(k)
	h := &t.pairs[j]
	h.b.lock()
	t.list(h, j) // as arrive
	if t.wild.Load() != 0 {
		// A posted wildcard may come before k's receives: the first
		// message alone, as TryArrive; the caller goes on one by one.
		h.b.unlock()
		r, ok := t.arriveWild(h, j, k, nil)
		if !ok {
			return 0
		}
		out[0] = r
		return 1
	}
	n := 0
	if p, i, _, _ := find(h, k); p != nil && p.recv(i) {
		// One FIFO of receives: take its items in order. take returns nil
		// once the FIFO is empty; nothing can refill the slot meanwhile
		// (every insertion holds the chain lock).
		for n < len(out) {
			r := t.take(p, i)
			if r == nil {
				break
			}
			out[n] = r
			n++
		}
	}
	h.b.unlock()
	return n
}

// queueMsg queues m as unexpected under k, stamping its arrival order.
func (t *core) queueMsg(h, p *pair, i int, fp *pair, fi int, k uint64, m *opaque) {
	var seq uint64
	if t.stamp {
		seq = t.stripeOf(k).Add(1)
	}
	switch {
	case p == nil && fp != nil: // the common case, inlined
		t.fill(fp, fi, k, m, kindMsg, seq)
	case p != nil: // behind the messages already queued under k
		if invariants.Enabled {
			invariants.Check(!p.recv(i), "match: queueing a message among receives")
		}
		t.appendItem(p, i, m, seq)
	default:
		t.add(h, p, i, fp, fi, k, m, kindMsg, seq)
	}
}

// post is Table.Post on an exact key.
func (t *core) post(k uint64, r *opaque) *opaque {
	h := t.chain(k)
	h.b.lock()
	for {
		p, i, fp, fi := find(h, k)
		if p != nil && !p.recv(i) {
			if m := t.take(p, i); m != nil {
				h.b.unlock()
				return m
			}
			continue
		}
		// epoch stays 0 on a table that allows no wildcard.
		switch {
		case p == nil && fp != nil: // the common case, inlined
			t.fill(fp, fi, k, r, kindRecv, t.epoch.Load())
		case p != nil: // behind the receives already posted under k
			if invariants.Enabled {
				invariants.Check(p.recv(i), "match: posting a receive among messages")
			}
			t.appendItem(p, i, r, t.epoch.Load())
		default:
			t.add(h, p, i, fp, fi, k, r, kindRecv, t.epoch.Load())
		}
		h.b.unlock()
		return nil
	}
}

// probe is Table.Probe on an exact key.
func (t *core) probe(k uint64) *opaque {
	h := t.chain(k)
	h.b.lock()
	var m *opaque
	if p, i, _, _ := find(h, k); p != nil && !p.recv(i) {
		m = t.head(p, i)
	}
	h.b.unlock()
	return m
}

// cancel is Table.Cancel on an exact key.
func (t *core) cancel(k uint64, r *opaque) bool {
	h := t.chain(k)
	h.b.lock()
	ok := false
	if p, i, _, _ := find(h, k); p != nil && p.recv(i) {
		ok = t.removeItem(p, i, r)
	}
	h.b.unlock()
	return ok
}

// leads is Leads: r heads k's receive FIFO and no wildcard receive is
// posted (or being posted; wild counts both).
func (t *core) leads(k uint64, r *opaque) bool {
	h := t.chain(k)
	h.b.lock()
	ok := false
	if p, i, _, _ := find(h, k); p != nil && p.recv(i) && t.head(p, i) == r {
		ok = t.wild.Load() == 0
	}
	h.b.unlock()
	return ok
}

// insert is Dang et al.'s Insert: store v under k if k holds nothing, else
// report k's head. The returned slot is where the head (or v) is.
func (t *core) insert(k uint64, v *opaque, kind uint32) (e *entry, cur *opaque, curKind uint32, stored bool) {
	h := t.chain(k)
	h.b.lock()
	defer h.b.unlock()
	if !t.seed.Load() {
		t.seed.Store(true) // before any Slot exists: see seed
	}
	p, i, fp, fi := find(h, k)
	if p != nil {
		if c := t.head(p, i); c != nil {
			var ck uint32 = kindMsg
			if p.recv(i) {
				ck = kindRecv
			}
			return &p.b.ents[i], c, ck, false
		}
		fp, fi = p, i // Empty emptied k's slot after find saw it
	}
	if fp == nil {
		fp, fi = t.overflow(h), 0
	}
	t.fill(fp, fi, k, v, kind, 0)
	return &fp.b.ents[fi], v, kind, true
}
