//go:build amd64 && !purego

package comm

import "golang.org/x/sys/cpu"

// useAVX2 selects the vector kernels of Sum; a variable so tests can
// compare them with the portable loops.
var useAVX2 = cpu.X86.HasAVX2

// addFloat32 sets inout[i] = in[i] + inout[i], len(in) == len(inout), in
// blocks of 32 with AVX2 and the rest with the loop. The portable
// equivalent is:
//
//	for i := range inout {
//		inout[i] = in[i] + inout[i]
//	}
func addFloat32(in, inout []float32) {
	in = in[:len(inout)]
	done := 0
	if blocks := len(inout) / 32; useAVX2 && blocks > 0 {
		// Safety: both slices hold blocks*32 elements at least.
		addFloat32AVX2(&inout[0], &in[0], blocks)
		done = blocks * 32
	}
	rest, src := inout[done:], in[done:]
	for i := range rest {
		rest[i] = src[i] + rest[i]
	}
}

// addFloat64 is addFloat32 for float64, in blocks of 16.
func addFloat64(in, inout []float64) {
	in = in[:len(inout)]
	done := 0
	if blocks := len(inout) / 16; useAVX2 && blocks > 0 {
		// Safety: both slices hold blocks*16 elements at least.
		addFloat64AVX2(&inout[0], &in[0], blocks)
		done = blocks * 16
	}
	rest, src := inout[done:], in[done:]
	for i := range rest {
		rest[i] = src[i] + rest[i]
	}
}

// addFloat32AVX2 adds blocks*32 float32s of src into dst.
//
//go:noescape
func addFloat32AVX2(dst, src *float32, blocks int)

// addFloat64AVX2 adds blocks*16 float64s of src into dst.
//
//go:noescape
func addFloat64AVX2(dst, src *float64, blocks int)
