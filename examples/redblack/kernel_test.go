package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// forKernels runs f once with every kernel this machine has, and restores
// the one in use.
func forKernels(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	saved := kernel
	defer func() { kernel = saved }()
	for k := 0; setKernel(k); k++ {
		t.Run(kernelName(), f)
	}
}

// sameBits reports whether a and b are the same float64, NaNs being equal
// to one another (their payloads are not specified across instructions).
func sameBits(a, b float64) bool {
	return math.Float64bits(a) == math.Float64bits(b) || (math.IsNaN(a) && math.IsNaN(b))
}

// randRow fills v with values that a grid may hold (in [0, 1)) or, with
// wild, with arbitrary bit patterns now and then: infinities, NaNs, huge
// and tiny numbers, negative zeros.
func randRow(r *rand.Rand, v []float64, wild bool) {
	for i := range v {
		v[i] = r.Float64()
		if wild && r.IntN(8) == 0 {
			switch r.IntN(4) {
			case 0:
				v[i] = math.Float64frombits(r.Uint64())
			case 1:
				v[i] = []float64{math.Inf(1), math.Inf(-1), math.NaN(), math.Copysign(0, -1)}[r.IntN(4)]
			case 2:
				v[i] = -v[i] * 1e300
			default:
				v[i] = v[i] * 1e-310 // subnormal
			}
		}
	}
}

// kernelCase is one row to relax: three rows of length n placed at offsets
// off into buffers with guard cells, the first cell j0, and res.
type kernelCase struct {
	n, j0    int
	off      [3]int
	res      float64
	wild     bool
	withRes  bool
	seed     uint64
	overlapU bool // up and dn are rows of one buffer, as in a grid
}

// check relaxes the case with the kernel in use and with relaxRowGo and
// compares every cell, the guards and the residual bit for bit.
func (c kernelCase) check(t *testing.T) {
	t.Helper()
	const guard = 9
	r := rand.New(rand.NewPCG(c.seed, uint64(c.n)))
	bufs := [3][]float64{}
	for k := range bufs {
		bufs[k] = make([]float64, c.off[k]+c.n+guard)
		randRow(r, bufs[k], c.wild)
	}
	if c.overlapU {
		// One buffer holding up, row, dn as consecutive rows.
		g := make([]float64, c.off[0]+3*c.n+guard)
		randRow(r, g, c.wild)
		bufs = [3][]float64{g, g, g}
		c.off = [3]int{c.off[0], c.off[0] + c.n, c.off[0] + 2*c.n}
	}
	rows := func(b [3][]float64) (up, row, dn []float64) {
		return b[0][c.off[0] : c.off[0]+c.n : c.off[0]+c.n],
			b[1][c.off[1] : c.off[1]+c.n : c.off[1]+c.n],
			b[2][c.off[2] : c.off[2]+c.n : c.off[2]+c.n]
	}
	var want [3][]float64
	for k := range bufs {
		want[k] = append([]float64(nil), bufs[k]...)
	}
	if c.overlapU {
		want[1], want[2] = want[0], want[0]
	}
	wu, wr, wd := rows(want)
	gu, gr, gd := rows(bufs)
	var wantRes, gotRes float64
	if c.withRes {
		wantRes = relaxRowResGo(wu, wr, wd, c.j0, c.res)
		gotRes = relaxRowRes(gu, gr, gd, c.j0, c.res)
	} else {
		relaxRowGo(wu, wr, wd, c.j0)
		relaxRow(gu, gr, gd, c.j0)
	}
	what := fmt.Sprintf("%s n=%d j0=%d off=%v res=%v wild=%v seed=%d", kernelName(), c.n, c.j0, c.off, c.withRes, c.wild, c.seed)
	for k := range bufs {
		for i := range bufs[k] {
			if !sameBits(bufs[k][i], want[k][i]) {
				t.Fatalf("%s: buffer %d index %d: got %v (%#x), want %v (%#x)", what, k, i,
					bufs[k][i], math.Float64bits(bufs[k][i]), want[k][i], math.Float64bits(want[k][i]))
			}
		}
	}
	if !sameBits(gotRes, wantRes) {
		t.Fatalf("%s: residual %v, want %v", what, gotRes, wantRes)
	}
}

// TestKernelsMatchGo compares every kernel with relaxRowGo on every row
// length up to 70, both first columns, several alignments, with and without
// the residual, with grid-like and wild values, on separate rows and on
// consecutive rows of one buffer, with guard cells around every row.
func TestKernelsMatchGo(t *testing.T) {
	forKernels(t, func(t *testing.T) {
		seed := uint64(1)
		for n := 1; n <= 70; n++ {
			for j0 := 1; j0 <= 2; j0++ {
				for _, off := range [][3]int{{0, 0, 0}, {1, 3, 2}, {7, 1, 4}, {8, 8, 8}} {
					for _, res := range []bool{false, true} {
						for _, wild := range []bool{false, true} {
							for _, ov := range []bool{false, true} {
								seed++
								kernelCase{n: n, j0: j0, off: off, res: 0.25 * float64(seed%5), wild: wild,
									withRes: res, seed: seed, overlapU: ov}.check(t)
							}
						}
					}
				}
			}
		}
	})
}

// TestKernelBlocks checks that the vector kernels do the bulk of a long row
// (so the tests above exercise them) and leave less than a block to Go.
func TestKernelBlocks(t *testing.T) {
	forKernels(t, func(t *testing.T) {
		for _, n := range []int{514, 2050, 11} {
			row := make([]float64, n)
			for j, res := 0, false; j < 4; j, res = j+1, !res {
				j0 := 1 + j/2
				blocks, span, reach := vecBlocks(row, row, row, j0, res)
				if kernel == kernGo {
					if blocks != 0 {
						t.Fatalf("portable kernel reports %d blocks", blocks)
					}
					continue
				}
				last := j0 + span*blocks // first column left to Go
				if read := last - 1 + reach; read > n-1 && blocks > 0 {
					t.Fatalf("n=%d j0=%d res=%v: %d blocks of %d read column %d, past the boundary %d", n, j0, res, blocks, span, read, n-1)
				}
				if left := (n - last) / 2; left > span/2 {
					t.Fatalf("n=%d j0=%d res=%v: %d blocks of %d leave %d cells to Go", n, j0, res, blocks, span, left)
				}
			}
		}
	})
}

// TestKernelsSameRun runs seq and threads on odd and even grids with each
// kernel and checks that all give the portable kernel's grid.
func TestKernelsSameRun(t *testing.T) {
	saved := kernel
	defer func() { kernel = saved }()
	for _, sz := range [][2]int{{31, 33}, {40, 64}, {17, 100}} {
		for _, tol := range []float64{0, 1e-3} {
			cfg := Config{Rows: sz[0], Cols: sz[1], Iters: 25, Tol: tol, Threads: 3, Workers: 2}
			setKernel(kernGo)
			want := seqRun(t, cfg)
			for k := 1; setKernel(k); k++ {
				for _, v := range []string{"seq", "threads"} {
					got, err := Run(v, cfg)
					if err != nil {
						t.Fatal(err)
					}
					sameAs(t, fmt.Sprintf("%s %s %dx%d tol %g", kernelName(), v, sz[0], sz[1], tol), got, want)
				}
			}
		}
	}
}

// FuzzKernels compares the kernels with relaxRowGo on rows whose length,
// first column, offsets, values and residual come from the input.
func FuzzKernels(f *testing.F) {
	f.Add(uint16(514), uint8(1), uint8(0), uint8(0), uint8(0), uint64(1), uint8(0))
	f.Add(uint16(19), uint8(2), uint8(3), uint8(5), uint8(1), uint64(7), uint8(3))
	f.Add(uint16(2050), uint8(2), uint8(1), uint8(2), uint8(3), uint64(99), uint8(6))
	f.Fuzz(func(t *testing.T, n uint16, j0, o1, o2, o3 uint8, seed uint64, flags uint8) {
		c := kernelCase{
			n: 1 + int(n%3000), j0: 1 + int(j0%2), off: [3]int{int(o1 % 17), int(o2 % 17), int(o3 % 17)},
			res: float64(flags>>3) * 0.01, withRes: flags&1 != 0, wild: flags&2 != 0, overlapU: flags&4 != 0,
			seed: seed,
		}
		forKernels(t, c.check)
	})
}

// BenchmarkKernels times one sweep of one colour over the rows of a
// 512×512 and a 2048×2048 grid with each kernel (ns/row).
func BenchmarkKernels(b *testing.B) {
	saved := kernel
	defer func() { kernel = saved }()
	for _, n := range []int{512, 2048} {
		g := NewGrid(n, n)
		s := &slab{a: g.Data, w: n + 2}
		for k := 0; setKernel(k); k++ {
			for _, res := range []bool{false, true} {
				name := fmt.Sprintf("n=%d/%s", n, kernelName())
				if res {
					name += "/res"
				}
				b.Run(name, func(b *testing.B) {
					c := 0
					for b.Loop() {
						s.relax(1, n, c, 0, res)
						c ^= 1
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/row")
				})
			}
		}
	}
}
