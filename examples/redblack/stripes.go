package main

import (
	"fmt"
	"math"

	"github.com/fibermpi/fibermpi/comm"
	"github.com/fibermpi/fibermpi/datatype"
	"github.com/fibermpi/fibermpi/endpoint"
	"github.com/fibermpi/fibermpi/fiber"
)

// stripes is the engine of the threads, mpi and hybrid variants, which are
// one algorithm at three settings (Snir 2009 §4.3.5: "we combine the logic of
// the two previous codes"). The grid is cut into procs horizontal stripes,
// each a slab of its own with ghost rows, and each stripe into threads bands
// of rows, one per fiber. In every half-sweep a fiber updates its first row,
// hands it over, updates its last row, hands it over, updates the rows in
// between, and then waits for what its neighbours handed over:
//
//   - between two fibers of a stripe the hand-over is a flag in shared memory
//     (published half-sweep number, §4.3.4);
//   - between stripes it is a message: Isend of the row's cells of the color
//     just updated and Irecv of the neighbour's into the ghost row, as Vector
//     datatypes, completed by WaitAll (§4.3.3).
//
// No fiber ever waits for more than its two neighbours: there is no global
// barrier, except the reduction of the residual when it is needed.
//
// threads is one stripe of many fibers (no endpoints); mpi is many stripes of
// one fiber, each an endpoint of its own (one rank per stripe); hybrid is
// many stripes of many fibers, where the first fiber of a stripe holds the
// endpoint for the stripe above and the last fiber the one for the stripe
// below (the same endpoint if there is one per process).
type stripes struct {
	cfg     Config
	name    string
	procs   int
	threads int
	eps     int // endpoints per process; 0 for none (threads)
	types   [2]datatype.Type
	team    *team
	world   []*endpoint.Endpoint
	ps      []*proc
	// mine is this process's stripe when the run is one of real processes
	// (job not nil): world then holds its eps endpoints alone and the team
	// its threads fibers. -1 in the embedded default: every stripe here.
	mine  int
	iters int     // written by the team's fiber 0
	res   float64 // written by the team's fiber 0
	grid  *Grid   // gathered at process 0 (mine ≥ 0)
}

// proc is one stripe: a process's share of the grid and its threads' shared
// state.
type proc struct {
	idx         int
	first, last int   // global rows, from set_process_stripe
	s           *slab // allocated by thread 0 before the start gate
	// up[t] is published by thread t when its first row is done (read by
	// thread t−1); down[t] when its last row is done (read by thread t+1).
	up, down []bflag
	bar      *barrier // the stripe's threads, for the residual
}

// runStripes runs the engine with procs stripes of threads fibers and eps
// endpoints per stripe (0: no message passing at all).
func runStripes(cfg Config, name string, procs, threads, eps int) (*Result, error) {
	r := &stripes{cfg: cfg, name: name, procs: procs, threads: threads, eps: eps, mine: -1}
	fibers, k := procs*threads, procs*eps
	if job != nil && eps > 0 {
		// Real processes: this one runs its own stripe.
		if procs != job.Procs() {
			return nil, fmt.Errorf("%w: %s with %s, but launched as %s", ErrConfig, name,
				count(procs, "process"), count(job.Procs(), "process"))
		}
		r.mine, fibers, k = job.Rank(), threads, eps
	}
	var err error
	if r.types, err = vectorTypes(cfg.Cols); err != nil {
		return nil, err
	}
	level := noThreadLevel
	if eps > 0 {
		level = endpoint.ThreadSingle
		if eps == 1 && threads > 1 {
			// The first and last fibers share the stripe's endpoint.
			level = endpoint.ThreadMultiple
		}
	}
	r.team, r.world, err = newTeam(fibers, cfg.Workers, cfg.Spin, level, k)
	if err != nil {
		return nil, err
	}
	r.ps = make([]*proc, procs)
	for p := range r.ps {
		first, last := split(cfg.Rows, procs, p)
		r.ps[p] = &proc{idx: p, first: first, last: last,
			up: make([]bflag, threads), down: make([]bflag, threads), bar: newBarrier(threads)}
	}
	for p, pr := range r.ps {
		if r.mine >= 0 && p != r.mine {
			continue
		}
		for t := range threads {
			r.team.spawn(r.local(p, t), func(f *fiber.Fiber) error { return r.thread(f, pr, t) })
		}
	}
	elapsed, cpu, err := r.team.wait()
	if err != nil {
		return nil, err
	}
	g := r.grid
	if r.mine < 0 {
		g = NewGrid(cfg.Rows, cfg.Cols)
		for _, pr := range r.ps {
			pr.s.copyInto(g)
		}
	}
	return &Result{Variant: name, Grid: g, Iters: r.iters, Res: r.res, Elapsed: elapsed, CPU: cpu}, nil
}

// local returns the team's number of thread t of stripe p: p·threads+t in
// the embedded default, t when the stripes are real processes.
func (r *stripes) local(p, t int) int {
	if r.mine >= 0 {
		return t
	}
	return p*r.threads + t
}

// endpointFor returns which of the stripe's endpoints thread t registers
// with, and whether it makes the stripe's collective calls through it;
// -1 if it needs none.
func (r *stripes) endpointFor(pr *proc, t int) (e int, collective bool) {
	switch {
	case r.eps == 0:
		return -1, false
	case t == 0:
		return 0, true
	case t == r.threads-1 && r.eps == 2:
		return 1, true
	case t == r.threads-1 && pr.idx < r.procs-1:
		return 0, false // shares endpoint 0 with thread 0, for its halo only
	}
	return -1, false
}

// thread is the body of thread t of stripe pr.
func (r *stripes) thread(f *fiber.Fiber, pr *proc, t int) error {
	cfg, T, E := r.cfg, r.threads, r.eps
	id := pr.idx*T + t // in the whole run, for the fault hook and progress
	lid := r.local(pr.idx, t)
	w := f.Waiter()

	// Endpoint registration (Snir 2009 §4.3.5's MPI_Thread_register).
	var c *comm.Comm[float64]
	e, collective := r.endpointFor(pr, t)
	if e >= 0 {
		if r.mine < 0 {
			e += pr.idx * E
		}
		h, err := r.world[e].Register(w)
		if err != nil {
			return err
		}
		defer h.Unregister()
		if c, err = comm.World[float64](h); err != nil {
			return err
		}
	}
	// The stripe's place in the grid (Snir 2009 §4.3.3): MPI_Scan of the
	// stripe sizes gives the stripe's last row, hence its first row and the
	// parity of its rows. A stripe's second endpoint adds 0. Without
	// endpoints (threads) the one stripe is the whole grid.
	size := pr.last - pr.first + 1
	last := pr.last
	if collective {
		mine := 0
		if t == 0 {
			mine = size
		}
		var err error
		if last, err = scanSum(c, mine); err != nil {
			return err
		}
		if last != pr.last {
			return fmt.Errorf("scan of stripe sizes gave last row %d, want %d", last, pr.last)
		}
	}
	if t == 0 {
		pr.s = newSlab(last-size+1, last, cfg.Rows, cfg.Cols)
	}
	if t > 0 {
		pr.down[t-1].reader = w
	}
	if t < T-1 {
		pr.up[t+1].reader = w
	}
	r.team.begin(lid, w) // orders pr.s and the readers before what follows
	s := pr.s

	// Message-passing sides: the stripe's first row goes up from thread 0,
	// its last row down from thread T−1.
	var up, down *side
	if t == 0 && pr.idx > 0 {
		up = top(c, (pr.idx-1)*E+E-1, &r.types)
	}
	if t == T-1 && pr.idx < r.procs-1 {
		down = bottom(c, (pr.idx+1)*E, size, &r.types)
	}
	b, e2 := split(size, T, t)
	reqs := make([]comm.Waitable, 0, 4)
	rep := newReporter(cfg)
	var h int64 // half-sweeps done
	it, res := 0, 0.0
	for it < cfg.Iters {
		it++
		track, err := cfg.beginIter(id, it)
		if err != nil {
			return err
		}
		res = 0
		for color := red; color <= black; color++ {
			h++
			var err error
			reqs = reqs[:0]
			res = s.relax(b, b, color, res, track)
			if up != nil {
				if reqs, err = up.post(s, color, reqs); err != nil {
					return err
				}
			} else if t > 0 {
				pr.up[t].publish(h)
			}
			if e2 > b {
				res = s.relax(e2, e2, color, res, track)
			}
			if down != nil {
				if reqs, err = down.post(s, color, reqs); err != nil {
					return err
				}
			} else if t < T-1 {
				pr.down[t].publish(h)
			}
			res = s.relax(b+1, e2-1, color, res, track)
			if len(reqs) > 0 {
				if err := comm.WaitAll(reqs...); err != nil {
					return err
				}
			}
			if t > 0 {
				pr.down[t-1].await(h, w)
			}
			if t < T-1 {
				pr.up[t+1].await(h, w)
			}
		}
		if track {
			var err error
			if res, err = r.residual(pr, t, w, c, collective, res); err != nil {
				return err
			}
		}
		if id == 0 {
			rep.tick(it, res, track)
		}
		if cfg.Tol > 0 && res < cfg.Tol {
			break
		}
	}
	r.team.stop()
	if lid == 0 {
		r.iters, r.res = it, res
	}
	if r.mine >= 0 {
		// Every row of the stripe is final once all its threads are here;
		// then the stripes go to process 0, through every endpoint.
		pr.bar.reduce(t, w, 0, nil)
		if collective {
			var own *slab
			if t == 0 {
				own = s
			}
			g, err := gatherGrid(c, own, cfg.Rows, cfg.Cols, r.procs, E)
			if err != nil {
				return err
			}
			if g != nil {
				r.grid = g
			}
		}
	}
	return nil
}

// residual returns the maximum of every fiber's res: first over the stripe's
// threads in shared memory, then over the stripes by an Allreduce among the
// fibers that make the stripes' collective calls, whose result the second
// round of the stripe's barrier passes on to the others.
func (r *stripes) residual(pr *proc, t int, w *fiber.Waiter, c *comm.Comm[float64], collective bool, res float64) (float64, error) {
	v := pr.bar.reduce(t, w, res, nil)
	if r.eps == 0 {
		return v, nil
	}
	g := math.Inf(-1)
	if collective {
		var err error
		if g, err = allreduceMax(c, v); err != nil {
			return 0, err
		}
	}
	return pr.bar.reduce(t, w, g, nil), nil
}
