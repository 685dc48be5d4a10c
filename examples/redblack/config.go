package main

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"time"
)

// Errors of configuration and checking.
var (
	// ErrConfig is returned (wrapped) for a configuration no variant can
	// run: a size, count or tolerance out of range.
	ErrConfig = errors.New("redblack: bad configuration")
	// ErrStripes is matched by a *StripeError: more stripes than rows.
	ErrStripes = errors.New("redblack: more stripes than rows")
	// ErrVariant is returned for an unknown variant name.
	ErrVariant = errors.New("redblack: unknown variant")
	// ErrMismatch is returned when a grid differs from the sequential one.
	ErrMismatch = errors.New("redblack: grid differs from seq")
)

// StripeError reports a decomposition with fewer rows than stripes: every
// rank (or thread) needs at least one row of its own.
type StripeError struct {
	Variant string
	Rows    int    // interior rows of the grid
	Stripes int    // rows the decomposition needs at least
	Layout  string // how the stripes come about, e.g. "3 ranks × 2 threads"
}

// Error describes the decomposition.
func (e *StripeError) Error() string {
	return fmt.Sprintf("redblack: %s with %s needs at least %d rows, the grid has %d",
		e.Variant, e.Layout, e.Stripes, e.Rows)
}

// Is makes errors.Is(err, ErrStripes) and errors.Is(err, ErrConfig) true.
func (e *StripeError) Is(target error) bool { return target == ErrStripes || target == ErrConfig }

// MaxCells bounds (Rows+2)×(Cols+2): 2^30 cells, 8 GiB of float64.
const MaxCells = 1 << 30

// DefaultProgressEvery is how often a long run reports progress when
// Config.ProgressEvery is zero.
const DefaultProgressEvery = time.Second

// Config describes one run. The zero value is not usable: Rows, Cols and
// Iters must be set; the other counts default to 1 (Workers to GOMAXPROCS).
type Config struct {
	Rows, Cols int // interior cells; the boundary adds a row or column on each side
	// Iters is the number of iterations, one iteration being a red sweep and
	// a black sweep; with Tol > 0 it is the most that are run.
	Iters int
	// Tol, if positive, stops the run after the first iteration whose
	// residual (the largest change of any cell in that iteration) is below it.
	Tol float64
	// Ranks is the number of MPI ranks (mpi) or of processes (funneled and
	// hybrid), one stripe each.
	Ranks int
	// Threads is the number of fibers (threads) or of fibers per process
	// (funneled and hybrid).
	Threads int
	// Endpoints is the number of endpoints per process of hybrid: 2 gives
	// the first and the last thread an endpoint each (no endpoint is shared,
	// so the process runs at ThreadSingle); 1 makes them share one
	// (ThreadMultiple).
	Endpoints int
	// Workers is the number of fiber workers (OS threads); 0 means GOMAXPROCS.
	Workers int
	// Spin is how long a worker with no fiber to run spins before it sleeps
	// (fiber.Config.SleepAfter); 0 means the fiber default, 1ms. Spinning
	// answers a neighbour's hand-over fastest on a machine of its own; on a
	// shared or oversubscribed one a spinning worker takes the core from
	// the worker that has the work, and a few microseconds serve better.
	// A worker whose CPU no other thread wants spins 1ms whatever Spin
	// says (see fiber.Config.SleepAfter).
	Spin time.Duration
	// Progress, if set, is called now and then during a run, every
	// ProgressEvery, from the first rank's first fiber: with the number of
	// iterations done and the last residual (NaN when the run does not
	// track it, that is with Tol = 0 before the last iteration). It must not
	// block for long: the fiber's worker waits for it.
	Progress func(iter int, residual float64)
	// ProgressEvery is the interval of Progress (0: DefaultProgressEvery).
	ProgressEvery time.Duration

	// fault, if set (tests only), is called by fiber id at the start of
	// each iteration; an error it returns ends that fiber with the error.
	fault func(id, iter int) error
}

// withDefaults returns c with zero counts replaced by their defaults.
func (c Config) withDefaults() Config {
	if c.Ranks == 0 {
		c.Ranks = 1
	}
	if c.Threads == 0 {
		c.Threads = 1
	}
	if c.Endpoints == 0 {
		c.Endpoints = 1
	}
	if c.Workers == 0 {
		c.Workers = runtime.GOMAXPROCS(0)
	}
	if c.ProgressEvery == 0 {
		c.ProgressEvery = DefaultProgressEvery
	}
	return c
}

// validate checks the settings every variant shares.
func (c Config) validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrConfig}, args...)...)
	}
	switch {
	case c.Rows < 1 || c.Cols < 1:
		return bad("grid of %d×%d interior cells; both must be at least 1", c.Rows, c.Cols)
	case float64(c.Rows+2)*float64(c.Cols+2) > MaxCells:
		return bad("grid of %d×%d cells exceeds %d cells", c.Rows, c.Cols, MaxCells)
	case c.Iters < 1:
		return bad("%d iterations; need at least 1", c.Iters)
	case c.Tol < 0 || math.IsNaN(c.Tol) || math.IsInf(c.Tol, 0):
		return bad("tolerance %v; need a finite value ≥ 0", c.Tol)
	case c.Ranks < 1 || c.Threads < 1 || c.Endpoints < 1 || c.Workers < 1:
		return bad("ranks %d, threads %d, endpoints %d, workers %d; each must be at least 1",
			c.Ranks, c.Threads, c.Endpoints, c.Workers)
	case c.ProgressEvery < 0:
		return bad("negative progress interval %v", c.ProgressEvery)
	case c.Spin < 0:
		return bad("negative spin time %v", c.Spin)
	}
	return nil
}

// needRows returns a *StripeError if the grid has fewer rows than stripes.
func (c Config) needRows(variant string, stripes int, layout string) error {
	if c.Rows < stripes {
		return &StripeError{Variant: variant, Rows: c.Rows, Stripes: stripes, Layout: layout}
	}
	return nil
}

// tracked reports whether iteration it (1-based) computes its residual:
// every iteration with a tolerance, only the last one without.
func (c Config) tracked(it int) bool { return c.Tol > 0 || it == c.Iters }

// beginIter starts iteration it of worker id: it runs the test fault hook,
// if any, and reports whether the iteration's residual is tracked.
func (c Config) beginIter(id, it int) (track bool, err error) {
	if c.fault != nil {
		if err := c.fault(id, it); err != nil {
			return false, err
		}
	}
	return c.tracked(it), nil
}

// Result is the outcome of a run.
type Result struct {
	Variant string
	Grid    *Grid   // the final grid, boundary included
	Iters   int     // iterations run
	Res     float64 // residual of the last iteration
	// Elapsed is the time of the iterations alone: from the moment every
	// fiber is set up (grid allocated and initialised, endpoints registered,
	// the garbage of all that collected) to the moment the last one finishes
	// its last iteration.
	Elapsed time.Duration
	// CPU is the CPU time the process used meanwhile, all threads together
	// (spinning workers included, and anything else the process ran); 0 if
	// the system does not tell.
	CPU time.Duration
}

// PerIter returns the mean time of one iteration.
func (r *Result) PerIter() time.Duration {
	if r.Iters == 0 {
		return 0
	}
	return r.Elapsed / time.Duration(r.Iters)
}

// reporter calls Config.Progress at most every ProgressEvery.
type reporter struct {
	fn    func(int, float64)
	every time.Duration
	last  time.Time
}

func newReporter(c Config) reporter {
	return reporter{fn: c.Progress, every: c.ProgressEvery, last: time.Now()}
}

// tick reports iteration it with residual res (NaN if untracked) if it is time.
func (r *reporter) tick(it int, res float64, tracked bool) {
	if r.fn == nil {
		return
	}
	if now := time.Now(); now.Sub(r.last) >= r.every {
		r.last = now
		if !tracked {
			res = math.NaN()
		}
		r.fn(it, res)
	}
}
