//go:build amd64 && !purego

package datatype

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// useAVX2 selects the AVX2 kernels; a variable so tests can compare them
// with the portable loops.
var useAVX2 = cpu.X86.HasAVX2

// packEvens gathers every other w-byte word (w = 4 or 8) of src into dst,
// the SOR "one colour of a row" pattern, in blocks of 8 (w = 4) or 4
// (w = 8) words, and returns how many words it packed. The portable
// equivalent, which packs the rest, is:
//
//	for i := range n {
//		*(*[w]byte)(dst + i*w) = *(*[w]byte)(src + 2*i*w)
//	}
//
// A block reads the full 2*blockWords words of src it spans, including the
// odd words it drops, so the kernels stop one word short of the last even
// word: nothing past src + 2*(n-1)*w + w is read. Only dst's packed words
// are written.
//
// Safety: the caller guarantees that src points at 2*(n-1)*w + w readable
// bytes and dst at n*w writable bytes; the assembly touches no others.
func packEvens(dst, src unsafe.Pointer, n, w int) int {
	if !useAVX2 || n <= 1 {
		return 0
	}
	switch w {
	case 4:
		blocks := (n - 1) / 8
		if blocks > 0 {
			packEvens32AVX2(dst, src, blocks)
		}
		return blocks * 8
	case 8:
		blocks := (n - 1) / 4
		if blocks > 0 {
			packEvens64AVX2(dst, src, blocks)
		}
		return blocks * 4
	}
	return 0
}

// packEvens32AVX2 packs blocks*8 32-bit words: dst[i] = src[2*i].
//
//go:noescape
func packEvens32AVX2(dst, src unsafe.Pointer, blocks int)

// packEvens64AVX2 packs blocks*4 64-bit words: dst[i] = src[2*i].
//
//go:noescape
func packEvens64AVX2(dst, src unsafe.Pointer, blocks int)
