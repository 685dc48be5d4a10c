package main

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// FuzzVariants runs a parallel variant on a small random decomposition and
// compares it with seq bit for bit; a refused configuration must be refused
// for exactly the documented reasons.
func FuzzVariants(f *testing.F) {
	f.Add(uint8(7), uint8(5), uint8(3), uint8(2), uint8(2), uint8(1), uint8(1), uint8(0), false)
	f.Add(uint8(1), uint8(1), uint8(1), uint8(0), uint8(0), uint8(0), uint8(0), uint8(1), true)
	f.Add(uint8(12), uint8(9), uint8(2), uint8(3), uint8(1), uint8(0), uint8(1), uint8(2), false)
	f.Add(uint8(20), uint8(2), uint8(4), uint8(4), uint8(3), uint8(1), uint8(1), uint8(3), true)
	f.Fuzz(func(t *testing.T, rows, cols, iters, ranks, threads, eps, workers, variant uint8, tol bool) {
		cfg := Config{
			Rows: 1 + int(rows%24), Cols: 1 + int(cols%24), Iters: 1 + int(iters%5),
			Ranks: 1 + int(ranks%6), Threads: 1 + int(threads%5), Endpoints: 1 + int(eps%2),
			Workers: 1 + int(workers%2), Spin: 20 * time.Microsecond,
		}
		if tol {
			cfg.Iters, cfg.Tol = 300, 1e-4
		}
		v := variants[1+int(variant)%(len(variants)-1)]
		stripes := map[string]int{"threads": cfg.Threads, "mpi": cfg.Ranks,
			"hybrid": cfg.Ranks * cfg.Threads, "funneled": cfg.Ranks * cfg.Threads}[v.Name]
		what := fmt.Sprintf("%s %+v", v.Name, cfg)
		err := v.Check(cfg)
		switch {
		case v.Name == "hybrid" && cfg.Endpoints > cfg.Threads:
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("%s: error %v, want ErrConfig (endpoints > threads)", what, err)
			}
			return
		case cfg.Rows < stripes:
			if !errors.Is(err, ErrStripes) {
				t.Fatalf("%s: error %v, want ErrStripes", what, err)
			}
			return
		case err != nil:
			t.Fatalf("%s: refused: %v", what, err)
		}
		want, err := Run("seq", cfg)
		if err != nil {
			t.Fatal(err)
		}
		got, err := v.Run(cfg)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		sameAs(t, what, got, want)
	})
}
