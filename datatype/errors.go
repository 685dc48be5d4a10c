package datatype

import (
	"errors"
	"fmt"
	"reflect"
)

// Sentinel errors. Every error returned by this package matches one of them
// with errors.Is; most arrive wrapped in one of the struct errors below, which
// carry the details.
var (
	// ErrInvalidType is returned when a zero Type (one not made by Of or a
	// constructor) is passed where a Type is needed.
	ErrInvalidType = errors.New("datatype: invalid (zero) Type")

	// ErrUnsupported is returned by Of when the Go type holds pointers,
	// slices, maps, strings, interfaces, channels, functions or unsafe
	// pointers, so that its bytes cannot be sent to another address space.
	// The error is an *UnsupportedTypeError.
	ErrUnsupported = errors.New("datatype: not a fixed-size value type")

	// ErrBadArgument is returned when a constructor or a pack call gets a
	// negative count, length or size, mismatched argument lengths, or a
	// subarray that does not fit in its array. The error is an *ArgError.
	ErrBadArgument = errors.New("datatype: bad argument")

	// ErrOverflow is returned when a size, extent, displacement or byte
	// count would not fit the package's integer range (a quarter of
	// math.MaxInt). The error is an *ArgError.
	ErrOverflow = errors.New("datatype: size overflow")

	// ErrOutOfBounds is returned when count instances of a layout would
	// touch bytes outside the memory buffer they describe (before its start
	// or past its end). The error is a *BoundsError; nothing was written.
	ErrOutOfBounds = errors.New("datatype: layout steps outside the buffer")

	// ErrShortBuffer is returned when the packed buffer is too short: the
	// destination of Pack or the source of Unpack holds fewer bytes than
	// count instances pack into. The error is a *BoundsError; nothing was
	// written.
	ErrShortBuffer = errors.New("datatype: packed buffer too short")

	// ErrElemMismatch is returned by the typed functions when the Go
	// element type of the buffer is not the element type the layout was
	// built from. The error is an *ElemMismatchError.
	ErrElemMismatch = errors.New("datatype: element type mismatch")

	// ErrOverrun is returned by Unpacker.Write when it is given more packed
	// bytes than the layout holds.
	ErrOverrun = errors.New("datatype: more packed data than the layout holds")
)

// UnsupportedTypeError reports a Go type that Of refuses, naming the
// offending field.
type UnsupportedTypeError struct {
	// Type is the type passed to Of.
	Type reflect.Type
	// Field is the path to the offending part, such as "Pos.X" or
	// "Cells[]" (an array element); empty when Type itself is refused.
	Field string
	// Kind is the offending kind (reflect.Pointer, reflect.String, ...).
	Kind reflect.Kind
	// Reason says why that kind is refused.
	Reason string
}

// Error names the type and the field that make it unsupported.
func (e *UnsupportedTypeError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("datatype: type %v is not a fixed-size value type: it is a %v, %s",
			e.Type, e.Kind, e.Reason)
	}
	return fmt.Sprintf("datatype: type %v is not a fixed-size value type: field %s is a %v, %s",
		e.Type, e.Field, e.Kind, e.Reason)
}

// Unwrap returns ErrUnsupported.
func (e *UnsupportedTypeError) Unwrap() error { return ErrUnsupported }

// ArgError reports a bad argument of a constructor or a pack call.
type ArgError struct {
	// Op is the function, such as "Vector" or "Pack".
	Op string
	// Arg names the argument, such as "stride" or "blocklens[3]".
	Arg string
	// Value is the offending value.
	Value int
	// Reason says what is wrong with it.
	Reason string
	// Err is ErrBadArgument, ErrOverflow, or ErrInvalidType (a zero Type
	// argument; Value is then 0).
	Err error
}

// Error names the operation, the argument and why it is refused.
func (e *ArgError) Error() string {
	if e.Err == ErrInvalidType {
		return fmt.Sprintf("datatype: %s: %s is the zero Type (make one with Of or a constructor)", e.Op, e.Arg)
	}
	return fmt.Sprintf("datatype: %s: %s = %d: %s", e.Op, e.Arg, e.Value, e.Reason)
}

// Unwrap returns Err.
func (e *ArgError) Unwrap() error { return e.Err }

// BoundsError reports a buffer that is too short for the bytes a call would
// touch: the half-open byte range [Lo, Hi) against a buffer of Len bytes.
type BoundsError struct {
	// Op is the function, such as "Pack" or "Unpacker.Reset".
	Op string
	// Buf names the buffer: "src" or "dst".
	Buf string
	// Lo and Hi bound the bytes the call would touch, relative to the
	// buffer's start (Lo may be negative).
	Lo, Hi int
	// Len is the buffer's length.
	Len int
	// Err is ErrOutOfBounds (layout memory) or ErrShortBuffer (packed
	// bytes).
	Err error
}

// Error describes the access and the buffer it does not fit.
func (e *BoundsError) Error() string {
	what := "layout touches bytes"
	if e.Err == ErrShortBuffer {
		what = "packed data needs bytes"
	}
	return fmt.Sprintf("datatype: %s: %s [%d, %d) of %s, which has %d bytes",
		e.Op, what, e.Lo, e.Hi, e.Buf, e.Len)
}

// Unwrap returns ErrOutOfBounds or ErrShortBuffer.
func (e *BoundsError) Unwrap() error { return e.Err }

// ElemMismatchError reports a typed buffer whose element type differs from
// the layout's.
type ElemMismatchError struct {
	// Op is the function, such as "PackSlice".
	Op string
	// Want is the layout's element type; nil when the layout mixes
	// element types (then only a []byte buffer is accepted).
	Want reflect.Type
	// Got is the buffer's element type.
	Got reflect.Type
}

// Error names the element types that differ.
func (e *ElemMismatchError) Error() string {
	if e.Want == nil {
		return fmt.Sprintf("datatype: %s: buffer of %v for a layout that mixes element types (use a []byte buffer)",
			e.Op, e.Got)
	}
	return fmt.Sprintf("datatype: %s: buffer of %v for a layout of %v", e.Op, e.Got, e.Want)
}

// Unwrap returns ErrElemMismatch.
func (e *ElemMismatchError) Unwrap() error { return ErrElemMismatch }

func badArg(op, arg string, v int, reason string) error {
	return &ArgError{Op: op, Arg: arg, Value: v, Reason: reason, Err: ErrBadArgument}
}

func overflow(op, arg string, v int) error {
	return &ArgError{Op: op, Arg: arg, Value: v, Reason: "the resulting size or offset overflows", Err: ErrOverflow}
}
