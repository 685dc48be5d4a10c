package datatype

import "github.com/fibermpi/fibermpi/internal/invariants"

// A layout compiles to a tree of items. An item is either a leaf, count runs
// of n bytes at off, off+stride, off+2*stride, ...; or a loop, count
// repetitions of its body at the same strides, where n is the packed size of
// one repetition of the body. Items are packed in order, repetitions in
// order. The tree has at most one node per constructor argument (a Vector is
// one leaf however large its count), so memory stays bounded for any count;
// small repetitions are unrolled and adjacent runs merged, so a packing loop
// does little work per run.
//
//	Vector(5000, 1, 2, float32)          → leaf{off 0, count 5000, stride 8, n 4}
//	Contiguous(3, Vector(2, 1, 2, f32))  → leaf{off 0, count 6, stride 8, n 4}
//	Vector(100, 1, 3, Vector(2, 1, 2, f32))
//	                                     → loop{count 100, stride 48, n 8,
//	                                            body: leaf{off 0, count 2, stride 8, n 4}}
type item struct {
	off    int    // offset of the first repetition, bytes from the instance origin
	count  int    // repetitions, ≥ 1
	stride int    // bytes between repetitions (n for a single run)
	n      int    // leaf: bytes per run; loop: packed bytes per body repetition; ≥ 1
	body   []item // nil for a leaf; shared, never modified once built
	// lo and hi bound the bytes one repetition touches, relative to off:
	// [0, n) for a leaf, the body's true bounds for a loop. Keeping them
	// here makes bounds a walk of one list, not of the whole tree (bodies
	// are shared, so the tree can be far larger than its storage).
	lo, hi int
}

// unrollLimit is the largest number of items a repetition is unrolled into;
// larger repetitions become loop items.
const unrollLimit = 16

func (it *item) leaf() bool { return it.body == nil }

// packed returns the packed bytes of the whole item.
func (it *item) packed() int { return it.count * it.n }

// itemsSize returns the packed bytes of an item list.
func itemsSize(items []item) int {
	s := 0
	for i := range items {
		s += items[i].packed()
	}
	return s
}

// shift returns items displaced by d bytes (a new list unless d is 0).
func shift(items []item, d int) []item {
	if d == 0 || len(items) == 0 {
		return items
	}
	out := make([]item, len(items))
	copy(out, items)
	for i := range out {
		out[i].off += d
	}
	return out
}

// repeat returns reps repetitions of items, stride bytes apart.
func repeat(items []item, reps, stride int) []item {
	switch {
	case reps == 0 || len(items) == 0:
		return nil
	case reps == 1:
		return items
	}
	if len(items) == 1 {
		it := items[0]
		switch {
		case it.leaf() && it.count == 1:
			// One run repeated: a strided leaf, or a longer run.
			if stride == it.n {
				return []item{run(it.off, it.n*reps)}
			}
			return []item{{off: it.off, count: reps, stride: stride, n: it.n, hi: it.n}}
		case it.count*it.stride == stride:
			// The repetition continues the item's own pattern.
			it.count *= reps
			return []item{it}
		case !it.leaf() && it.count == 1:
			return []item{{off: it.off, count: reps, stride: stride, n: it.n, body: it.body, lo: it.lo, hi: it.hi}}
		}
	}
	if reps*len(items) <= unrollLimit {
		out := make([]item, 0, reps*len(items))
		for r := range reps {
			for _, it := range items {
				it.off += r * stride
				out = appendItem(out, it)
			}
		}
		return out
	}
	lo, hi, _ := trueBounds(items)
	return []item{{off: 0, count: reps, stride: stride, n: itemsSize(items), body: items, lo: lo, hi: hi}}
}

// run returns a leaf of one run of n bytes at off.
func run(off, n int) item {
	return item{off: off, count: 1, stride: n, n: n, hi: n}
}

// appendItem appends it to list, merging it into the last item when the two
// make one run or one strided leaf.
func appendItem(list []item, it item) []item {
	if len(list) == 0 || !it.leaf() || it.count != 1 {
		return append(list, it)
	}
	last := &list[len(list)-1]
	if !last.leaf() {
		return append(list, it)
	}
	switch {
	case last.count == 1 && it.off == last.off+last.n:
		// Two adjacent runs: one longer run.
		last.n += it.n
		last.stride = last.n
		last.hi = last.n
	case last.count == 1 && it.n == last.n:
		// Two runs of one length: a strided leaf.
		last.count = 2
		last.stride = it.off - last.off
	case last.count > 1 && it.n == last.n && it.off == last.off+last.count*last.stride:
		last.count++
	default:
		return append(list, it)
	}
	return list
}

// concat joins item lists in order, merging at the seams.
func concat(lists ...[]item) []item {
	n := 0
	for _, l := range lists {
		n += len(l)
	}
	if n == 0 {
		return nil
	}
	out := make([]item, 0, n)
	for _, l := range lists {
		for _, it := range l {
			out = appendItem(out, it)
		}
	}
	return out
}

// trueBounds returns the lowest and one past the highest byte offset the
// items touch; ok is false if they are empty.
func trueBounds(items []item) (lo, hi int, ok bool) {
	for i := range items {
		it := &items[i]
		span := (it.count - 1) * it.stride
		l, h := it.off+it.lo+min(0, span), it.off+it.hi+max(0, span)
		if !ok || l < lo {
			lo = l
		}
		if !ok || h > hi {
			hi = h
		}
		ok = true
	}
	return lo, hi, ok
}

// finish derives the properties that follow from the compiled items, and
// in a checking build verifies that the items agree with the bounds the
// constructor computed.
func (d *desc) finish() {
	d.empty = d.size == 0
	d.contiguous = d.size > 0 && len(d.items) == 1 && d.items[0].leaf() && d.items[0].count == 1 &&
		d.items[0].off == d.lb && d.size == d.ub-d.lb
	if invariants.Enabled {
		lo, hi, ok := trueBounds(d.items)
		invariants.Check(ok == !d.empty, "datatype: compiled items disagree with emptiness")
		invariants.Check(!ok || (lo == d.tlb && hi == d.tub), "datatype: compiled items disagree with true bounds")
		invariants.Check(itemsSize(d.items) == d.size, "datatype: compiled items disagree with size")
	}
}
