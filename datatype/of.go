package datatype

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
)

// ofCache maps a reflect.Type to its ofResult, so that Of[T] in a hot path
// is one map load after the first call.
var ofCache sync.Map // reflect.Type → *ofResult

type ofResult struct {
	t   Type
	err error
}

// Of returns the element Type of the Go type T. T must be a fixed-size
// value type: a boolean, integer (including uintptr), floating-point or
// complex type, or an array or struct made only of those, of non-zero
// size. Types holding pointers, slices, maps, strings, interfaces,
// channels, functions or unsafe pointers are refused with an
// *UnsupportedTypeError (errors.Is ErrUnsupported) naming the field.
//
// The element's Size and Extent are unsafe.Sizeof(T), padding included: a
// []T is one contiguous run and travels without a copy, padding bytes and
// all. Padding reports how many of those bytes are padding, and Signature
// gives the stable wire description (kinds, offsets, size; no names) for
// checking that both sides use the same layout. Values travel in the
// machine's byte order; both sides must share it.
//
// The result is computed once per T and cached; Of is cheap and safe to call
// from any goroutine.
func Of[T any]() (Type, error) {
	return typeOf(reflect.TypeFor[T]())
}

// MustOf is like Of but panics if T is refused. It suits package-level
// variables of fixed element types.
func MustOf[T any]() Type {
	t, err := Of[T]()
	if err != nil {
		panic(err)
	}
	return t
}

// Predefined element types, the Go counterparts of MPI's basic datatypes.
var (
	Bool       = MustOf[bool]()
	Byte       = MustOf[byte]()
	Int        = MustOf[int]()
	Int8       = MustOf[int8]()
	Int16      = MustOf[int16]()
	Int32      = MustOf[int32]()
	Int64      = MustOf[int64]()
	Uint       = MustOf[uint]()
	Uint16     = MustOf[uint16]()
	Uint32     = MustOf[uint32]()
	Uint64     = MustOf[uint64]()
	Float32    = MustOf[float32]()
	Float64    = MustOf[float64]()
	Complex64  = MustOf[complex64]()
	Complex128 = MustOf[complex128]()
)

func typeOf(rt reflect.Type) (Type, error) {
	if r, ok := ofCache.Load(rt); ok {
		res := r.(*ofResult)
		return res.t, res.err
	}
	res := buildOf(rt)
	r, _ := ofCache.LoadOrStore(rt, res)
	res = r.(*ofResult)
	return res.t, res.err
}

func buildOf(rt reflect.Type) *ofResult {
	var sig strings.Builder
	data, err := walkFixed(rt, rt, "", &sig)
	if err != nil {
		return &ofResult{err: err}
	}
	size := int(rt.Size())
	if size == 0 {
		return &ofResult{err: &UnsupportedTypeError{Type: rt, Kind: rt.Kind(),
			Reason: "which has size zero and carries no data"}}
	}
	el := &elemInfo{
		rtype:   rt,
		size:    size,
		align:   rt.Align(),
		padding: size - data,
		sig:     sig.String(),
	}
	d := &desc{
		kind: kElem, el: el, elem: el,
		size: size, lb: 0, ub: size, tlb: 0, tub: size,
		align: el.align,
		items: []item{run(0, size)},
	}
	d.finish()
	return &ofResult{t: Type{d}}
}

// kindSig holds the wire names of the basic kinds.
var kindSig = map[reflect.Kind]string{
	reflect.Bool: "bool",
	reflect.Int8: "i8", reflect.Int16: "i16", reflect.Int32: "i32", reflect.Int64: "i64",
	reflect.Uint8: "u8", reflect.Uint16: "u16", reflect.Uint32: "u32", reflect.Uint64: "u64",
	reflect.Float32: "f32", reflect.Float64: "f64",
	reflect.Complex64: "c64", reflect.Complex128: "c128",
}

// walkFixed checks that t (found at path inside root) is a fixed-size value
// type, writes its signature to sig, and returns its data bytes (its size
// less padding).
func walkFixed(root, t reflect.Type, path string, sig *strings.Builder) (int, error) {
	refuse := func(reason string) (int, error) {
		return 0, &UnsupportedTypeError{Type: root, Field: path, Kind: t.Kind(), Reason: reason}
	}
	switch k := t.Kind(); k {
	case reflect.Bool, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		sig.WriteString(kindSig[k])
		return int(t.Size()), nil
	case reflect.Int, reflect.Uint, reflect.Uintptr:
		// Platform-sized integers travel as their fixed-size equivalent.
		prefix := "i"
		if k != reflect.Int {
			prefix = "u"
		}
		fmt.Fprintf(sig, "%s%d", prefix, 8*t.Size())
		return int(t.Size()), nil
	case reflect.Array:
		fmt.Fprintf(sig, "[%d]", t.Len())
		n, err := walkFixed(root, t.Elem(), path+"[]", sig)
		return n * t.Len(), err
	case reflect.Struct:
		sig.WriteByte('{')
		data := 0
		for i := range t.NumField() {
			f := t.Field(i)
			if i > 0 {
				sig.WriteByte(',')
			}
			p := f.Name
			if path != "" {
				p = path + "." + f.Name
			}
			n, err := walkFixed(root, f.Type, p, sig)
			if err != nil {
				return 0, err
			}
			fmt.Fprintf(sig, "@%d", f.Offset)
			data += n
		}
		fmt.Fprintf(sig, "}:%d", t.Size())
		return data, nil
	case reflect.Pointer, reflect.UnsafePointer:
		return refuse("an address that means nothing in another address space")
	case reflect.Slice, reflect.String:
		return refuse("a header pointing to memory elsewhere")
	case reflect.Map, reflect.Chan, reflect.Func, reflect.Interface:
		return refuse("a reference to runtime state")
	default:
		return refuse("not a fixed-size value kind")
	}
}
