//go:build !amd64 || purego

package datatype

import "unsafe"

// useAVX2 is false: there are no vector kernels on this platform.
var useAVX2 = false

// packEvens packs no words here: the portable loops in moveRuns do all
// the work. See kernel_amd64.go for the vector version.
func packEvens(dst, src unsafe.Pointer, n, w int) int { return 0 }
