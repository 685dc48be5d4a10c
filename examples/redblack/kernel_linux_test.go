//go:build linux

package main

import (
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestKernelsPageGuard places up, row and dn each against an inaccessible
// page, first so that its last cell (the boundary column) ends a readable
// page, then so that its first cell starts one: a kernel that reads past
// either end of a row faults. The results are checked against relaxRowGo.
func TestKernelsPageGuard(t *testing.T) {
	page := unix.Getpagesize()
	// Three readable pages, each followed by an inaccessible one.
	mem, err := unix.Mmap(-1, 0, 6*page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		t.Skipf("mmap: %v", err)
	}
	defer unix.Munmap(mem)
	for k := range 3 {
		if err := unix.Mprotect(mem[(2*k+1)*page:(2*k+2)*page], unix.PROT_NONE); err != nil {
			t.Skipf("mprotect: %v", err)
		}
	}
	// Safety: the mapping is page-aligned, so float64-aligned, and stays
	// mapped until the deferred Munmap, after every use of cells.
	cells := unsafe.Slice((*float64)(unsafe.Pointer(&mem[0])), 6*page/8)
	per := page / 8 // float64s a page
	forKernels(t, func(t *testing.T) {
		for n := 2; n <= 80; n++ {
			for _, atEnd := range []bool{true, false} {
				for j0 := 1; j0 <= 2; j0++ {
					var rows [3][]float64
					for k := range rows {
						start := 2 * k * per
						if atEnd {
							start += per - n
						} else {
							// Start on the readable page after the guard.
							start = (2*k + 2) % 6 * per
						}
						rows[k] = cells[start : start+n : start+n]
						for i := range rows[k] {
							rows[k][i] = float64(i*7+k) / 13
						}
					}
					want := make([][]float64, 3)
					for k := range rows {
						want[k] = append([]float64(nil), rows[k]...)
					}
					wr := relaxRowResGo(want[0], want[1], want[2], j0, 0)
					gr := relaxRowRes(rows[0], rows[1], rows[2], j0, 0)
					relaxRowGo(want[0], want[1], want[2], j0)
					relaxRow(rows[0], rows[1], rows[2], j0)
					for i := range n {
						if !sameBits(rows[1][i], want[1][i]) {
							t.Fatalf("n=%d j0=%d atEnd=%v: cell %d = %v, want %v", n, j0, atEnd, i, rows[1][i], want[1][i])
						}
					}
					if !sameBits(gr, wr) {
						t.Fatalf("n=%d j0=%d atEnd=%v: residual %v, want %v", n, j0, atEnd, gr, wr)
					}
				}
			}
		}
	})
}
