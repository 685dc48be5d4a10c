package main

import (
	"errors"
	"fmt"
	"math"
	"os"
	"testing"
	"time"

	"github.com/fibermpi/fibermpi/internal/testenv"
	"go.uber.org/goleak"
)

// TestMain lets the test binary be the command: fmpirun starts it with
// REDBLACK_CHILD=1 (see procs_test.go), and it runs cli with its arguments
// instead of the tests.
func TestMain(m *testing.M) {
	if os.Getenv("REDBLACK_CHILD") == "1" {
		os.Exit(cli(os.Args[1:], os.Stdout, os.Stderr))
	}
	goleak.VerifyTestMain(m)
}

// layouts are the decompositions every parallel variant is checked with.
type layoutCase struct{ ranks, threads, endpoints, workers int }

var layoutCases = []layoutCase{
	{1, 1, 1, 1},
	{2, 1, 1, 1},
	{1, 2, 1, 2},
	{2, 2, 2, 2},
	{2, 2, 1, 2},
	{3, 2, 2, 2},
	{3, 3, 1, 1},
	{4, 3, 2, 2},
	{5, 1, 1, 2},
}

var gridSizes = [][2]int{{1, 1}, {1, 6}, {2, 3}, {5, 4}, {7, 7}, {12, 9}, {13, 1}, {31, 33}}

// seqResult caches seq's result per grid and stopping rule.
func seqRun(t *testing.T, cfg Config) *Result {
	t.Helper()
	r, err := Run("seq", cfg)
	if err != nil {
		t.Fatalf("seq %+v: %v", cfg, err)
	}
	return r
}

// sameAs fails t unless r equals want bit for bit, with the same iteration
// count and residual.
func sameAs(t *testing.T, what string, r, want *Result) {
	t.Helper()
	if r.Iters != want.Iters {
		t.Errorf("%s: %d iterations, seq %d", what, r.Iters, want.Iters)
	}
	if math.Float64bits(r.Res) != math.Float64bits(want.Res) {
		t.Errorf("%s: residual %v, seq %v", what, r.Res, want.Res)
	}
	if err := r.Grid.CheckAgainst(want.Grid); err != nil {
		t.Errorf("%s: %v", what, err)
	}
}

func TestVariantsMatchSeq(t *testing.T) {
	for k, sz := range gridSizes {
		iters := []int{3}
		if k%3 == 0 {
			iters = []int{1, 2}
		}
		for _, it := range iters {
			base := Config{Rows: sz[0], Cols: sz[1], Iters: it}
			want := seqRun(t, base)
			for _, v := range variants[1:] {
				for _, lc := range layoutCases {
					cfg := base
					cfg.Ranks, cfg.Threads, cfg.Endpoints, cfg.Workers = lc.ranks, lc.threads, lc.endpoints, lc.workers
					if lc.ranks%2 == 1 {
						cfg.Spin = 20 * time.Microsecond // sleeping workers too
					}
					if v.Check(cfg) != nil {
						continue // too many stripes for this grid: TestStripeErrors
					}
					name := fmt.Sprintf("%s/%dx%d/iters=%d/%+v", v.Name, sz[0], sz[1], it, lc)
					r, err := v.Run(cfg)
					if err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					sameAs(t, name, r, want)
				}
			}
		}
	}
}

// TestToleranceMatchesSeq runs to convergence: every variant must stop at
// the same iteration as seq with the same grid.
func TestToleranceMatchesSeq(t *testing.T) {
	for _, sz := range [][2]int{{7, 6}, {9, 8}} {
		base := Config{Rows: sz[0], Cols: sz[1], Iters: 10_000, Tol: 1e-6, Spin: 20 * time.Microsecond}
		want := seqRun(t, base)
		if want.Iters == base.Iters || want.Res >= base.Tol {
			t.Fatalf("seq did not converge on %v: %d iterations, residual %v", sz, want.Iters, want.Res)
		}
		// The iteration before the last was not converged.
		prev := seqRun(t, Config{Rows: sz[0], Cols: sz[1], Iters: want.Iters - 1})
		if prev.Res < base.Tol {
			t.Fatalf("seq ran past convergence: residual %v after %d iterations", prev.Res, prev.Iters)
		}
		for _, v := range variants[1:] {
			for _, lc := range []layoutCase{{2, 2, 2, 2}, {3, 2, 1, 1}, {3, 1, 1, 2}} {
				cfg := base
				cfg.Ranks, cfg.Threads, cfg.Endpoints, cfg.Workers = lc.ranks, lc.threads, lc.endpoints, lc.workers
				r, err := v.Run(cfg)
				if err != nil {
					t.Fatalf("%s %+v: %v", v.Name, lc, err)
				}
				sameAs(t, fmt.Sprintf("%s/%v/tol/%+v", v.Name, sz, lc), r, want)
			}
		}
	}
}

// TestLargerGrid uses rows longer than the eager limit (rendezvous halos)
// and more fibers than workers.
func TestLargerGrid(t *testing.T) {
	n, iters := 1100, 3 // 550 float64 cells of a color: 4400 bytes; 2200 columns below
	rows, cols := 40, 2200
	if testing.Short() {
		rows, n, iters = 24, 24, 2
	}
	_ = n
	base := Config{Rows: rows, Cols: cols, Iters: iters}
	want := seqRun(t, base)
	for _, v := range variants[1:] {
		cfg := base
		cfg.Ranks, cfg.Threads, cfg.Endpoints, cfg.Workers = 3, 4, 2, 2
		r, err := v.Run(cfg)
		if err != nil {
			t.Fatalf("%s: %v", v.Name, err)
		}
		sameAs(t, v.Name, r, want)
	}
}

// TestManyFibers runs stripes of one row each.
func TestManyFibers(t *testing.T) {
	rows := 240
	if testenv.RaceEnabled {
		rows = 60
	}
	base := Config{Rows: rows, Cols: 10, Iters: 4}
	want := seqRun(t, base)
	for _, c := range []struct {
		v                         string
		ranks, threads, endpoints int
	}{
		{"threads", 1, rows, 1},
		{"mpi", rows, 1, 1},
		{"hybrid", rows / 4, 4, 2},
		{"hybrid", rows / 2, 2, 1},
		{"funneled", rows / 3, 3, 1},
	} {
		r, err := Run(c.v, Config{Rows: rows, Cols: 10, Iters: 4, Ranks: c.ranks, Threads: c.threads, Endpoints: c.endpoints, Workers: 2})
		if err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		sameAs(t, fmt.Sprintf("%+v", c), r, want)
	}
}

// TestSeqAgainstReference checks seq against a direct transcription of Snir 2009
// §4.3.1 on a [][]float64, with Snir's bugs fixed (see the package
// documentation): the first column of a row is 1+((i%2)^color) and the color
// changes after each sweep, not after each row.
func TestSeqAgainstReference(t *testing.T) {
	const rows, cols, iters = 11, 8, 5
	a := make([][]float64, rows+2)
	for i := range a {
		a[i] = make([]float64, cols+2)
		for j := range a[i] {
			a[i][j] = Initial(rows, cols, i, j)
		}
	}
	// In Snir's formula color RED (0) starts row 1 at column 2: its
	// "red" is our black. The sweep order is what matters: the sweep that
	// starts row 1 at column 1 comes first here, as our red sweep does.
	color := 1
	for range 2 * iters {
		for i := 1; i <= rows; i++ {
			for j := 1 + ((i % 2) ^ color); j <= cols; j += 2 {
				a[i][j] = (a[i][j] + a[i-1][j] + a[i+1][j] + a[i][j-1] + a[i][j+1]) * 0.2
			}
		}
		color ^= 1
	}
	r := seqRun(t, Config{Rows: rows, Cols: cols, Iters: iters})
	for i := range a {
		for j := range a[i] {
			if math.Float64bits(a[i][j]) != math.Float64bits(r.Grid.At(i, j)) {
				t.Fatalf("cell (%d, %d): seq %v, reference %v", i, j, r.Grid.At(i, j), a[i][j])
			}
		}
	}
}

func TestStripeErrors(t *testing.T) {
	for _, c := range []struct {
		v                string
		rows, ranks, thr int
		need             int
	}{
		{"mpi", 3, 4, 1, 4},
		{"threads", 5, 1, 6, 6},
		{"hybrid", 7, 4, 2, 8},
		{"funneled", 5, 2, 3, 6},
	} {
		_, err := Run(c.v, Config{Rows: c.rows, Cols: 4, Iters: 1, Ranks: c.ranks, Threads: c.thr, Endpoints: 1})
		var se *StripeError
		if !errors.As(err, &se) || !errors.Is(err, ErrStripes) || !errors.Is(err, ErrConfig) {
			t.Fatalf("%s with %d rows, %d ranks, %d threads: error %v, want a *StripeError", c.v, c.rows, c.ranks, c.thr, err)
		}
		if se.Rows != c.rows || se.Stripes != c.need || se.Variant != c.v {
			t.Errorf("%s: %+v, want rows %d, stripes %d", c.v, se, c.rows, c.need)
		}
		t.Log(err)
	}
}

func TestBadConfig(t *testing.T) {
	ok := Config{Rows: 4, Cols: 4, Iters: 1}
	for _, c := range []struct {
		name string
		v    string
		mod  func(*Config)
	}{
		{"no rows", "seq", func(c *Config) { c.Rows = 0 }},
		{"negative cols", "mpi", func(c *Config) { c.Cols = -1 }},
		{"huge", "seq", func(c *Config) { c.Rows, c.Cols = 1<<20, 1<<20 }},
		{"no iterations", "threads", func(c *Config) { c.Iters = 0 }},
		{"negative tol", "seq", func(c *Config) { c.Tol = -1 }},
		{"NaN tol", "seq", func(c *Config) { c.Tol = math.NaN() }},
		{"negative ranks", "mpi", func(c *Config) { c.Ranks = -2 }},
		{"negative workers", "threads", func(c *Config) { c.Workers = -1 }},
		{"three endpoints", "hybrid", func(c *Config) { c.Endpoints, c.Threads = 3, 4 }},
		{"endpoint without thread", "hybrid", func(c *Config) { c.Endpoints, c.Threads = 2, 1 }},
		{"negative progress", "seq", func(c *Config) { c.ProgressEvery = -1 }},
		{"negative spin", "hybrid", func(c *Config) { c.Spin = -1 }},
	} {
		cfg := ok
		c.mod(&cfg)
		if _, err := Run(c.v, cfg); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: error %v, want ErrConfig", c.name, err)
		} else {
			t.Logf("%s: %v", c.name, err)
		}
	}
	if _, err := Run("omp", ok); !errors.Is(err, ErrVariant) {
		t.Errorf("unknown variant: error %v, want ErrVariant", err)
	}
}

// TestFaultAborts makes one fiber fail mid-run: the run must return its
// error, not hang on the fibers that wait for the failed one.
func TestFaultAborts(t *testing.T) {
	boom := errors.New("injected fault")
	for _, v := range variants[1:] {
		for _, victim := range []int{0, 1, 3} {
			cfg := Config{Rows: 16, Cols: 8, Iters: 6, Ranks: 2, Threads: 2, Endpoints: 2, Workers: 2}
			if v.Name == "mpi" || v.Name == "threads" {
				cfg.Ranks, cfg.Threads = 4, 4
			}
			cfg.fault = func(id, it int) error {
				if id == victim && it == 3 {
					return boom
				}
				return nil
			}
			_, err := v.Run(cfg)
			if !errors.Is(err, boom) {
				t.Errorf("%s, fault in fiber %d: error %v, want the injected one", v.Name, victim, err)
			}
		}
	}
}

// TestFaultPanics makes a fiber panic: the run reports it as an error.
func TestFaultPanics(t *testing.T) {
	cfg := Config{Rows: 16, Cols: 8, Iters: 4, Ranks: 2, Threads: 2, Endpoints: 2, Workers: 2}
	cfg.fault = func(id, it int) error {
		if id == 2 && it == 2 {
			panic("injected panic")
		}
		return nil
	}
	_, err := Run("hybrid", cfg)
	if err == nil || !containsAll(err.Error(), "fiber 2 panicked", "injected panic") {
		t.Fatalf("error %v, want the fiber's panic", err)
	}
}

func TestProgress(t *testing.T) {
	for _, v := range variants {
		for _, tol := range []float64{0, 1e-12} {
			var calls []int
			var last float64
			cfg := Config{Rows: 8, Cols: 8, Iters: 5, Tol: tol, Ranks: 2, Threads: 2, Endpoints: 2, Workers: 2,
				ProgressEvery: 1, Progress: func(it int, res float64) { calls = append(calls, it); last = res }}
			r, err := v.Run(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if len(calls) != 5 || calls[4] != 5 {
				t.Errorf("%s tol %v: progress at %v, want iterations 1 to 5", v.Name, tol, calls)
			}
			if math.Float64bits(last) != math.Float64bits(r.Res) {
				t.Errorf("%s tol %v: last progress residual %v, result %v", v.Name, tol, last, r.Res)
			}
		}
	}
}

func TestInitialAndSplit(t *testing.T) {
	g := NewGrid(3, 4)
	for j := 0; j <= 5; j++ {
		if g.At(0, j) != 1 || (j > 0 && g.At(4, j) != 0) {
			t.Fatalf("boundary rows wrong at column %d", j)
		}
	}
	seen := map[uint64]bool{}
	for i := 1; i <= 3; i++ {
		for j := 1; j <= 4; j++ {
			v := g.At(i, j)
			if v < 0 || v >= 1 || seen[math.Float64bits(v)] {
				t.Fatalf("interior cell (%d, %d) = %v: out of [0, 1) or repeated", i, j, v)
			}
			seen[math.Float64bits(v)] = true
		}
	}
	for n := 1; n < 40; n++ {
		for k := 1; k <= n; k++ {
			next := 1
			for i := range k {
				first, last := split(n, k, i)
				if first != next || last < first || last-first > n/k {
					t.Fatalf("split(%d, %d, %d) = %d..%d, want from %d, at least one row", n, k, i, first, last, next)
				}
				next = last + 1
			}
			if next != n+1 {
				t.Fatalf("split(%d, %d) covers rows up to %d", n, k, next-1)
			}
		}
	}
}

func TestCellsAndTypes(t *testing.T) {
	for cols := 1; cols < 9; cols++ {
		types, err := vectorTypes(cols)
		if err != nil {
			t.Fatal(err)
		}
		s := newSlab(3, 5, 9, cols)
		for l := 0; l <= 4; l++ {
			for c := red; c <= black; c++ {
				buf, j0, n := s.cells(l, c)
				if (l+s.off+j0)%2 != c || j0 < 1 || j0 > 2 {
					t.Fatalf("cols %d row %d color %d: first column %d", cols, l, c, j0)
				}
				if want := (cols - j0 + 2) / 2; n != want || (n > 0 && types[j0-1].Size() != 8*n) {
					t.Fatalf("cols %d row %d color %d: %d cells, type of %d bytes", cols, l, c, n, types[j0-1].Size())
				}
				if n > 0 && len(buf) < 2*n-1 {
					t.Fatalf("buffer of %d cells for %d", len(buf), n)
				}
			}
		}
	}
}

func TestKernelAllocs(t *testing.T) {
	s := newSlab(1, 8, 8, 16)
	if a := testing.AllocsPerRun(100, func() { s.relax(1, 8, red, 0, true) }); a != 0 {
		t.Fatalf("relax allocates %v times", a)
	}
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !contains(s, sub) {
			return false
		}
	}
	return true
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}
