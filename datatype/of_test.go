package datatype

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"unsafe"
)

type particle struct {
	Pos  [3]float64
	ID   int32
	Live bool
}

type withPtr struct {
	A float64
	B struct {
		C [2]*int
	}
}

func TestOfElements(t *testing.T) {
	cases := []struct {
		t          Type
		size       int
		align      int
		padding    int
		sig        string
		str        string
		goSize     uintptr
		goAlign    int
		elemIsSelf bool
	}{
		{Float32, 4, 4, 0, "f32", "float32", 4, 4, true},
		{Int, 8, 8, 0, "i64", "int", unsafe.Sizeof(int(0)), int(unsafe.Alignof(int(0))), true},
		{Bool, 1, 1, 0, "bool", "bool", 1, 1, true},
		{Complex128, 16, 8, 0, "c128", "complex128", 16, 8, true},
		{MustOf[pair](), 16, 8, 4, "{f64@0,i32@8}:16", "datatype.pair", 16, 8, true},
		{MustOf[[3]uint16](), 6, 2, 0, "[3]u16", "[3]uint16", 6, 2, true},
		{MustOf[particle](), 32, 8, 3, "{[3]f64@0,i32@24,bool@28}:32", "datatype.particle", 32, 8, true},
	}
	for _, c := range cases {
		if unsafe.Sizeof(uintptr(0)) != 8 && c.str == "int" {
			continue
		}
		if c.t.Size() != c.size || c.t.Extent() != c.size || int(c.goSize) != c.size {
			t.Errorf("%v: Size %d Extent %d, want %d", c.t, c.t.Size(), c.t.Extent(), c.size)
		}
		if c.t.Align() != c.align || c.align != c.goAlign {
			t.Errorf("%v: Align %d, want %d", c.t, c.t.Align(), c.align)
		}
		if c.t.Padding() != c.padding {
			t.Errorf("%v: Padding %d, want %d", c.t, c.t.Padding(), c.padding)
		}
		if c.t.Signature() != c.sig {
			t.Errorf("%v: Signature %q, want %q", c.t, c.t.Signature(), c.sig)
		}
		if c.t.String() != c.str {
			t.Errorf("String %q, want %q", c.t.String(), c.str)
		}
		if !c.t.IsContiguous() || c.t.Elem() == nil {
			t.Errorf("%v: element types are contiguous and their own element", c.t)
		}
	}
}

func TestOfRefuses(t *testing.T) {
	check := func(rt reflect.Type, err error, field string, kind reflect.Kind) {
		t.Helper()
		if !errors.Is(err, ErrUnsupported) {
			t.Fatalf("%v: error %v, want ErrUnsupported", rt, err)
		}
		var ue *UnsupportedTypeError
		if !errors.As(err, &ue) || ue.Type != rt || ue.Field != field || ue.Kind != kind {
			t.Fatalf("%v: error %#v, want field %q kind %v", rt, err, field, kind)
		}
		if !strings.Contains(err.Error(), rt.String()) {
			t.Fatalf("error %q does not name the type", err)
		}
	}
	_, err := Of[*int]()
	check(reflect.TypeFor[*int](), err, "", reflect.Pointer)
	_, err = Of[string]()
	check(reflect.TypeFor[string](), err, "", reflect.String)
	_, err = Of[[]float64]()
	check(reflect.TypeFor[[]float64](), err, "", reflect.Slice)
	_, err = Of[map[int]int]()
	check(reflect.TypeFor[map[int]int](), err, "", reflect.Map)
	_, err = Of[any]()
	check(reflect.TypeFor[any](), err, "", reflect.Interface)
	_, err = Of[chan int]()
	check(reflect.TypeFor[chan int](), err, "", reflect.Chan)
	_, err = Of[func()]()
	check(reflect.TypeFor[func()](), err, "", reflect.Func)
	_, err = Of[unsafe.Pointer]()
	check(reflect.TypeFor[unsafe.Pointer](), err, "", reflect.UnsafePointer)
	_, err = Of[withPtr]()
	check(reflect.TypeFor[withPtr](), err, "B.C[]", reflect.Pointer)
	_, err = Of[struct{ S string }]()
	check(reflect.TypeFor[struct{ S string }](), err, "S", reflect.String)
	_, err = Of[struct{}]()
	check(reflect.TypeFor[struct{}](), err, "", reflect.Struct)

	defer func() {
		if r := recover(); r == nil {
			t.Fatal("MustOf[string] did not panic")
		}
	}()
	MustOf[string]()
}

func TestOfCached(t *testing.T) {
	a, b := MustOf[particle](), MustOf[particle]()
	if a != b {
		t.Fatal("Of[T] built two Types for one T")
	}
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := Of[particle](); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("cached Of allocates %v times", allocs)
	}
}

func TestSignatureAndString(t *testing.T) {
	red, _ := Vector(5000, 1, 2, Float32)
	if got := red.String(); got != "Vector(5000, 1, 2, float32)" {
		t.Errorf("String %q", got)
	}
	if got := red.Signature(); got != "5000*f32" {
		t.Errorf("Signature %q", got)
	}
	mixed, _ := Struct([]int{1, 2}, []int{0, 8}, []Type{Float64, Int32})
	if got := mixed.Signature(); got != "(1*f64,2*i32)" {
		t.Errorf("Signature %q", got)
	}
	two, _ := Contiguous(2, mixed)
	if got := two.Signature(); got != "2*(1*f64,2*i32)" {
		t.Errorf("Signature %q", got)
	}
	if got := two.String(); got != "Contiguous(2, Struct([1 2], [0 8], [float64, int32]))" {
		t.Errorf("String %q", got)
	}
	long, _ := IndexedBlock(1, make([]int, 20), Byte)
	if got := long.String(); !strings.Contains(got, "(20 total)") {
		t.Errorf("long String %q not abridged", got)
	}
	// Same packed stream, different layouts: same signature.
	con, _ := Contiguous(5000, Float32)
	if con.Signature() != red.Signature() {
		t.Errorf("signatures %q and %q differ", con.Signature(), red.Signature())
	}
	if (Type{}).String() == "" || (Type{}).Valid() {
		t.Error("zero Type")
	}
}
