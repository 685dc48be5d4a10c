package comm

import (
	"encoding/binary"
	"math"
	"testing"
)

// sameFloat reports whether a and b are the same number: equal bits, or
// both NaN (an addition of two NaNs may keep either payload).
func sameFloat[F float32 | float64](a, b F) bool {
	if a != a && b != b {
		return true
	}
	switch x := any(a).(type) {
	case float32:
		return math.Float32bits(x) == math.Float32bits(float32(b))
	default:
		return math.Float64bits(float64(a)) == math.Float64bits(float64(b))
	}
}

// checkAdd runs add (addFloat32 or addFloat64) on in and copies of inout
// with the vector kernels and without, and compares both with the loop
// element by element.
func checkAdd[F float32 | float64](t *testing.T, add func(in, inout []F), in, inout []F) {
	t.Helper()
	want := make([]F, len(inout))
	for i := range inout {
		want[i] = in[i] + inout[i]
	}
	saved := useAVX2
	defer func() { useAVX2 = saved }()
	for _, vec := range []bool{saved, false} {
		useAVX2 = vec
		got := append([]F(nil), inout...)
		src := append([]F(nil), in...)
		add(src, got)
		for i := range got {
			if !sameFloat(got[i], want[i]) {
				t.Fatalf("vector %v, %d elements: element %d is %v, want %v (%v + %v)", vec, len(got), i, got[i], want[i], in[i], inout[i])
			}
		}
		for i := range src {
			if !sameFloat(src[i], in[i]) {
				t.Fatalf("vector %v: the input changed at %d", vec, i)
			}
		}
	}
}

// floats fills n numbers from data, special values included.
func floats[F float32 | float64](data []byte, n int, seed uint64) []F {
	specials := []float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.NaN(), math.MaxFloat32, math.SmallestNonzeroFloat64, 1e-40}
	out := make([]F, n)
	x := seed | 1
	for i := range out {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		if len(data) >= 8 {
			x ^= binary.LittleEndian.Uint64(data)
			data = data[8:]
		}
		if x%7 == 0 {
			out[i] = F(specials[x/7%uint64(len(specials))])
			continue
		}
		out[i] = F(math.Float64frombits(x>>2 | 0x3000000000000000))
		if x&2 != 0 {
			out[i] = -out[i]
		}
	}
	return out
}

// TestAddKernels: the vector additions give the loop's results at every
// length around the block sizes and from unaligned starts.
func TestAddKernels(t *testing.T) {
	for n := 0; n <= 100; n++ {
		for off := range 3 {
			in32, io32 := floats[float32](nil, n+off, uint64(n)), floats[float32](nil, n+off, uint64(n)+999)
			checkAdd(t, addFloat32, in32[off:], io32[off:])
			in64, io64 := floats[float64](nil, n+off, uint64(n)), floats[float64](nil, n+off, uint64(n)+777)
			checkAdd(t, addFloat64, in64[off:], io64[off:])
		}
	}
}

// TestSumKinds: Sum uses the kernels on float32, float64 and types defined
// on them, with the loop's results.
func TestSumKinds(t *testing.T) {
	type celsius float32
	in, inout := []celsius{1.5, -2, 3, 4}, []celsius{0.25, 2, 1e30, -4}
	Sum[celsius]().Apply(in, inout)
	if want := []celsius{1.75, 0, 1e30 + 3, 0}; inout[0] != want[0] || inout[1] != want[1] || inout[2] != want[2] || inout[3] != want[3] {
		t.Errorf("Sum[celsius] = %v, want %v", inout, want)
	}
	a := floats[float64](nil, 1000, 5)
	b := floats[float64](nil, 1000, 6)
	want := append([]float64(nil), b...)
	for i := range want {
		want[i] += a[i]
	}
	Sum[float64]().Apply(a, b)
	for i := range b {
		if !sameFloat(b[i], want[i]) {
			t.Fatalf("Sum[float64] element %d: %v, want %v", i, b[i], want[i])
		}
	}
}

// FuzzAdd compares the vector additions with the loop on lengths, offsets
// and values from the input.
func FuzzAdd(f *testing.F) {
	f.Add(uint16(33), uint8(1), uint64(1), []byte{})
	f.Add(uint16(200), uint8(0), uint64(7), []byte("\x00\x00\xc0\x7f\x00\x00\xc0\xff"))
	f.Fuzz(func(t *testing.T, n uint16, off uint8, seed uint64, data []byte) {
		size, o := int(n%2000), int(off%8)
		in32, io32 := floats[float32](data, size+o, seed), floats[float32](data, size+o, ^seed)
		checkAdd(t, addFloat32, in32[o:], io32[o:])
		in64, io64 := floats[float64](data, size+o, seed), floats[float64](data, size+o, ^seed)
		checkAdd(t, addFloat64, in64[o:], io64[o:])
	})
}

// BenchmarkSum: Sum on 131072 float32s (half of a 1 MiB allreduce between
// two processes), with the vector kernel and with the loop.
func BenchmarkSum(b *testing.B) {
	saved := useAVX2
	defer func() { useAVX2 = saved }()
	const n = 1 << 17
	in, inout := make([]float32, n), make([]float32, n)
	for _, vec := range []bool{false, true} {
		name := "loop"
		if vec {
			name = "avx2"
		}
		b.Run(name, func(b *testing.B) {
			useAVX2 = vec && saved
			op := Sum[float32]()
			b.SetBytes(n * 4)
			for b.Loop() {
				op.Apply(in, inout)
			}
		})
	}
}
