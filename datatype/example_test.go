package datatype_test

import (
	"fmt"
	"io"

	"github.com/fibermpi/fibermpi/datatype"
)

// The red cells of one row of a red-black SOR grid (Snir 2009 §4.3): every
// other float32, as MPI_Type_vector((N+1)/2, 1, 2, MPI_FLOAT).
func ExampleVector() {
	const n = 10
	row := make([]float32, n)
	for j := range row {
		row[j] = float32(j)
	}
	red, err := datatype.Vector((n+1)/2, 1, 2, datatype.Float32)
	if err != nil {
		panic(err)
	}
	buf := make([]byte, red.Size())
	if _, err := datatype.PackSlice(buf, row, 1, red); err != nil {
		panic(err)
	}
	// The receiver's ghost row gets the same cells back in place.
	ghost := make([]float32, n)
	if _, err := datatype.UnpackSlice(ghost, buf, 1, red); err != nil {
		panic(err)
	}
	fmt.Println(red, red.Size(), red.Extent())
	fmt.Println(ghost)
	// Output:
	// Vector(5, 1, 2, float32) 20 36
	// [0 0 2 0 4 0 6 0 8 0]
}

// A column of a row-major matrix, and the same column type resized so that
// consecutive instances are consecutive columns.
func ExampleResized() {
	m := []float64{
		11, 12, 13,
		21, 22, 23,
	}
	col, _ := datatype.Vector(2, 1, 3, datatype.Float64)
	cols, _ := datatype.Resized(col, 0, 8)
	buf := make([]byte, 3*cols.Size())
	_, _ = datatype.PackSlice(buf, m, 3, cols) // all three columns, one after another
	t := make([]float64, 6)
	_, _ = datatype.UnpackSlice(t, buf, 6, datatype.Float64)
	fmt.Println(t) // the transpose
	// Output: [11 21 12 22 13 23]
}

// The interior of a 4×5 array: the 2×3 block at row 1, column 1.
func ExampleSubarray() {
	a := make([]int32, 4*5)
	for i := range a {
		a[i] = int32(i)
	}
	inner, _ := datatype.Subarray([]int{4, 5}, []int{2, 3}, []int{1, 1}, datatype.Int32)
	buf := make([]byte, inner.Size())
	_, _ = datatype.PackSlice(buf, a, 1, inner)
	got := make([]int32, 6)
	_, _ = datatype.UnpackSlice(got, buf, 6, datatype.Int32)
	fmt.Println(got, inner.Extent())
	for off, n := range datatype.Runs(1, inner) {
		fmt.Printf("run at byte %d, %d bytes\n", off, n)
	}
	// Output:
	// [6 7 8 11 12 13] 80
	// run at byte 24, 12 bytes
	// run at byte 44, 12 bytes
}

// Of maps a Go struct to an element type with its size, padding and wire
// description; types holding pointers are refused.
func ExampleOf() {
	type cell struct {
		V float64
		K int32
	}
	t, _ := datatype.Of[cell]()
	fmt.Println(t.Size(), t.Align(), t.Padding(), t.Signature())
	_, err := datatype.Of[struct{ Name string }]()
	fmt.Println(err)
	// Output:
	// 16 8 4 {f64@0,i32@8}:16
	// datatype: type struct { Name string } is not a fixed-size value type: field Name is a string, a header pointing to memory elsewhere
}

// Struct describes a record of mixed types by byte displacements; it packs
// from and into []byte buffers.
func ExampleStruct() {
	rec, _ := datatype.Struct([]int{1, 2}, []int{0, 8}, []datatype.Type{datatype.Float64, datatype.Int16})
	fmt.Println(rec.Size(), rec.Extent(), rec.Signature(), rec.Elem())
	// Output: 12 16 (1*f64,2*i16) <nil>
}

// A Packer fills fixed-size packets (an eager protocol's payloads) one at a
// time; an Unpacker drains them on the other side.
func ExamplePacker() {
	src := make([]uint16, 40)
	for i := range src {
		src[i] = uint16(i)
	}
	odd, _ := datatype.Vector(20, 1, 2, datatype.Uint16)
	p, _ := datatype.NewPacker(datatype.Bytes(src[1:]), 1, odd)
	dst := make([]uint16, 40)
	u, _ := datatype.NewUnpacker(datatype.Bytes(dst[1:]), 1, odd)
	packet := make([]byte, 16)
	for {
		n, err := p.Read(packet)
		if err == io.EOF {
			break
		}
		fmt.Print(n, " ")
		_, _ = u.Write(packet[:n])
	}
	fmt.Println(u.Done(), dst[:8])
	// Output: 16 16 8 true [0 1 0 3 0 5 0 7]
}

// Bytes views a []T as bytes without copying: contiguous data goes to the
// wire as it is.
func ExampleBytes() {
	xs := []uint32{1, 2}
	b := datatype.Bytes(xs)
	b[4] = 7 // the low byte of xs[1] on a little-endian machine
	fmt.Println(len(b), xs[1] == 7 || xs[1] == 2|7<<24)
	row, _ := datatype.Contiguous(2, datatype.Uint32)
	v, ok, _ := datatype.ContiguousView(b, 1, row)
	fmt.Println(ok, &v[0] == &b[0])
	// Output:
	// 8 true
	// true true
}
