package datatype

import (
	"iter"
	"reflect"
	"unsafe"
)

// byteType is reflect.TypeFor[byte](), the element type of raw buffers.
var byteType = reflect.TypeFor[byte]()

// Bytes returns the bytes of s as a []byte that shares s's memory: no copy
// is made, and writes through either slice show in the other. It is the
// zero-copy path for contiguous data. Bytes panics if T is refused by Of
// (a type holding pointers must not be viewed, let alone written, as bytes).
func Bytes[T any](s []T) []byte {
	if _, err := Of[T](); err != nil {
		panic(err)
	}
	if len(s) == 0 {
		return nil
	}
	// Safety: T is a fixed-size value type without pointers (checked
	// above), so every byte pattern is a representable value as far as
	// memory safety goes, and the GC does not scan the memory for
	// pointers. The view covers exactly the len(s) elements of s,
	// len(s)*Sizeof(T) bytes, which cannot overflow since s exists, and it
	// keeps the backing array alive.
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(s[0])))
}

// CheckElem returns nil if a []T buffer suits t: T is t's element type (or
// a Go type Of accepts with the same Signature, such as a named float32),
// or T is byte and t mixes element types (Elem() == nil), or t is empty and
// Of accepts T.
// Otherwise it returns an *ElemMismatchError (errors.Is ErrElemMismatch).
// It does not allocate when it succeeds.
func CheckElem[T any](t Type) error { return checkElem[T]("CheckElem", t) }

func checkElem[T any](op string, t Type) error {
	if t.d == nil {
		return &ArgError{Op: op, Arg: "t", Reason: "zero Type", Err: ErrInvalidType}
	}
	got := reflect.TypeFor[T]()
	if e := t.d.elem; e != nil {
		if e.rtype == got {
			return nil
		}
		// A different Go type with the same wire layout (a named float32,
		// a struct of the same fields) is as good.
		if g, err := typeOf(got); err == nil && g.d.el.sig == e.sig {
			return nil
		}
	} else if got == byteType {
		return nil
	}
	if t.d.empty {
		// No byte will be touched; any buffer of an acceptable type does.
		if _, err := typeOf(got); err == nil {
			return nil
		}
	}
	return &ElemMismatchError{Op: op, Want: t.Elem(), Got: got}
}

// PackSlice packs count instances of t from the elements of src, whose
// first element is displacement 0, into dst and returns the bytes written.
// T must suit t (see CheckElem); otherwise as Pack.
func PackSlice[T any](dst []byte, src []T, count int, t Type) (int, error) {
	if err := checkElem[T]("PackSlice", t); err != nil {
		return 0, err
	}
	return Pack(dst, sliceBytes(src), count, t)
}

// UnpackSlice unpacks count instances of t from src into the elements of
// dst, whose first element is displacement 0, and returns the bytes read.
// T must suit t (see CheckElem); otherwise as Unpack.
func UnpackSlice[T any](dst []T, src []byte, count int, t Type) (int, error) {
	if err := checkElem[T]("UnpackSlice", t); err != nil {
		return 0, err
	}
	return Unpack(sliceBytes(dst), src, count, t)
}

// sliceBytes is Bytes without the check, for callers that checked T.
func sliceBytes[T any](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	// Safety: as in Bytes; the caller has checked that T is t's element
	// type (or byte), and Of accepted that type, so T holds no pointers.
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(s[0])))
}

// ContiguousView returns, when count instances of t occupy one run of buf,
// that run: buf[lb : lb+count*t.Size()], sharing buf's memory, with ok
// true. A send of a contiguous layout then needs no copy. When the layout
// is not contiguous, ok is false and the data must be packed. Errors are
// those of Pack (bounds are checked either way).
func ContiguousView(buf []byte, count int, t Type) (view []byte, ok bool, err error) {
	n, err := check("ContiguousView", t, count, len(buf), limit, "buf", "view")
	if err != nil {
		return nil, false, err
	}
	if n == 0 {
		return buf[:0], true, nil
	}
	if !t.d.contiguous {
		return nil, false, nil
	}
	return buf[t.d.lb : t.d.lb+n], true, nil
}

// Runs returns the memory runs of count instances of t, in packing order:
// each as (offset, length) in bytes from displacement 0, adjacent runs
// merged. Packing is the concatenation of these runs; they suit scatter /
// gather I/O (iovecs). The sequence is computed as it is iterated, so a
// layout with a million runs costs no memory. A negative count yields
// nothing; so does a zero Type.
func Runs(count int, t Type) iter.Seq2[int, int] {
	return func(yield func(off, n int) bool) {
		if t.d == nil {
			return
		}
		if _, _, _, err := t.d.span("Runs", count); err != nil {
			return
		}
		ext := t.Extent()
		var pend runState
		for i := range count {
			if !walkRuns(t.d.items, i*ext, &pend, yield) {
				return
			}
		}
		if pend.n > 0 {
			yield(pend.off, pend.n)
		}
	}
}

// runState holds a run not yet yielded, to merge with the next if adjacent.
type runState struct{ off, n int }

func (p *runState) add(off, n int, yield func(int, int) bool) bool {
	if p.n > 0 && p.off+p.n == off {
		p.n += n
		return true
	}
	if p.n > 0 && !yield(p.off, p.n) {
		return false
	}
	p.off, p.n = off, n
	return true
}

func walkRuns(items []item, base int, pend *runState, yield func(int, int) bool) bool {
	for i := range items {
		it := &items[i]
		at := base + it.off
		for range it.count {
			if it.body == nil {
				if !pend.add(at, it.n, yield) {
					return false
				}
			} else if !walkRuns(it.body, at, pend, yield) {
				return false
			}
			at += it.stride
		}
	}
	return true
}
