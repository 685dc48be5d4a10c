package datatype

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"unsafe"
)

// forKernels runs f with the vector kernels on (where the machine has
// them) and off, so the portable loops are tested on every machine.
func forKernels(t *testing.T, f func(t *testing.T)) {
	saved := useAVX2
	defer func() { useAVX2 = saved }()
	for _, on := range []bool{false, true} {
		if on && !saved {
			continue
		}
		useAVX2 = on
		name := "portable"
		if on {
			name = "vector"
		}
		t.Run(name, f)
	}
}

// TestPackEvensKernels checks the strided fast paths of moveRuns (every
// other 4- or 8-byte word, the SOR pattern) against a plain loop, at every
// length up to 100 and at unaligned offsets, with guard bytes.
func TestPackEvensKernels(t *testing.T) {
	forKernels(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(5, 6))
		for _, w := range []int{4, 8} {
			for n := 1; n <= 100; n++ {
				for _, skew := range []int{0, 1, 3} {
					mem := make([]byte, skew+2*w*n)
					fill(r, mem)
					at := skew
					whole, buf := guarded(n * w)
					moveRuns(buf, mem, at, 2*w, w, n, true)
					checkGuards(t, whole, "moveRuns")
					want := make([]byte, 0, n*w)
					for i := range n {
						want = append(want, mem[at+2*w*i:at+2*w*i+w]...)
					}
					if !bytes.Equal(buf, want) {
						t.Fatalf("w=%d n=%d skew=%d: packed %x, want %x", w, n, skew, buf, want)
					}
				}
			}
		}
	})
}

// TestPackEvensReturn checks how many words the vector kernels take: never
// the last one (which the portable loop packs, so no block reads past it;
// kernel_linux_test.go checks that with a guard page), and most of a long
// run where the machine has them.
func TestPackEvensReturn(t *testing.T) {
	for _, w := range []int{4, 8} {
		for n := range 40 {
			src := make([]byte, 2*w*n)
			dst := make([]byte, w*n)
			k := packEvens(unsafe.Pointer(unsafe.SliceData(dst)), unsafe.Pointer(unsafe.SliceData(src)), n, w)
			if k < 0 || k > max(n-1, 0) {
				t.Fatalf("w=%d n=%d: packEvens packed %d words; must leave the last word to the loop", w, n, k)
			}
			if useAVX2 && n > 16 && k == 0 {
				t.Fatalf("w=%d n=%d: vector kernel packed nothing", w, n)
			}
		}
	}
}
