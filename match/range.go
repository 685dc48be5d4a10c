package match

// Range calls fn for every item in the table, a queued message (m non-nil)
// or a posted receive (r non-nil), with the key it is queued under (a
// wildcard key for a wildcard receive), until fn returns false. Items of one
// key come in their queue order; the order across keys is unspecified.
//
// Range is for observers (a deadlock report, a sweep that cancels every
// pending receive), not for the message path: it locks every chain of the
// table in turn, and the wildcard list, so it costs time in proportion to
// the table's size. It sees each chain at one instant, not the whole table
// at once: items matched or added meanwhile may be missed or seen. fn runs
// with no lock held and may call the table (Cancel what it is given, for
// instance); an item it is given may have been matched since.
func (t *Table[M, R]) Range(fn func(k Key, m *M, r *R) bool) {
	var buf []rangeItem
	t.c.wmu.Lock()
	for w := t.c.whead; w != nil; w = w.next {
		buf = append(buf, rangeItem{key: w.key, v: w.item, recv: true})
	}
	t.c.wmu.Unlock()
	if !t.emit(buf, fn) {
		return
	}
	for j := range t.c.pairs {
		buf = t.c.collect(&t.c.pairs[j], buf[:0])
		if !t.emit(buf, fn) {
			return
		}
	}
}

// rangeItem is one item Range found.
type rangeItem struct {
	key  uint64
	v    *opaque
	recv bool
}

func (t *Table[M, R]) emit(items []rangeItem, fn func(Key, *M, *R) bool) bool {
	for _, it := range items {
		var ok bool
		if it.recv {
			ok = fn(Key{it.key}, nil, toRecv[R](it.v))
		} else {
			ok = fn(Key{it.key}, toMsg[M](it.v), nil)
		}
		if !ok {
			return false
		}
	}
	return true
}

// collect appends the items of the chain headed by h to buf, in queue order
// per key, with the chain locked.
func (t *core) collect(h *pair, buf []rangeItem) []rangeItem {
	h.b.lock()
	defer h.b.unlock()
	for q := h; q != nil; q = q.b.ovf {
		for i := 0; i < slots; i++ {
			if !q.occupied(i) {
				continue
			}
			k, recv := q.b.ents[i].key, q.recv(i)
			if v := t.head(q, i); v != nil {
				buf = append(buf, rangeItem{key: k, v: v, recv: recv})
			}
			if tail := q.s[i].tail; q.more(i) && tail != nil {
				for n := tail.next; ; n = n.next {
					buf = append(buf, rangeItem{key: k, v: n.item, recv: recv})
					if n == tail {
						break
					}
				}
			}
		}
	}
	return buf
}
