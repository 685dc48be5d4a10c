package match

import mbits "math/bits"

// The wildcard paths. They are taken only while a wildcard receive is
// posted (or being posted), and they serialise on wmu: the MPI-queue cost
// that wildcards have always had, paid only by programs that use them.

// arriveWild is Arrive while wild > 0: the earliest posted matching
// receive, exact or wildcard, wins; the sequence numbers decide.
func (t *core) arriveWild(h *pair, j uint, k uint64, m *opaque) (*opaque, bool) {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	h.b.lock()
	defer h.b.unlock()
	t.list(h, j) // a Probe may have cleared it since arrive set it

	p, i, fp, fi := find(h, k)
	haveExact := false
	var exactSeq uint64
	if p != nil && p.recv(i) && t.head(p, i) != nil {
		haveExact, exactSeq = true, p.s[i].seq
	}
	var prev, w *node
	for w = t.whead; w != nil; prev, w = w, w.next {
		if (Key{w.key}).Matches(Key{k}) {
			break
		}
	}
	// An exact receive whose sequence number is below a wildcard's was
	// posted before it; on a tie the wildcard was posted first.
	if w != nil && (!haveExact || w.seq <= exactSeq) {
		t.unlinkWild(prev, w)
		r := w.item
		t.freeNode(w)
		return r, true
	}
	if haveExact {
		return t.popHead(p, i), true
	}
	if m != nil { // nil: TryArrive, which queues nothing
		t.queueMsg(h, p, i, fp, fi, k, m)
	}
	return nil, false
}

func (t *core) unlinkWild(prev, w *node) {
	if prev == nil {
		t.whead = w.next
	} else {
		prev.next = w.next
	}
	if t.wtail == w {
		t.wtail = prev
	}
	t.wild.Add(-1)
}

// found is a matching unexpected message seen by scan.
type found struct {
	h   *pair // chain head, to lock
	p   *pair
	i   int
	m   *opaque
	key uint64
	seq uint64
}

// scan looks at every listed chain (every chain that may hold a message)
// for the unexpected message that a wildcard receive k should get: the
// lowest arrival stamp among the matching heads.
// Stamps count per source stripe, so within one source this is the
// earliest arrival (non-overtaking); across sources MPI leaves the choice
// open. Each chain is locked while it is read.
func (t *core) scan(k Key) (best found, ok bool) {
	keep := ^k.wildMask()
	want := k.v & keep
	for w := range t.listed {
		for bits := t.listed[w].Load(); bits != 0; bits &= bits - 1 {
			bit := bits & -bits
			h := &t.pairs[w*64+mbits.TrailingZeros64(bits)]
			h.b.lock()
			msgs := false
			for q := h; q != nil; q = q.b.ovf {
				for i := 0; i < slots; i++ {
					if q.recv(i) || !q.occupied(i) {
						continue
					}
					msgs = true
					if q.b.ents[i].key&keep != want {
						continue
					}
					m := t.head(q, i)
					if m == nil {
						continue
					}
					if seq := q.s[i].seq; !ok || seq < best.seq {
						best = found{h: h, p: q, i: i, m: m, key: q.b.ents[i].key, seq: seq}
						ok = true
					}
				}
			}
			if !msgs { // nothing for any wildcard here: unlist the chain
				h.b.meta &^= metaListed
				t.listed[w].And(^bit)
			}
			h.b.unlock()
		}
	}
	return best, ok
}

// postWild is Post with a wildcard key.
func (t *core) postWild(k Key, r *opaque) (*opaque, uint64, bool) {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	t.wild.Add(1) // before the scan: see the comment on wild
	seq := t.epoch.Add(1)
	for {
		f, ok := t.scan(k)
		if !ok {
			break
		}
		// Take f if it is still the head of its key. Messages cannot be
		// added meanwhile (arrivals wait for wmu), only taken by exact
		// receives, so this loop ends.
		f.h.b.lock()
		if f.p.occupied(f.i) && f.p.b.ents[f.i].key == f.key && !f.p.recv(f.i) && t.head(f.p, f.i) == f.m {
			t.popHead(f.p, f.i)
			f.h.b.unlock()
			t.wild.Add(-1)
			return f.m, f.key, true
		}
		f.h.b.unlock()
	}
	n := t.newNode()
	n.item, n.seq, n.key = r, seq, k.v
	if t.wtail == nil {
		t.whead = n
	} else {
		t.wtail.next = n
	}
	t.wtail = n
	return nil, 0, false
}

// probeWild is Probe with a wildcard key.
func (t *core) probeWild(k Key) (*opaque, uint64, bool) {
	f, ok := t.scan(k)
	return f.m, f.key, ok
}

// cancelWild is Cancel with a wildcard key.
func (t *core) cancelWild(k Key, r *opaque) bool {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	var prev *node
	for w := t.whead; w != nil; prev, w = w, w.next {
		if w.item == r && w.key == k.v {
			t.unlinkWild(prev, w)
			t.freeNode(w)
			return true
		}
	}
	return false
}
