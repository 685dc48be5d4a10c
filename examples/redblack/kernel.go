package main

// Colors of cells: cell (i, j) of the global grid is red when i+j is even.
const (
	red   = 0
	black = 1
)

// firstCol returns the first column of color c in global row i: Snir's
// 1+((i%2)^color), written so that columns 1 to Cols are the interior.
func firstCol(i, c int) int { return 1 + (i+1+c)&1 }

// slab is a band of consecutive global rows with one ghost row above and one
// below, in row-major order: a process's stripe (Snir 2009 §4.3.3), or the
// whole grid when off is 0 and the band is every row. Local row l is global
// row l+off; rows 0 and len(a)/w−1 are the ghost (or boundary) rows.
//
// Every variant updates every cell through relaxRow, so the floating-point
// operations per cell, and their order, are those of the sequential code.
type slab struct {
	a   []float64
	w   int // row length, Cols+2
	off int // global row of local row 0
}

// newSlab returns a slab for global rows first..last with its ghost rows,
// filled with the initial values of a rows×cols grid.
func newSlab(first, last, rows, cols int) *slab {
	n := last - first + 1
	s := &slab{a: make([]float64, (n+2)*(cols+2)), w: cols + 2, off: first - 1}
	for l := 0; l <= n+1; l++ {
		fillRow(s.row(l), l+s.off, rows, cols)
	}
	return s
}

// row returns local row l.
func (s *slab) row(l int) []float64 { return s.a[l*s.w : (l+1)*s.w : (l+1)*s.w] }

// cells returns the slice of local row l from its first cell of color c (the
// buffer that a Vector of that color's cells is sent from or received into),
// that cell's column, and the number of cells of the color in the row.
func (s *slab) cells(l, c int) (buf []float64, j0, count int) {
	j0 = firstCol(l+s.off, c)
	cols := s.w - 2
	return s.row(l)[j0:], j0, (cols - j0 + 2) / 2
}

// relax updates the cells of color c in local rows lo..hi (inclusive; none if
// hi < lo), in row order, and returns max(res, the largest change of a cell)
// if track is set, res otherwise.
func (s *slab) relax(lo, hi, c int, res float64, track bool) float64 {
	for l := lo; l <= hi; l++ {
		up, row, dn := s.row(l-1), s.row(l), s.row(l+1)
		j0 := firstCol(l+s.off, c)
		if track {
			res = relaxRowRes(up, row, dn, j0, res)
		} else {
			relaxRow(up, row, dn, j0)
		}
	}
	return res
}

// relaxRow is the update of Snir 2009 §4.3.1 on one row:
//
//	a[i][j] = (a[i][j]+a[i-1][j]+a[i+1][j]+a[i][j-1]+a[i][j+1])*0.2
//
// for j = j0, j0+2, ... up to the last interior column. The vector kernel
// (kernel_amd64.go) does whole blocks of cells and relaxRowGo the rest; both
// add left to right and multiply separately, so they compute the same bits.
func relaxRow(up, row, dn []float64, j0 int) {
	relaxRowGo(up, row, dn, relaxVec(up, row, dn, j0))
}

// relaxRowRes is relaxRow that also returns max(res, |new−old|) over the
// row's updated cells: the residual, the max norm of one sweep's change.
// The maximum does not depend on the order cells are visited in, so the
// parallel variants agree with the sequential one on it exactly. res must
// not be negative (a residual is not): the vector kernel takes |−0| as +0.
func relaxRowRes(up, row, dn []float64, j0 int, res float64) float64 {
	j, res := relaxVecRes(up, row, dn, j0, res)
	return relaxRowResGo(up, row, dn, j, res)
}

// relaxRowGo is the portable kernel and the reference the vector kernels
// are tested against: relaxRow from column j0 on, one cell at a time. Go
// neither reorders the additions nor fuses them with the multiplication
// (there is no x*y+z), so every variant computes the same bits.
func relaxRowGo(up, row, dn []float64, j0 int) {
	if j0 < 1 {
		return // (never) lets the compiler drop the checks of row[j-1]
	}
	up, dn = up[:len(row)], dn[:len(row)]
	for j := j0; j < len(row)-1; j += 2 {
		row[j] = (row[j] + up[j] + dn[j] + row[j-1] + row[j+1]) * 0.2
	}
}

// relaxRowResGo is relaxRowRes one cell at a time (the reference).
func relaxRowResGo(up, row, dn []float64, j0 int, res float64) float64 {
	if j0 < 1 {
		return res
	}
	up, dn = up[:len(row)], dn[:len(row)]
	for j := j0; j < len(row)-1; j += 2 {
		old := row[j]
		v := (old + up[j] + dn[j] + row[j-1] + row[j+1]) * 0.2
		row[j] = v
		d := v - old
		if d < 0 {
			d = -d
		}
		if d > res {
			res = d
		}
	}
	return res
}

// copyInto copies the slab's interior rows into their place in g.
func (s *slab) copyInto(g *Grid) {
	n := len(s.a)/s.w - 2
	copy(g.Data[(s.off+1)*s.w:(s.off+1+n)*s.w], s.a[s.w:(n+1)*s.w])
}

// split returns the first and last row (1-based, inclusive) of part i of k
// of n rows: parts differ in size by at most one row.
func split(n, k, i int) (first, last int) {
	return 1 + i*n/k, (i + 1) * n / k
}
