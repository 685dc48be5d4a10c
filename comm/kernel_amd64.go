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
func addFloat32(in, inout []float32) { addBlocks(in, inout, 32, addFloat32AVX2) }

// addFloat64 is addFloat32 for float64, in blocks of 16.
func addFloat64(in, inout []float64) { addBlocks(in, inout, 16, addFloat64AVX2) }

// addBlocks adds in into inout: whole blocks of per elements with kernel
// (when the processor has AVX2), the rest with the loop.
func addBlocks[F float32 | float64](in, inout []F, per int, kernel func(dst, src *F, blocks int)) {
	in = in[:len(inout)]
	done := 0
	if blocks := len(inout) / per; useAVX2 && blocks > 0 {
		// Safety: both slices hold blocks*per elements at least.
		kernel(&inout[0], &in[0], blocks)
		done = blocks * per
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
