package main

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
)

// Grid is Snir's array a[N+2][N+2], generalised to Rows×Cols interior
// cells: (Rows+2)×(Cols+2) float64 values in row-major order, rows 0 and
// Rows+1 and columns 0 and Cols+1 being the fixed boundary. Cell (i, j) is red
// when i+j is even and black when it is odd.
type Grid struct {
	Rows, Cols int
	// Data holds row i at Data[i*(Cols+2) : (i+1)*(Cols+2)].
	Data []float64
}

// NewGrid returns a grid of rows×cols interior cells filled with the initial
// values of every variant (see Initial).
func NewGrid(rows, cols int) *Grid {
	g := &Grid{Rows: rows, Cols: cols, Data: make([]float64, (rows+2)*(cols+2))}
	for i := 0; i <= rows+1; i++ {
		fillRow(g.Row(i), i, rows, cols)
	}
	return g
}

// Row returns row i (0 to Rows+1), boundary cells included.
func (g *Grid) Row(i int) []float64 {
	w := g.Cols + 2
	return g.Data[i*w : (i+1)*w : (i+1)*w]
}

// At returns cell (i, j).
func (g *Grid) At(i, j int) float64 { return g.Data[i*(g.Cols+2)+j] }

// FirstDiff returns the first cell, in row-major order, whose bits differ
// between g and h, and false if they are identical bit for bit.
// Grids of different shapes differ at (-1, -1).
func (g *Grid) FirstDiff(h *Grid) (i, j int, differ bool) {
	if g.Rows != h.Rows || g.Cols != h.Cols || len(g.Data) != len(h.Data) {
		return -1, -1, true
	}
	w := g.Cols + 2
	for k, v := range g.Data {
		if math.Float64bits(v) != math.Float64bits(h.Data[k]) {
			return k / w, k % w, true
		}
	}
	return 0, 0, false
}

// Equal reports whether g and h hold the same bits in every cell.
func (g *Grid) Equal(h *Grid) bool {
	_, _, d := g.FirstDiff(h)
	return !d
}

// Hash returns the 64-bit FNV-1a hash of the grid's cells, boundary
// included, in row-major order, each as the 8 little-endian bytes of its
// float64 bits: equal grids hash alike, and the C reference in
// bench/redblack-c computes the same hash, so grids of different programs
// can be compared by their hashes.
func (g *Grid) Hash() uint64 {
	h := fnv.New64a()
	buf := make([]byte, 0, 8*1024)
	for k, v := range g.Data {
		buf = binary.LittleEndian.AppendUint64(buf, math.Float64bits(v))
		if len(buf) == cap(buf) || k == len(g.Data)-1 {
			h.Write(buf)
			buf = buf[:0]
		}
	}
	return h.Sum64()
}

// CheckAgainst returns nil if g equals want bit for bit, and otherwise an
// error naming the first differing cell and both values.
func (g *Grid) CheckAgainst(want *Grid) error {
	i, j, d := g.FirstDiff(want)
	switch {
	case !d:
		return nil
	case i < 0:
		return fmt.Errorf("%w: grid is %d×%d, want %d×%d", ErrMismatch, g.Rows, g.Cols, want.Rows, want.Cols)
	default:
		return fmt.Errorf("%w: first difference at cell (%d, %d): got %v, want %v",
			ErrMismatch, i, j, g.At(i, j), want.At(i, j))
	}
}

// Initial is the value of global cell (i, j) before the first sweep, for a
// grid of rows×cols interior cells (Snir's init(a), which they leave
// unspecified). The boundary is 1 along the top, i/(rows+1) down the left
// side and 0 along the bottom and right; the interior is pseudo-random in
// [0, 1), so that a cell updated out of order or from a wrong neighbour
// changes the result's bits.
func Initial(rows, cols, i, j int) float64 {
	switch {
	case i == 0:
		return 1
	case j == 0:
		return float64(i) / float64(rows+1)
	case i == rows+1 || j == cols+1:
		return 0
	}
	// splitmix64 of the cell's index: a fixed, well-mixed function of (i, j).
	z := uint64(i)*uint64(cols+2) + uint64(j) + 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	z ^= z >> 31
	return float64(z>>11) * 0x1p-53
}

// fillRow sets row, global row i of a rows×cols grid, to its initial values.
func fillRow(row []float64, i, rows, cols int) {
	for j := range row {
		row[j] = Initial(rows, cols, i, j)
	}
}
