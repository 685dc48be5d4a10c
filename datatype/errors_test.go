package datatype

import (
	"bytes"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestConstructorErrors(t *testing.T) {
	huge := math.MaxInt / 2
	big, err := Contiguous(1<<40, Float64)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		f    func() (Type, error)
		want error
		arg  string
	}{
		{"Contiguous negative", func() (Type, error) { return Contiguous(-1, Float32) }, ErrBadArgument, "count"},
		{"Contiguous zero type", func() (Type, error) { return Contiguous(1, Type{}) }, ErrInvalidType, "t"},
		{"Contiguous overflow", func() (Type, error) { return Contiguous(1<<40, big) }, ErrOverflow, "count"},
		{"Contiguous huge count", func() (Type, error) { return Contiguous(huge, Byte) }, ErrOverflow, "count"},
		{"Vector negative blocklen", func() (Type, error) { return Vector(2, -1, 2, Float32) }, ErrBadArgument, "blocklen"},
		{"Vector negative count", func() (Type, error) { return Vector(-2, 1, 2, Float32) }, ErrBadArgument, "count"},
		{"Vector stride overflow", func() (Type, error) { return Vector(2, 1, 1<<59, Float64) }, ErrOverflow, "stride"},
		{"Vector span overflow", func() (Type, error) { return Vector(1<<30, 1, 1<<30, Float64) }, ErrOverflow, "count"},
		{"Hvector huge stride", func() (Type, error) { return Hvector(2, 1, huge, Float64) }, ErrOverflow, "strideBytes"},
		{"Indexed lengths", func() (Type, error) { return Indexed([]int{1}, []int{0, 1}, Float32) }, ErrBadArgument, "len(displs)"},
		{"Indexed negative", func() (Type, error) { return Indexed([]int{1, -1}, []int{0, 1}, Float32) }, ErrBadArgument, "blocklens[1]"},
		{"Indexed displ overflow", func() (Type, error) { return Indexed([]int{1}, []int{1 << 60}, Float64) }, ErrOverflow, "displs[0]"},
		{"IndexedBlock negative", func() (Type, error) { return IndexedBlock(-3, []int{0}, Float32) }, ErrBadArgument, "blocklen"},
		{"Subarray no dims", func() (Type, error) { return Subarray(nil, nil, nil, Float32) }, ErrBadArgument, "len(sizes)"},
		{"Subarray lengths", func() (Type, error) { return Subarray([]int{2, 2}, []int{1}, []int{0, 0}, Float32) }, ErrBadArgument, "len(subsizes)"},
		{"Subarray zero size", func() (Type, error) { return Subarray([]int{0}, []int{0}, []int{0}, Float32) }, ErrBadArgument, "sizes[0]"},
		{"Subarray too far", func() (Type, error) { return Subarray([]int{4, 4}, []int{2, 3}, []int{1, 2}, Float32) }, ErrBadArgument, "starts[1]"},
		{"Subarray negative start", func() (Type, error) { return Subarray([]int{4}, []int{2}, []int{-1}, Float32) }, ErrBadArgument, "starts[0]"},
		{"Subarray overflow", func() (Type, error) {
			return Subarray([]int{1 << 30, 1 << 30, 1 << 30}, []int{1, 1, 1}, []int{0, 0, 0}, Float64)
		}, ErrOverflow, "sizes"},
		{"Struct lengths", func() (Type, error) { return Struct([]int{1}, []int{0}, nil) }, ErrBadArgument, "len(types)"},
		{"Struct zero type", func() (Type, error) { return Struct([]int{1}, []int{0}, []Type{{}}) }, ErrInvalidType, "types[0]"},
		{"Struct negative", func() (Type, error) { return Struct([]int{-1}, []int{0}, []Type{Byte}) }, ErrBadArgument, "blocklens[0]"},
		{"Resized negative extent", func() (Type, error) { return Resized(Float32, 0, -4) }, ErrBadArgument, "extent"},
		{"Resized huge lb", func() (Type, error) { return Resized(Float32, -huge, 4) }, ErrOverflow, "lb"},
	}
	for _, c := range cases {
		ty, err := c.f()
		if !errors.Is(err, c.want) {
			t.Errorf("%s: error %v, want %v", c.name, err, c.want)
			continue
		}
		if ty.Valid() {
			t.Errorf("%s: returned a valid Type with an error", c.name)
		}
		var ae *ArgError
		if !errors.As(err, &ae) || ae.Arg != c.arg {
			t.Errorf("%s: error %#v, want an *ArgError about %q", c.name, err, c.arg)
		}
		if !strings.Contains(err.Error(), c.arg) {
			t.Errorf("%s: message %q does not name %q", c.name, err, c.arg)
		}
	}
}

func TestPackErrorsWriteNothing(t *testing.T) {
	red, _ := Vector(4, 1, 2, Float32) // touches [0, 28)
	neg, _ := Vector(2, 1, -2, Float32)
	src := make([]byte, 28)
	for i := range src {
		src[i] = byte(i + 1)
	}
	cases := []struct {
		name     string
		dst, src []byte
		count    int
		t        Type
		want     error
	}{
		{"src short", make([]byte, 16), src[:27], 1, red, ErrOutOfBounds},
		{"count steps out", make([]byte, 32), src, 2, red, ErrOutOfBounds},
		{"negative offsets", make([]byte, 8), src, 1, neg, ErrOutOfBounds},
		{"dst short", make([]byte, 15), src, 1, red, ErrShortBuffer},
		{"negative count", make([]byte, 16), src, -1, red, ErrBadArgument},
		{"count overflow", make([]byte, 16), src, math.MaxInt / 3, red, ErrOverflow},
		{"zero type", make([]byte, 16), src, 1, Type{}, ErrInvalidType},
	}
	for _, c := range cases {
		before := bytes.Clone(c.dst)
		if n, err := Pack(c.dst, c.src, c.count, c.t); n != 0 || !errors.Is(err, c.want) {
			t.Errorf("Pack %s: %d, %v; want 0, %v", c.name, n, err, c.want)
		}
		if !bytes.Equal(before, c.dst) {
			t.Errorf("Pack %s: wrote into dst", c.name)
		}
		// The same with the roles swapped: Unpack into c.src from c.dst.
		mem := bytes.Clone(c.src)
		if n, err := Unpack(mem, c.dst, c.count, c.t); n != 0 || !errors.Is(err, c.want) {
			t.Errorf("Unpack %s: %d, %v; want 0, %v", c.name, n, err, c.want)
		}
		if !bytes.Equal(mem, c.src) {
			t.Errorf("Unpack %s: wrote into dst", c.name)
		}
		var p Packer
		if err := p.Reset(c.src, c.count, c.t); c.want != ErrShortBuffer && !errors.Is(err, c.want) {
			t.Errorf("Packer.Reset %s: %v, want %v", c.name, err, c.want)
		}
		var u Unpacker
		if err := u.Reset(mem, c.count, c.t); c.want != ErrShortBuffer && !errors.Is(err, c.want) {
			t.Errorf("Unpacker.Reset %s: %v, want %v", c.name, err, c.want)
		}
	}
	_, err := Pack(make([]byte, 16), src[:27], 1, red)
	var be *BoundsError
	if !errors.As(err, &be) || be.Lo != 0 || be.Hi != 28 || be.Len != 27 || be.Buf != "src" {
		t.Fatalf("bounds error %#v", err)
	}
}

func TestElemMismatch(t *testing.T) {
	red, _ := Vector(2, 1, 2, Float32)
	mixed, _ := Struct([]int{1, 1}, []int{0, 8}, []Type{Float64, Int32})
	empty, _ := Contiguous(0, Float64)
	dst := make([]byte, 64)
	if _, err := PackSlice(dst, make([]float64, 8), 1, red); !errors.Is(err, ErrElemMismatch) {
		t.Fatalf("float64 buffer for a float32 layout: %v", err)
	} else {
		var me *ElemMismatchError
		if !errors.As(err, &me) || me.Want != reflect.TypeFor[float32]() || me.Got != reflect.TypeFor[float64]() {
			t.Fatalf("error %#v", err)
		}
	}
	if _, err := UnpackSlice(make([]int32, 8), dst, 1, red); !errors.Is(err, ErrElemMismatch) {
		t.Fatalf("int32 buffer for a float32 layout: %v", err)
	}
	if _, err := PackSlice(dst, make([]byte, 16), 1, red); !errors.Is(err, ErrElemMismatch) {
		t.Fatalf("byte buffer for a float32 layout: %v", err)
	}
	if _, err := PackSlice(dst, make([]float64, 2), 1, mixed); !errors.Is(err, ErrElemMismatch) {
		t.Fatalf("float64 buffer for a mixed layout: %v", err)
	}
	if n, err := PackSlice(dst, make([]byte, 16), 1, mixed); err != nil || n != 12 {
		t.Fatalf("byte buffer for a mixed layout: %d, %v", n, err)
	}
	if n, err := PackSlice(dst, make([]float32, 3), 1, red); err != nil || n != 8 {
		t.Fatalf("float32 buffer: %d, %v", n, err)
	}
	type celsius float32
	if err := CheckElem[celsius](red); err != nil {
		t.Fatalf("named float32 for a float32 layout: %v", err)
	}
	type pairLike struct {
		X float64
		Y int32
	}
	pv, _ := Contiguous(2, MustOf[pair]())
	if err := CheckElem[pairLike](pv); err != nil {
		t.Fatalf("same-layout struct: %v", err)
	}
	if err := CheckElem[[2]float64](pv); !errors.Is(err, ErrElemMismatch) {
		t.Fatalf("different-layout array accepted: %v", err)
	}
	if err := CheckElem[int16](empty); err != nil {
		t.Fatalf("empty layout refused a buffer: %v", err)
	}
	if err := CheckElem[string](empty); !errors.Is(err, ErrElemMismatch) {
		t.Fatalf("empty layout accepted a []string: %v", err)
	}
	if err := CheckElem[float32](Type{}); !errors.Is(err, ErrInvalidType) {
		t.Fatalf("zero Type: %v", err)
	}
}
