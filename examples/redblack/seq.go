package main

import (
	"time"

	"github.com/fibermpi/fibermpi/internal/testenv"
)

// runSeq is Snir 2009 §4.3.1: the whole grid, one red sweep and one black
// sweep per iteration, rows in order.
func runSeq(cfg Config) (*Result, error) {
	g := NewGrid(cfg.Rows, cfg.Cols)
	s := &slab{a: g.Data, w: cfg.Cols + 2}
	rep := newReporter(cfg)
	collect()
	cpu0, start := testenv.ProcessCPU(), time.Now()
	it, res := 0, 0.0
	for it < cfg.Iters {
		it++
		track := cfg.tracked(it)
		res = 0
		for c := red; c <= black; c++ {
			res = s.relax(1, cfg.Rows, c, res, track)
		}
		rep.tick(it, res, track)
		if cfg.Tol > 0 && res < cfg.Tol {
			break
		}
	}
	elapsed := time.Since(start)
	return &Result{Variant: "seq", Grid: g, Iters: it, Res: res, Elapsed: elapsed, CPU: testenv.ProcessCPU() - cpu0}, nil
}
