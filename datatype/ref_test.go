package datatype

import (
	"fmt"
	"math/rand/v2"
)

// This file holds the reference: a layout's typemap computed element by
// element straight from the constructor definitions (as in the MPI
// standard), without the compiled runs, and packing by copying one element
// at a time. Everything the package computes is checked against it.

// refRun is one element of a typemap: n bytes at off.
type refRun struct{ off, n int }

// refLayout is the reference view of a layout.
type refLayout struct {
	runs          []refRun
	lb, ub, align int
}

func (r *refLayout) extent() int { return r.ub - r.lb }

func (r *refLayout) size() int {
	s := 0
	for _, x := range r.runs {
		s += x.n
	}
	return s
}

// trueBounds returns the touched byte range, or (0, 0) if empty.
func (r *refLayout) trueBounds() (lo, hi int) {
	for i, x := range r.runs {
		if i == 0 || x.off < lo {
			lo = x.off
		}
		if i == 0 || x.off+x.n > hi {
			hi = x.off + x.n
		}
	}
	return lo, hi
}

// refOf computes the reference layout of t from its constructor arguments.
func refOf(t Type) *refLayout {
	d := t.d
	out := &refLayout{align: 1}
	have := false
	// place adds a copy of child c at byte displacement disp.
	place := func(c *refLayout, disp int) {
		for _, x := range c.runs {
			out.runs = append(out.runs, refRun{x.off + disp, x.n})
		}
		if !have || disp+c.lb < out.lb {
			out.lb = disp + c.lb
		}
		if !have || disp+c.ub > out.ub {
			out.ub = disp + c.ub
		}
		have = true
		out.align = max(out.align, c.align)
	}
	if d.kind != kElem && d.kind != kStruct {
		out.align = refOf(d.children[0]).align
	}
	switch d.kind {
	case kElem:
		return &refLayout{runs: []refRun{{0, d.el.size}}, lb: 0, ub: d.el.size, align: d.el.align}
	case kContiguous:
		c := refOf(d.children[0])
		for i := range d.count {
			place(c, i*c.extent())
		}
	case kVector, kHvector:
		c := refOf(d.children[0])
		stride := d.stride
		if d.kind == kVector {
			stride *= c.extent()
		}
		for i := range d.count {
			for j := range d.blocklen {
				place(c, i*stride+j*c.extent())
			}
		}
	case kIndexed, kIndexedBlock:
		c := refOf(d.children[0])
		for i, disp := range d.displs {
			bl := d.blocklen
			if d.kind == kIndexed {
				bl = d.blocklens[i]
			}
			for j := range bl {
				place(c, (disp+j)*c.extent())
			}
		}
	case kSubarray:
		c := refOf(d.children[0])
		n := len(d.sizes)
		idx := make([]int, n)
		total := 1
		for _, s := range d.subsizes {
			total *= s
		}
		for range total {
			off := 0
			for k := range n {
				stride := c.extent()
				for _, s := range d.sizes[k+1:] {
					stride *= s
				}
				off += (d.starts[k] + idx[k]) * stride
			}
			place(c, off)
			for k := n - 1; k >= 0; k-- {
				idx[k]++
				if idx[k] < d.subsizes[k] {
					break
				}
				idx[k] = 0
			}
		}
		whole := c.extent()
		for _, s := range d.sizes {
			whole *= s
		}
		out.lb, out.ub = 0, whole
		out.align = c.align
		return out
	case kStruct:
		for i, ct := range d.children {
			c := refOf(ct)
			out.align = max(out.align, c.align)
			for j := range d.blocklens[i] {
				place(c, d.displs[i]+j*c.extent())
			}
		}
		if ext := out.ub - out.lb; ext%out.align != 0 {
			out.ub += out.align - ext%out.align
		}
	case kResized:
		c := refOf(d.children[0])
		c.lb, c.ub = d.resLB, d.resLB+d.resExtent
		return c
	default:
		panic(fmt.Sprintf("unknown kind %d", d.kind))
	}
	return out
}

// refPack packs count instances element by element.
func refPack(dst, src []byte, count int, r *refLayout) int {
	p := 0
	for i := range count {
		for _, x := range r.runs {
			o := i*r.extent() + x.off
			p += copy(dst[p:p+x.n], src[o:o+x.n])
		}
	}
	return p
}

// refUnpack unpacks count instances element by element.
func refUnpack(dst, src []byte, count int, r *refLayout) int {
	p := 0
	for i := range count {
		for _, x := range r.runs {
			o := i*r.extent() + x.off
			p += copy(dst[o:o+x.n], src[p:p+x.n])
		}
	}
	return p
}

// Element types used by the generators.
type pair struct {
	A float64
	B int32
}

type triple struct {
	X, Y, Z float32
}

var genElems = []Type{
	Byte, Int16, Float32, Float64, Complex128,
	MustOf[pair](), MustOf[triple](), MustOf[[3]uint16](),
}

// source is the randomness a generator draws from: a PRNG in tests, the
// fuzzer's bytes in the fuzz target.
type source interface {
	IntN(n int) int
}

// bytesSource draws numbers from a byte string, then zeros.
type bytesSource struct{ b []byte }

func (s *bytesSource) IntN(n int) int {
	if len(s.b) == 0 {
		return 0
	}
	v := int(s.b[0])
	if len(s.b) > 1 {
		v |= int(s.b[1]) << 8
		s.b = s.b[2:]
	} else {
		s.b = s.b[1:]
	}
	return v % n
}

var _ source = (*rand.Rand)(nil)

// genType builds a random nested layout; depth bounds the nesting. Sizes
// stay small so the reference can expand it. Some layouts have negative
// displacements inside; the result may still have a negative true lower
// bound, which callers shift with anchor.
func genType(r source, depth int) Type {
	if depth == 0 || r.IntN(4) == 0 {
		return genElems[r.IntN(len(genElems))]
	}
	c := genType(r, depth-1)
	small := func(n int) int { return r.IntN(n) }
	ints := func(n, lo, hi int) []int {
		xs := make([]int, n)
		for i := range xs {
			xs[i] = lo + r.IntN(hi-lo+1)
		}
		return xs
	}
	var t Type
	var err error
	switch r.IntN(9) {
	case 0:
		t, err = Contiguous(small(5), c)
	case 1:
		t, err = Vector(small(5), small(4), small(9)-3, c)
	case 2:
		t, err = Hvector(small(5), small(4), small(64)-16, c)
	case 3:
		n := small(5)
		t, err = Indexed(ints(n, 0, 3), ints(n, -4, 12), c)
	case 4:
		t, err = IndexedBlock(small(4), ints(small(5), -4, 12), c)
	case 5:
		n := 1 + small(3)
		sizes := ints(n, 1, 5)
		sub, st := make([]int, n), make([]int, n)
		for i := range n {
			sub[i] = r.IntN(sizes[i] + 1)
			st[i] = r.IntN(sizes[i] - sub[i] + 1)
		}
		t, err = Subarray(sizes, sub, st, c)
	case 6:
		n := 1 + small(3)
		types := make([]Type, n)
		types[0] = c
		for i := 1; i < n; i++ {
			types[i] = genType(r, depth-1)
		}
		t, err = Struct(ints(n, 0, 3), ints(n, -8, 64), types)
	case 7:
		t, err = Resized(c, small(16)-8, c.Extent()+small(17))
	case 8:
		// The SOR shape: every other element.
		t, err = Vector(1+small(20), 1, 2, c)
	}
	if err != nil {
		panic(err)
	}
	return t
}

// anchor shifts t, if needed, so that its true lower bound is not
// negative, which a Go buffer cannot reach.
func anchor(t Type) Type {
	if lo := t.TrueLowerBound(); lo < 0 {
		s, err := Struct([]int{1}, []int{-lo}, []Type{t})
		if err != nil {
			panic(err)
		}
		return s
	}
	return t
}
