package main

import (
	"fmt"
	"math"

	"github.com/fibermpi/fibermpi/comm"
	"github.com/fibermpi/fibermpi/endpoint"
	"github.com/fibermpi/fibermpi/fiber"
)

// runFunneled is the usual MPI+threads code, which Snir 2009 §4.3.4–4.3.5
// improve on: one process per stripe at MPI_THREAD_FUNNELED, whose threads share the stripe's
// rows in a fork-join loop (Snir 2009 §4.3.2's barrier) and only the master
// thread communicates. Each half-sweep is
//
//	every thread: update its rows
//	barrier
//	master: Isend/Irecv both edge rows, WaitAll (the others wait)
//	barrier
//
// so communication never overlaps computation and every thread waits for the
// slowest one twice per half-sweep.
func runFunneled(cfg Config) (*Result, error) {
	P, T := cfg.Ranks, cfg.Threads
	types, err := vectorTypes(cfg.Cols)
	if err != nil {
		return nil, err
	}
	// Under a launcher each process runs its own stripe (mine) with one
	// endpoint; in the embedded default this one runs them all (-1).
	mine, fibers, k := -1, P*T, P
	if job != nil {
		if P != job.Procs() {
			return nil, fmt.Errorf("%w: funneled with %s, but launched as %s", ErrConfig,
				count(P, "process"), count(job.Procs(), "process"))
		}
		mine, fibers, k = job.Rank(), T, 1
	}
	tm, world, err := newTeam(fibers, cfg.Workers, cfg.Spin, endpoint.ThreadFunneled, k)
	if err != nil {
		return nil, err
	}
	var out struct {
		iters int
		res   float64
		grid  *Grid // gathered at process 0 (mine ≥ 0)
	}
	ps := make([]*proc, P)
	for p := range ps {
		first, last := split(cfg.Rows, P, p)
		ps[p] = &proc{idx: p, first: first, last: last, bar: newBarrier(T)}
	}
	for p, pr := range ps {
		if mine >= 0 && p != mine {
			continue
		}
		for t := range T {
			id := p*T + t // in the whole run, for the fault hook and progress
			lid, ep := id, p
			if mine >= 0 {
				lid, ep = t, 0
			}
			tm.spawn(lid, func(f *fiber.Fiber) error {
				w := f.Waiter()
				size := pr.last - pr.first + 1
				var c *comm.Comm[float64]
				if t == 0 {
					h, err := world[ep].Register(w)
					if err != nil {
						return err
					}
					defer h.Unregister()
					if c, err = comm.World[float64](h); err != nil {
						return err
					}
					last, err := scanSum(c, size)
					if err != nil {
						return err
					}
					if last != pr.last {
						return fmt.Errorf("scan of stripe sizes gave last row %d, want %d", last, pr.last)
					}
					pr.s = newSlab(last-size+1, last, cfg.Rows, cfg.Cols)
				}
				tm.begin(lid, w)
				s := pr.s
				var sides []*side
				if t == 0 && p > 0 {
					sides = append(sides, top(c, p-1, &types))
				}
				if t == 0 && p < P-1 {
					sides = append(sides, bottom(c, p+1, size, &types))
				}
				b, e := split(size, T, t)
				reqs := make([]comm.Waitable, 0, 4)
				rep := newReporter(cfg)
				it, res := 0, 0.0
				for it < cfg.Iters {
					it++
					track, err := cfg.beginIter(id, it)
					if err != nil {
						return err
					}
					res = 0
					for color := red; color <= black; color++ {
						res = s.relax(b, e, color, res, track)
						v := pr.bar.reduce(t, w, res, nil)
						g := math.Inf(-1)
						if t == 0 {
							reqs = reqs[:0]
							var err error
							for _, sd := range sides {
								if reqs, err = sd.post(s, color, reqs); err != nil {
									return err
								}
							}
							if err := comm.WaitAll(reqs...); err != nil {
								return err
							}
							if track && color == black {
								if g, err = allreduceMax(c, v); err != nil {
									return err
								}
							}
						}
						g = pr.bar.reduce(t, w, g, nil)
						if track && color == black {
							res = g
						}
					}
					if id == 0 {
						rep.tick(it, res, track)
					}
					if cfg.Tol > 0 && res < cfg.Tol {
						break
					}
				}
				tm.stop()
				if lid == 0 {
					out.iters, out.res = it, res
				}
				if mine >= 0 {
					// The stripe's rows are final once all its threads
					// are here; the master sends them to process 0.
					pr.bar.reduce(t, w, 0, nil)
					if t == 0 {
						g, err := gatherGrid(c, s, cfg.Rows, cfg.Cols, P, 1)
						if err != nil {
							return err
						}
						if g != nil {
							out.grid = g
						}
					}
				}
				return nil
			})
		}
	}
	elapsed, cpu, err := tm.wait()
	if err != nil {
		return nil, err
	}
	g := out.grid
	if mine < 0 {
		g = NewGrid(cfg.Rows, cfg.Cols)
		for _, pr := range ps {
			pr.s.copyInto(g)
		}
	}
	return &Result{Variant: "funneled", Grid: g, Iters: out.iters, Res: out.res, Elapsed: elapsed, CPU: cpu}, nil
}
