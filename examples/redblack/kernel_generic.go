//go:build !amd64 || purego

package main

// kernelName names the relaxation kernel in use: there is no vector kernel
// on this platform (or in a purego build).
func kernelName() string { return "go" }

// relaxVec does no cells here: relaxRowGo does the whole row. See
// kernel_amd64.go for the vector kernels.
func relaxVec(up, row, dn []float64, j0 int) int { return j0 }

// relaxVecRes is relaxVec for relaxRowRes.
func relaxVecRes(up, row, dn []float64, j0 int, res float64) (int, float64) { return j0, res }

// kernGo is the one kernel here.
const kernGo = 0

// kernel is always kernGo here.
var kernel = kernGo

// setKernel reports whether kernel k exists: only kernGo does here.
func setKernel(k int) bool { return k == kernGo }

// vecBlocks reports no vector blocks: there is no vector kernel here.
func vecBlocks(up, row, dn []float64, j0 int, res bool) (blocks, span, reach int) {
	return 0, 0, 0
}
