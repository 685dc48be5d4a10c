//go:build linux

package datatype

import (
	"bytes"
	"testing"

	"golang.org/x/sys/unix"
)

// TestPackEvensPageGuard places the source so that its last byte is the
// last byte of a readable page followed by an inaccessible one: a kernel
// that reads past the last packed word faults.
func TestPackEvensPageGuard(t *testing.T) {
	page := unix.Getpagesize()
	mem, err := unix.Mmap(-1, 0, 2*page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		t.Skipf("mmap: %v", err)
	}
	defer unix.Munmap(mem)
	if err := unix.Mprotect(mem[page:], unix.PROT_NONE); err != nil {
		t.Skipf("mprotect: %v", err)
	}
	for i := range page {
		mem[i] = byte(i*7 + 1)
	}
	forKernels(t, func(t *testing.T) {
		for _, w := range []int{4, 8} {
			for n := 1; n <= 64; n++ {
				span := 2*w*(n-1) + w // from the first to the end of the last packed word
				start := page - span
				src := mem[:page]
				dst := make([]byte, n*w)
				moveRuns(dst, src, start, 2*w, w, n, true)
				for i := range n {
					if !bytes.Equal(dst[i*w:i*w+w], src[start+2*w*i:start+2*w*i+w]) {
						t.Fatalf("w=%d n=%d: word %d wrong", w, n, i)
					}
				}
			}
		}
	})
}
