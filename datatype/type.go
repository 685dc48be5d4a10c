package datatype

import (
	"fmt"
	"reflect"
	"strings"
)

// Type is a memory layout: where the bytes of one instance lie relative to
// the start of a buffer, and the order in which they are packed. Make one
// with Of (a Go element type) or a constructor (Contiguous, Vector, Hvector,
// Indexed, IndexedBlock, Subarray, Struct, Resized). A Type is an immutable
// handle: copy it freely and use it from any number of goroutines at once.
// The zero Type is invalid; every function given one returns ErrInvalidType.
//
// Instances repeat by the extent: instance i of a count starts Extent()*i
// bytes after the buffer's start.
type Type struct {
	d *desc
}

type kind uint8

const (
	kElem kind = iota
	kContiguous
	kVector
	kHvector
	kIndexed
	kIndexedBlock
	kSubarray
	kStruct
	kResized
)

// desc is the immutable description behind a Type: the constructor and its
// arguments (kept for String and for the test reference), the bounds, and
// the compiled runs.
type desc struct {
	kind kind

	// Constructor arguments.
	count, blocklen, stride int   // Contiguous, Vector, Hvector, IndexedBlock (blocklen)
	blocklens, displs       []int // Indexed, IndexedBlock (displs), Struct (byte displs)
	sizes, subsizes, starts []int // Subarray
	resLB, resExtent        int   // Resized
	children                []Type

	// el describes the Go type for kElem.
	el *elemInfo
	// elem is the one element type the layout is built from, or nil when
	// it mixes element types (or is a Struct of no members).
	elem *elemInfo
	// empty is true for a layout with no elements at all (Size() == 0).
	empty bool

	size       int // packed bytes of one instance
	lb, ub     int // bounds used for the extent: extent = ub - lb
	tlb, tub   int // true bounds: the bytes actually touched, [tlb, tub)
	align      int // largest alignment of the element types
	items      []item
	contiguous bool // one run of size bytes, starting at lb, and size == extent
}

// elemInfo describes a Go element type accepted by Of.
type elemInfo struct {
	rtype   reflect.Type
	size    int
	align   int
	padding int
	sig     string
}

// Valid reports whether t was made by Of or a constructor (the zero Type is
// not valid).
func (t Type) Valid() bool { return t.d != nil }

// Size returns the number of bytes one instance packs into (the data bytes;
// gaps are not counted). A Go struct element counts its padding: see Of.
func (t Type) Size() int {
	if t.d == nil {
		return 0
	}
	return t.d.size
}

// Extent returns the distance in bytes between consecutive instances in a
// count: UpperBound() - LowerBound().
func (t Type) Extent() int {
	if t.d == nil {
		return 0
	}
	return t.d.ub - t.d.lb
}

// LowerBound returns the lower bound of the layout, in bytes from the
// buffer's start. It is the lowest displacement of the layout unless set by
// Resized. It may be negative.
func (t Type) LowerBound() int {
	if t.d == nil {
		return 0
	}
	return t.d.lb
}

// UpperBound returns LowerBound() + Extent().
func (t Type) UpperBound() int {
	if t.d == nil {
		return 0
	}
	return t.d.ub
}

// TrueLowerBound returns the offset of the lowest byte the layout actually
// touches, ignoring Resized and struct padding; 0 for an empty layout.
func (t Type) TrueLowerBound() int {
	if t.d == nil {
		return 0
	}
	return t.d.tlb
}

// TrueExtent returns the span in bytes from the lowest to one past the
// highest byte the layout actually touches; 0 for an empty layout.
func (t Type) TrueExtent() int {
	if t.d == nil {
		return 0
	}
	return t.d.tub - t.d.tlb
}

// Align returns the largest alignment, in bytes, of the element types the
// layout is built from (1 for an empty layout).
func (t Type) Align() int {
	if t.d == nil {
		return 0
	}
	return t.d.align
}

// IsContiguous reports whether the layout is a single run of Size() bytes
// starting at LowerBound() with Extent() == Size(): count instances then
// occupy one run of count*Size() bytes, so they need no packing and no copy
// (see ContiguousView and Bytes).
func (t Type) IsContiguous() bool { return t.d != nil && t.d.contiguous }

// Elem returns the Go element type the layout is built from, or nil when it
// mixes element types (a Struct of different types) or is empty. The typed
// functions (PackSlice, UnpackSlice, CheckElem) accept a []T buffer only
// when T is Elem(); a layout that mixes types takes a []byte buffer.
func (t Type) Elem() reflect.Type {
	if t.d == nil || t.d.elem == nil {
		return nil
	}
	return t.d.elem.rtype
}

// Padding returns, for a type made by Of, the number of padding bytes
// inside one element (a struct's alignment gaps and tail); 0 for other
// layouts.
func (t Type) Padding() int {
	if t.d == nil || t.d.el == nil {
		return 0
	}
	return t.d.el.padding
}

// Count returns how many whole instances n packed bytes hold, and whether n
// is an exact multiple of Size(). A zero-size layout holds 0 instances, and
// is exact only for n == 0.
func (t Type) Count(n int) (count int, exact bool) {
	if t.d == nil || t.d.size == 0 || n < 0 {
		return 0, n == 0
	}
	return n / t.d.size, n%t.d.size == 0
}

// Signature returns a stable, compact description of the packed stream:
// the sequence of element types one instance packs into, run-length
// compressed, with displacements left out (MPI's "type signature"). Both
// sides of a transfer agree when their signatures for the whole message
// agree. An element type's signature is the wire description of the Go
// type: "f32", "i64", "[3]f64", or for a struct its field signatures at
// their byte offsets and its size with padding, "{f64@0,i32@8}:16" (field
// and type names are left out). A derived layout of one element type packs
// into "N*sig" (N elements; Vector(5000, 1, 2, float32) gives "5000*f32");
// a struct of mixed types lists its members, "(1*f64,2*i32)".
func (t Type) Signature() string {
	if t.d == nil {
		return "invalid"
	}
	var b strings.Builder
	t.d.signature(&b)
	return b.String()
}

func (d *desc) signature(b *strings.Builder) {
	switch {
	case d.kind == kElem:
		b.WriteString(d.el.sig)
	case d.elem != nil:
		fmt.Fprintf(b, "%d*%s", d.size/d.elem.size, d.elem.sig)
	case d.empty:
		b.WriteString("0*()")
	case d.kind == kStruct:
		b.WriteByte('(')
		first := true
		for i, c := range d.children {
			if d.blocklens[i] == 0 || c.d.empty {
				continue
			}
			if !first {
				b.WriteByte(',')
			}
			first = false
			if c.d.elem != nil {
				fmt.Fprintf(b, "%d*%s", d.blocklens[i]*c.d.size/c.d.elem.size, c.d.elem.sig)
			} else {
				fmt.Fprintf(b, "%d*", d.blocklens[i])
				c.d.signature(b)
			}
		}
		b.WriteByte(')')
	case d.kind == kResized:
		d.children[0].d.signature(b)
	default:
		// A mixed layout built over one mixed child: whole child instances.
		c := d.children[0].d
		fmt.Fprintf(b, "%d*", d.size/c.size)
		c.signature(b)
	}
}

// String returns a readable constructor expression, such as
// "Vector(5000, 1, 2, float32)"; long argument lists are abridged.
func (t Type) String() string {
	if t.d == nil {
		return "datatype.Type(invalid)"
	}
	var b strings.Builder
	t.d.format(&b)
	return b.String()
}

func (d *desc) format(b *strings.Builder) {
	name := func(long string) {
		b.WriteString(long)
		b.WriteByte('(')
	}
	const sep = ", "
	ints := func(xs []int) {
		b.WriteByte('[')
		const show = 8
		for i, x := range xs {
			if i == show {
				fmt.Fprintf(b, " ... (%d total)", len(xs))
				break
			}
			if i > 0 {
				b.WriteByte(' ')
			}
			fmt.Fprint(b, x)
		}
		b.WriteByte(']')
	}
	switch d.kind {
	case kElem:
		b.WriteString(d.el.rtype.String())
		return
	case kContiguous:
		name("Contiguous")
		fmt.Fprint(b, d.count, sep)
	case kVector:
		name("Vector")
		fmt.Fprint(b, d.count, sep, d.blocklen, sep, d.stride, sep)
	case kHvector:
		name("Hvector")
		fmt.Fprint(b, d.count, sep, d.blocklen, sep, d.stride, sep)
	case kIndexed:
		name("Indexed")
		ints(d.blocklens)
		b.WriteString(sep)
		ints(d.displs)
		b.WriteString(sep)
	case kIndexedBlock:
		name("IndexedBlock")
		fmt.Fprint(b, d.blocklen, sep)
		ints(d.displs)
		b.WriteString(sep)
	case kSubarray:
		name("Subarray")
		ints(d.sizes)
		b.WriteString(sep)
		ints(d.subsizes)
		b.WriteString(sep)
		ints(d.starts)
		b.WriteString(sep)
	case kStruct:
		name("Struct")
		ints(d.blocklens)
		b.WriteString(sep)
		ints(d.displs)
		b.WriteString(sep)
		b.WriteByte('[')
		for i, c := range d.children {
			if i > 0 {
				b.WriteString(sep)
			}
			if i == 8 {
				fmt.Fprintf(b, "... (%d total)", len(d.children))
				break
			}
			c.d.format(b)
		}
		b.WriteString("])")
		return
	case kResized:
		name("Resized")
		d.children[0].d.format(b)
		fmt.Fprint(b, sep, d.resLB, sep, d.resExtent, ")")
		return
	}
	d.children[0].d.format(b)
	b.WriteByte(')')
}
