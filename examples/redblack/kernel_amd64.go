//go:build amd64 && !purego

package main

import "golang.org/x/sys/cpu"

// Relaxation kernels, chosen once at start-up from what the CPU has.
const (
	kernGo     = iota // relaxRowGo alone
	kernAVX2          // 4 float64 lanes, 2 cells a block
	kernAVX512        // 8 float64 lanes, 4 cells a block
)

// kernel is the kernel in use; a variable so that tests and benchmarks can
// compare the kernels on one machine (set it before a run, never during).
var kernel = bestKernel()

func bestKernel() int {
	switch {
	case cpu.X86.HasAVX512F:
		return kernAVX512
	case cpu.X86.HasAVX2:
		return kernAVX2
	}
	return kernGo
}

// kernelName names the kernel in use.
func kernelName() string { return [...]string{"go", "avx2", "avx512"}[kernel] }

// # The stride-2 access, and why it is safe
//
// A sweep updates every other cell of a row: the cells of one colour, at
// columns j0, j0+2, ... The vector kernels do not gather them into packed
// registers (that takes shuffles on the one shuffle port). They compute on
// whole runs of consecutive columns instead, every lane as if it were a cell
// of the colour, and keep the even lanes only. A block of 2 cells (AVX2) or
// 4 (AVX-512) starting at column j covers columns j..j+s−1, s = 4 or 8:
//
//	column      j−1  j    j+1  j+2  j+3  …  j+s−1  j+s
//	row         L    C    R    C    R    …  R
//	             \   |   /
//	lane        0    1    2    3  …           (lane k is column j+k)
//	lane 0: C[j] + up[j] + dn[j] + row[j−1] + row[j+1]  kept (a cell)
//	lane 1: C[j+1] + up[j+1] + …                         dropped
//
// Per block it loads row[j..j+s−1] (the centres, lanes 0, 2, …), up and dn
// at the same columns, and row[j+1..j+s] (the right neighbours). The left
// neighbours row[j−1], row[j+1], … are the previous block's right load moved
// up two lanes (VPERM2F128, VALIGNQ) with this block's: loading them from
// memory would read column j+s−1 of the block just stored, and a load that
// overlaps an earlier (partial) store cannot be forwarded from it and waits
// for the store to reach the cache. AVX2 stores lanes 0 and 2 as two
// scalars rather than with VMASKMOVPD: on AMD Zen a VMASKMOVPD store is
// slow enough that the kernel with it lost to the scalar Go loop (Zen 3,
// BenchmarkKernels at 512: 580 ns a row, Go 410, two VMOVSD 250). The new
// values are summed in the order of relaxRowGo, (((C+up)+dn)+left)+right,
// then multiplied by 0.2: no fused multiply-add, so every lane is the bits
// relaxRowGo computes.
//
// Why it is safe:
//
//   - Writes: only the even lanes are stored (AVX2: two scalar VMOVSD
//     stores of lanes 0 and 2; AVX-512: VMOVUPD under a k-mask), so only
//     the cells of the colour are written, as relaxRowGo writes them; the
//     other colour's cells are not even rewritten with their own value. In
//     the threads and hybrid variants a neighbour fiber reads those cells of
//     this row during the same half-sweep.
//   - Reads: every load stays inside the three rows, between column j0−1
//     and the boundary column len(row)−1 (the caller counts the blocks so);
//     the kernels never read past the slices. The odd lanes read up and dn
//     at cells of the colour being updated, which a neighbour fiber may be
//     writing at that moment (the row above or below is its edge row). Those
//     lanes are dropped: their results are neither stored nor counted in the
//     residual, and an aligned 8-byte load on amd64 is never torn, so a race
//     there cannot change anything the kernel keeps. (The race detector does
//     not see assembly; under -race the Go kernel alone reads exactly the
//     cells it needs: build with -tags purego to check that path.)
//   - Odd lanes compute with ordinary grid values; with floating-point
//     exceptions masked, as Go runs, a NaN or infinity there is harmless.
//   - Dependencies: a cell's four neighbours are of the other colour, so no
//     cell of a sweep reads another cell of the same sweep: computing a
//     block at once gives the bits of computing its cells one by one.

// relaxVec runs the vector kernel on as many whole blocks of row as it can
// from column j0 and returns the column of the first cell it left to
// relaxRowGo.
func relaxVec(up, row, dn []float64, j0 int) int {
	blocks, span, _ := vecBlocks(up, row, dn, j0, false)
	if blocks == 0 {
		return j0
	}
	// Safety: blocks was counted so that every load and store stays inside
	// up, row and dn (see vecBlocks), which do not overlap one another.
	if kernel == kernAVX512 {
		relaxAVX512(&up[j0], &row[j0], &dn[j0], blocks)
	} else {
		relaxAVX2(&up[j0], &row[j0], &dn[j0], blocks)
	}
	return j0 + span*blocks
}

// relaxVecRes is relaxVec for relaxRowRes: it also returns max(res, the
// largest |new−old| of the cells it updated).
func relaxVecRes(up, row, dn []float64, j0 int, res float64) (int, float64) {
	blocks, span, _ := vecBlocks(up, row, dn, j0, true)
	if blocks == 0 {
		return j0, res
	}
	var m float64
	// Safety: as in relaxVec.
	if kernel == kernAVX512 {
		m = relaxResAVX512(&up[j0], &row[j0], &dn[j0], blocks)
	} else {
		m = relaxResAVX2(&up[j0], &row[j0], &dn[j0], blocks)
	}
	// m is the largest |new−old| of the blocks, +0 at least; the
	// comparison is relaxRowResGo's, so a NaN change is ignored alike.
	if m > res {
		res = m
	}
	return j0 + span*blocks, res
}

// vecBlocks returns how many blocks of span columns the kernel in use can
// do from column j0, span/2 cells a block, with the residual if res. The
// last block's loads end at column j0+span·blocks−1+reach: relaxAVX2 loads
// the block's own columns only (its last column is the right neighbour of
// its last cell, reach 0), relaxResAVX2 and the AVX-512 kernels one column
// further (reach 1); that column must be at most len(row)−1, the boundary
// column. It returns no blocks when there is no vector kernel or the rows
// are malformed.
func vecBlocks(up, row, dn []float64, j0 int, res bool) (blocks, span, reach int) {
	switch {
	case kernel == kernAVX512:
		span, reach = 8, 1
	case kernel == kernAVX2 && res:
		span, reach = 4, 1
	case kernel == kernAVX2:
		span, reach = 8, 0
	default:
		return 0, 0, 0
	}
	if j0 < 1 || len(up) < len(row) || len(dn) < len(row) || len(row)-reach-j0 < span {
		return 0, 0, 0
	}
	return (len(row) - reach - j0) / span, span, reach
}

// relaxAVX2 updates blocks×4 cells from row[0] (the first cell; row[−1]
// is its left neighbour) with AVX2, 8 columns a block. Portable
// equivalent:
//
//	for k := 0; k < 8*blocks; k += 2 {
//		row[k] = (row[k] + up[k] + dn[k] + row[k-1] + row[k+1]) * 0.2
//	}
//
// It reads row[−1 .. 8·blocks−1], up and dn[0 .. 8·blocks−1], and writes
// only row[0], row[2], … Unlike the scheme above, it computes on cells of
// the colour alone: it splits the 8 columns of a block into their even
// columns (the cells, in the lane order 0, 4, 2, 6 that VUNPCKLPD gives)
// and odd ones (their right neighbours, 1, 5, 3, 7), takes the left
// neighbours (−1, 3, 1, 5) from those with one VPERMPD and the previous
// block's lane, and stores the four results as scalars. Per cell that is
// half the additions of the 4-lane scheme and 3/4 of its loads: on Zen 3
// the kernel runs as fast as gcc's vectorization of the C loop (which
// splits the lanes the same way).
//
//go:noescape
func relaxAVX2(up, row, dn *float64, blocks int)

// relaxResAVX2 is relaxAVX2 that also returns the largest |new−old| (+0 at
// least; a NaN change is ignored), in the 4-lane scheme above: 2 cells a
// block of 4 columns, reading row[−1 .. 4·blocks] and up and dn[0 ..
// 4·blocks−1]. (The split lanes of relaxAVX2 ran slower here, on Zen 3:
// BenchmarkKernels n=512/avx2/res 377 against 264 ns a row, median of 8
// interleaved at load 4; at 2048, memory-bound, 1603 against 1641.)
//
//go:noescape
func relaxResAVX2(up, row, dn *float64, blocks int) float64

// relaxAVX512 is relaxAVX2 with AVX-512, 8 lanes and 4 cells a block: it
// reads row[−1 .. 8·blocks] and up and dn[0 .. 8·blocks−1].
//
//go:noescape
func relaxAVX512(up, row, dn *float64, blocks int)

// relaxResAVX512 is relaxResAVX2 with AVX-512.
//
//go:noescape
func relaxResAVX512(up, row, dn *float64, blocks int) float64

// setKernel makes kernel k (kernGo, kernAVX2, kernAVX512) the one in use if
// the CPU has it, and reports whether it did. Tests and benchmarks only.
func setKernel(k int) bool {
	switch {
	case k == kernGo,
		k == kernAVX2 && cpu.X86.HasAVX2,
		k == kernAVX512 && cpu.X86.HasAVX512F:
		kernel = k
		return true
	}
	return false
}
