package osu

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/fibermpi/fibermpi/comm"
	"github.com/fibermpi/fibermpi/endpoint"
	"github.com/fibermpi/fibermpi/fiber"
)

// ErrCancelled is the error of a caller that did not finish because
// another one failed and the process was finalized under it.
var ErrCancelled = errors.New("osu: caller cancelled after another failed")

// Options says how Run starts the ranks of this process.
type Options struct {
	// Endpoint configures the process (transport, progress, eager limit,
	// workers). Its zero value is the embedded default.
	Endpoint endpoint.Options
	// Goroutines runs each caller on a plain goroutine (blocking calls park
	// it) instead of a fiber (blocking calls yield it).
	Goroutines bool
	// CollPath is how the ranks' world runs its collectives (comm.CollAuto:
	// through memory where ranks share a process; comm.CollMessages:
	// point-to-point schedules, the contender).
	CollPath comm.CollPath
	// Name is printed after the title, where OMB prints its version
	// ("fibermpi" if empty), with the mode and options.
	Name string
	// Drain bounds how long Run waits for the other callers once one has
	// failed and the process is being finalized (zero: 5 s).
	Drain time.Duration
}

// Run runs the benchmark cfg and writes its table to out (the caller of
// rank 0 writes it; in process mode, only the process of rank 0 writes).
//
// It calls endpoint.Init itself, at ThreadMultiple for latency_mt and
// ThreadSingle otherwise. If the process was launched as one of several
// (Init's world has more than one endpoint), the ranks are the processes:
// this one runs its world endpoint — or, for the collectives with Ranks
// set, Ranks/processes endpoints (CreateEndpoints), each with its own
// caller, so that the ranks are processes × endpoints. Otherwise it runs
// every rank here:
// CreateEndpoints makes the ranks (two; 2·Pairs for mbw_mr; Ranks for the
// collectives). Each rank has one caller, a fiber (or goroutine) registered
// with its endpoint; latency_mt has Threads callers per rank, each
// registered with the rank's endpoint on its own handle.
//
// Run blocks the calling goroutine (not a fiber of its own) until every
// caller is done, then finalizes the process. If a caller fails, the
// others are cancelled and its error is returned.
func Run(cfg Config, opts Options, out io.Writer) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	level := endpoint.ThreadSingle
	if cfg.Bench == LatencyMT {
		level = endpoint.ThreadMultiple
	}
	p, err := endpoint.Init(level, opts.Endpoint)
	if err != nil {
		return err
	}
	eps, mode, err := ranks(p, cfg, opts)
	if err != nil {
		return errors.Join(err, p.Finalize())
	}
	pairs, err := cfg.checkWorld(eps[0].Size())
	if err != nil {
		return errors.Join(err, p.Finalize())
	}
	threads := cfg.threads()
	name := opts.Name
	if name == "" {
		name = "fibermpi"
	}
	po := p.Options()
	note := fmt.Sprintf("(%s; %s; progress %v; eager %d B)", name, mode, po.Progress, po.EagerLimit)
	if opts.CollPath != comm.CollAuto && cfg.Bench.class() == classColl {
		note = fmt.Sprintf("(%s; %s; collectives by %v; progress %v; eager %d B)", name, mode, opts.CollPath, po.Progress, po.EagerLimit)
	}

	total := len(eps) * threads
	results := make(chan error, total) // never blocks a fiber: one value per caller
	for _, ep := range eps {
		t := newTeam(threads)
		for k := range threads {
			var pr *printer
			if ep.Rank() == 0 && k == 0 {
				pr = &printer{w: out, bench: cfg.Bench, full: cfg.Full}
			}
			body := func(w *fiber.Waiter) {
				reported := false
				defer func() {
					if !reported { // unwinding: the scheduler cancelled a blocked fiber
						results <- fmt.Errorf("rank %d caller %d: %w", ep.Rank(), k, ErrCancelled)
					}
				}()
				err := runCaller(ep, w, cfg, opts.CollPath, pairs, k, t, pr, note)
				reported = true
				if err != nil {
					err = fmt.Errorf("rank %d caller %d: %w", ep.Rank(), k, err)
				}
				results <- err
			}
			if opts.Goroutines {
				go body(fiber.NewGoroutineWaiter())
				continue
			}
			if err := p.Scheduler().Spawn(func(f *fiber.Fiber) { body(f.Waiter()) }); err != nil {
				results <- err
			}
		}
	}
	var first error
	for range total {
		if first != nil {
			// Finalized: callers blocked in fibermpi calls are cancelled;
			// do not wait forever for any that are not.
			drain := opts.Drain
			if drain == 0 {
				drain = 5 * time.Second
			}
			select {
			case <-results:
			case <-time.After(drain):
				return first
			}
			continue
		}
		if err := <-results; err != nil {
			first = err
			_ = p.Finalize() // cancels the callers still blocked
		}
	}
	if first != nil {
		return first
	}
	if !opts.Goroutines {
		if err := p.Scheduler().Wait(); err != nil {
			return errors.Join(err, p.Finalize())
		}
	}
	return p.Finalize()
}

// ranks returns this process's ranks of the benchmark and a description of
// the mode.
func ranks(p *endpoint.Process, cfg Config, opts Options) ([]*endpoint.Endpoint, string, error) {
	if w := p.World(); w.Size() > 1 {
		procs := w.Size()
		if k := cfg.Ranks; k == 0 || k == procs || cfg.Bench.class() != classColl {
			return []*endpoint.Endpoint{w}, fmt.Sprintf("%d processes", procs), nil
		}
		if cfg.Ranks%procs != 0 {
			return nil, "", fmt.Errorf("%w: %d ranks do not spread evenly over %d processes", ErrConfig, cfg.Ranks, procs)
		}
		// Endpoints: Ranks/procs per process, each run by a caller.
		eps, err := p.CreateEndpoints(cfg.Ranks / procs)
		if err != nil {
			return nil, "", err
		}
		kind := "fibers"
		if opts.Goroutines {
			kind = "goroutines"
		}
		return eps, fmt.Sprintf("%d processes x %d endpoints as %s", procs, len(eps), kind), nil
	}
	eps, err := p.CreateEndpoints(cfg.inProcessRanks())
	if err != nil {
		return nil, "", err
	}
	kind := "fibers"
	if opts.Goroutines {
		kind = "goroutines"
	}
	mode := fmt.Sprintf("in-process, %d ranks", len(eps))
	if t := cfg.threads(); cfg.Bench == LatencyMT {
		mode += fmt.Sprintf(" x %d %s", t, kind)
	} else {
		mode += " as " + kind
	}
	if !opts.Goroutines {
		n := p.Scheduler().Workers()
		mode += fmt.Sprintf(" on %d worker", n)
		if n > 1 {
			mode += "s"
		}
	}
	return eps, mode, nil
}

// runCaller registers w with ep and runs the benchmark as caller k of the
// rank; the printing caller writes the header first.
func runCaller(ep *endpoint.Endpoint, w *fiber.Waiter, cfg Config, path comm.CollPath, pairs, k int, t *team, pr *printer, note string) error {
	h, err := ep.Register(w)
	if err != nil {
		return err
	}
	defer h.Unregister()
	c, err := comm.World[byte](h)
	if err != nil {
		return err
	}
	if err := c.SetCollPath(path); err != nil {
		return err
	}
	cl, err := newCaller(c, cfg, k, t, pr)
	if err != nil {
		return err
	}
	if pr != nil {
		pr.header(note, pairs, cfg.window(), cfg.threads())
		if err := pr.error(); err != nil {
			return err
		}
	}
	return cl.run(cfg, pairs)
}
