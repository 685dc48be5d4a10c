package comm

import (
	"cmp"
	"reflect"
	"sync"
	"unsafe"
)

// Integer is the constraint of the bitwise operations.
type Integer interface {
	~int | ~int8 | ~int16 | ~int32 | ~int64 |
		~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~uintptr
}

// Number is the constraint of Sum and Prod.
type Number interface {
	Integer | ~float32 | ~float64 | ~complex64 | ~complex128
}

// Op is a reduction operation on elements of type T, for Reduce,
// Allreduce, Scan, Exscan and ReduceScatter. Its function combines two
// vectors element by element as MPI's user functions do:
//
//	inout[i] = in[i] ∘ inout[i]
//
// where in holds the contribution of lower ranks and inout that of higher
// ranks. The operation must be associative; a non-commutative one (Commutative
// false) is applied in rank order, which rules out the ring algorithms and
// costs a little more. Make one with NewOp or take a predefined one (Sum,
// Min, MinLoc, ...): a predefined one is made once per element type, so
// writing comm.Sum[float64]() in each call costs a map load and allocates
// nothing. The zero Op is invalid.
type Op[T any] struct {
	name        string
	fn          func(in, inout []T)
	commutative bool
}

// NewOp returns a user operation named name. fn gets slices of equal
// length and must set inout[i] = in[i] ∘ inout[i]; it must not keep them.
// commutative says whether ∘ is commutative.
func NewOp[T any](name string, fn func(in, inout []T), commutative bool) Op[T] {
	return Op[T]{name: name, fn: fn, commutative: commutative}
}

// Name returns the operation's name.
func (o Op[T]) Name() string { return o.name }

// Commutative reports whether the operation is commutative.
func (o Op[T]) Commutative() bool { return o.commutative }

// Apply sets inout[i] = in[i] ∘ inout[i] for the first min(len) elements.
func (o Op[T]) Apply(in, inout []T) {
	n := min(len(in), len(inout))
	o.fn(in[:n], inout[:n])
}

// valid reports whether o was made by NewOp or a predefined constructor.
func (o Op[T]) valid() bool { return o.fn != nil }

// Sum adds. On float32 and float64 elements (and types defined on them)
// it adds with vector instructions where the processor has them (AVX2 on
// amd64), with the same results as the loop: each element is one IEEE
// addition either way.
func Sum[T Number]() Op[T] { return builtin(opSum, newSum[T]) }

func newSum[T Number]() Op[T] {
	var fn func(in, inout []T)
	// Safety (retype): the kind says T's underlying type is float32
	// (float64), so the slices hold exactly such numbers.
	switch reflect.TypeFor[T]().Kind() {
	case reflect.Float32:
		fn = func(in, inout []T) { addFloat32(retype[float32](in[:len(inout)]), retype[float32](inout)) }
	case reflect.Float64:
		fn = func(in, inout []T) { addFloat64(retype[float64](in[:len(inout)]), retype[float64](inout)) }
	default:
		fn = func(in, inout []T) {
			in = in[:len(inout)] // one bounds check, not one per element
			for i := range inout {
				inout[i] = in[i] + inout[i]
			}
		}
	}
	return Op[T]{name: "sum", commutative: true, fn: fn}
}

// Prod multiplies.
func Prod[T Number]() Op[T] {
	return builtin(opProd, func() Op[T] {
		return Op[T]{name: "prod", commutative: true, fn: func(in, inout []T) {
			in = in[:len(inout)] // one bounds check, not one per element
			for i := range inout {
				inout[i] = in[i] * inout[i]
			}
		}}
	})
}

// Min takes the minimum (NaNs as the built-in min does).
func Min[T cmp.Ordered]() Op[T] {
	return builtin(opMin, func() Op[T] {
		return Op[T]{name: "min", commutative: true, fn: func(in, inout []T) {
			in = in[:len(inout)] // one bounds check, not one per element
			for i := range inout {
				inout[i] = min(in[i], inout[i])
			}
		}}
	})
}

// Max takes the maximum (NaNs as the built-in max does).
func Max[T cmp.Ordered]() Op[T] {
	return builtin(opMax, func() Op[T] {
		return Op[T]{name: "max", commutative: true, fn: func(in, inout []T) {
			in = in[:len(inout)] // one bounds check, not one per element
			for i := range inout {
				inout[i] = max(in[i], inout[i])
			}
		}}
	})
}

// Land is logical and. (MPI also allows it on integers, as non-zero means
// true; in Go use a bool type, or Band on 0/1 integers.)
func Land[T ~bool]() Op[T] {
	return builtin(opLand, func() Op[T] {
		return Op[T]{name: "land", commutative: true, fn: func(in, inout []T) {
			in = in[:len(inout)] // one bounds check, not one per element
			for i := range inout {
				inout[i] = in[i] && inout[i]
			}
		}}
	})
}

// Lor is logical or.
func Lor[T ~bool]() Op[T] {
	return builtin(opLor, func() Op[T] {
		return Op[T]{name: "lor", commutative: true, fn: func(in, inout []T) {
			in = in[:len(inout)] // one bounds check, not one per element
			for i := range inout {
				inout[i] = in[i] || inout[i]
			}
		}}
	})
}

// Lxor is logical exclusive or.
func Lxor[T ~bool]() Op[T] {
	return builtin(opLxor, func() Op[T] {
		return Op[T]{name: "lxor", commutative: true, fn: func(in, inout []T) {
			in = in[:len(inout)] // one bounds check, not one per element
			for i := range inout {
				inout[i] = in[i] != inout[i]
			}
		}}
	})
}

// Band is bitwise and.
func Band[T Integer]() Op[T] {
	return builtin(opBand, func() Op[T] {
		return Op[T]{name: "band", commutative: true, fn: func(in, inout []T) {
			in = in[:len(inout)] // one bounds check, not one per element
			for i := range inout {
				inout[i] = in[i] & inout[i]
			}
		}}
	})
}

// Bor is bitwise or.
func Bor[T Integer]() Op[T] {
	return builtin(opBor, func() Op[T] {
		return Op[T]{name: "bor", commutative: true, fn: func(in, inout []T) {
			in = in[:len(inout)] // one bounds check, not one per element
			for i := range inout {
				inout[i] = in[i] | inout[i]
			}
		}}
	})
}

// Bxor is bitwise exclusive or.
func Bxor[T Integer]() Op[T] {
	return builtin(opBxor, func() Op[T] {
		return Op[T]{name: "bxor", commutative: true, fn: func(in, inout []T) {
			in = in[:len(inout)] // one bounds check, not one per element
			for i := range inout {
				inout[i] = in[i] ^ inout[i]
			}
		}}
	})
}

// ValueIndex is the element type of MinLoc and MaxLoc: a value and where
// it came from (typically a rank or an index), as MPI's pair types.
type ValueIndex[V cmp.Ordered] struct {
	Value V
	Index int
}

// MinLoc takes the smallest value and its index; among equal values, the
// smallest index.
func MinLoc[V cmp.Ordered]() Op[ValueIndex[V]] {
	return builtin(opMinLoc, func() Op[ValueIndex[V]] {
		return Op[ValueIndex[V]]{name: "minloc", commutative: true, fn: func(in, inout []ValueIndex[V]) {
			in = in[:len(inout)] // one bounds check, not one per element
			for i := range inout {
				a, b := in[i], inout[i]
				if c := cmp.Compare(a.Value, b.Value); c < 0 || c == 0 && a.Index < b.Index {
					inout[i] = a
				}
			}
		}}
	})
}

// MaxLoc takes the largest value and its index; among equal values, the
// smallest index.
func MaxLoc[V cmp.Ordered]() Op[ValueIndex[V]] {
	return builtin(opMaxLoc, func() Op[ValueIndex[V]] {
		return Op[ValueIndex[V]]{name: "maxloc", commutative: true, fn: func(in, inout []ValueIndex[V]) {
			in = in[:len(inout)] // one bounds check, not one per element
			for i := range inout {
				a, b := in[i], inout[i]
				if c := cmp.Compare(a.Value, b.Value); c > 0 || c == 0 && a.Index < b.Index {
					inout[i] = a
				}
			}
		}}
	})
}

// The built-in operators, each made once per element type.
type opKind int

const (
	opSum opKind = iota
	opProd
	opMin
	opMax
	opLand
	opLor
	opLxor
	opBand
	opBor
	opBxor
	opMinLoc
	opMaxLoc
	nOpKinds
)

// builtins holds, per operator, the Op made for each element type
// (reflect.Type → *Op[T]).
var builtins [nOpKinds]sync.Map

// builtin returns operator k on T, made by mk the first time. An Op's
// function is a closure over its type's generic dictionary, which Go
// allocates at every construction, so `c.Allreduce(x, y,
// comm.Sum[float64]())` in a loop, the way a reduction is written,
// allocated at every call (Sum took 53 ns and 16 bytes). From the cache
// it is a map load (25 ns) and allocates nothing.
func builtin[T any](k opKind, mk func() Op[T]) Op[T] {
	t := reflect.TypeFor[T]()
	if v, ok := builtins[k].Load(t); ok {
		return *v.(*Op[T])
	}
	op := mk()
	v, _ := builtins[k].LoadOrStore(t, &op)
	return *v.(*Op[T])
}

// retype views s as a slice of U. The caller guarantees that T and U have
// the same size and representation (a type and its underlying type).
func retype[U, T any](s []T) []U { return view[U](unsafe.Pointer(unsafe.SliceData(s)), len(s)) }
