package osu

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrConfig is wrapped by the errors of Config.Validate and ParseSizes.
var ErrConfig = errors.New("osu: bad configuration")

// Bench names a benchmark.
type Bench string

// The benchmarks, by OMB's program names without the "osu_" prefix.
const (
	Latency   Bench = "latency"
	BW        Bench = "bw"
	BiBW      Bench = "bibw"
	MbwMr     Bench = "mbw_mr"
	LatencyMT Bench = "latency_mt"
	Allreduce Bench = "allreduce"
	Bcast     Bench = "bcast"
	Reduce    Bench = "reduce"
	Barrier   Bench = "barrier"
)

// Benches lists every benchmark, in the order fmpi-osu documents them.
var Benches = []Bench{Latency, BW, BiBW, MbwMr, LatencyMT, Allreduce, Bcast, Reduce, Barrier}

// OMB's constants.
const (
	// LargeMessageSize is the size above which the large-message counts
	// apply.
	LargeMessageSize = 8192
	// DefaultWindow is the number of messages in flight per window of bw,
	// bibw and mbw_mr.
	DefaultWindow = 64
	// MaxPt2ptSize is the default largest size of the point-to-point
	// benchmarks (4 MiB).
	MaxPt2ptSize = 1 << 22
	// MaxCollSize is the default largest size of the collectives (1 MiB).
	MaxCollSize = 1 << 20
	// DefaultThreads is latency_mt's default callers per rank.
	DefaultThreads = 2
	// MaxSizeLimit bounds MaxSize (buffers are allocated at that size).
	MaxSizeLimit = 1 << 30
	// MaxThreads bounds Threads.
	MaxThreads = 1 << 14
	// MaxWindow bounds Window.
	MaxWindow = 1 << 16
)

// class is a benchmark's kind, which sets its default counts.
type class int

const (
	classLat class = iota
	classBW
	classColl
)

func (b Bench) class() class {
	switch b {
	case BW, BiBW, MbwMr:
		return classBW
	case Allreduce, Bcast, Reduce, Barrier:
		return classColl
	}
	return classLat
}

// Valid reports whether b is one of Benches.
func (b Bench) Valid() bool {
	for _, x := range Benches {
		if b == x {
			return true
		}
	}
	return false
}

// minSize is the benchmark's smallest size: 0 B for the latencies, 1 B
// for the bandwidths (a rate of empty messages divides by zero) and bcast
// (bytes), 4 B (one float) for allreduce and reduce.
func (b Bench) minSize() int {
	switch {
	case b.class() == classBW || b == Bcast:
		return 1
	case b.class() == classColl:
		return 4
	}
	return 0
}

// Config is one benchmark run as OMB's flags describe it. The zero value
// of every field but Bench means OMB's default.
type Config struct {
	Bench Bench
	// MinSize and MaxSize bound the sizes in bytes (-m MIN:MAX). A MinSize
	// that is not a power of two is rounded up to one; below the
	// benchmark's smallest size it is raised to it. MaxSize zero means
	// 4 MiB (point-to-point) or 1 MiB (collectives).
	MinSize, MaxSize int
	// Iterations is the number of timed iterations of every size (-i);
	// zero means OMB's: 10,000 (latencies; 1,000 above 8 KiB), 100 windows
	// (bandwidths; 20 above 8 KiB), 1,000 (collectives; 100 above 8 KiB).
	Iterations int
	// Warmup is the number of untimed iterations before them (-x); zero
	// means OMB's (100, 10 large; 10, 2 large; 200, 10 large), a negative
	// value none.
	Warmup int
	// Window is the messages per window of bw, bibw and mbw_mr (-W); zero
	// means 64.
	Window int
	// Threads is latency_mt's callers per rank (-t); zero means 2.
	Threads int
	// Pairs is mbw_mr's number of sender/receiver pairs (-p); zero means
	// half the ranks.
	Pairs int
	// Ranks is the number of ranks of the collectives (-n): in
	// process, zero means 2; in process mode, zero means one per process,
	// and a multiple of the processes makes Ranks/processes endpoints in
	// each. Point-to-point benchmarks use 2 ranks (mbw_mr 2·Pairs) and, in
	// process mode, the launched processes.
	Ranks int
	// Full prints the minimum and maximum latency and the iterations of
	// the collectives (-f).
	Full bool
}

// Validate reports whether c is usable.
func (c Config) Validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrConfig}, a...)...)
	}
	switch {
	case !c.Bench.Valid():
		return bad("unknown benchmark %q (want one of %v)", c.Bench, Benches)
	case c.MinSize < 0 || c.MaxSize < 0:
		return bad("negative message size (-m %d:%d)", c.MinSize, c.MaxSize)
	case c.MaxSize > MaxSizeLimit:
		return bad("message size %d above %d", c.MaxSize, MaxSizeLimit)
	case c.MinSize > MaxSizeLimit:
		return bad("message size %d above %d", c.MinSize, MaxSizeLimit)
	case c.Iterations < 0:
		return bad("iterations %d < 0", c.Iterations)
	case c.Window < 0 || c.Window > MaxWindow:
		return bad("window %d outside 1..%d", c.Window, MaxWindow)
	case c.Threads < 0 || c.Threads > MaxThreads:
		return bad("threads %d outside 1..%d", c.Threads, MaxThreads)
	case c.Pairs < 0:
		return bad("pairs %d < 0", c.Pairs)
	case c.Ranks < 0 || c.Ranks == 1:
		return bad("ranks %d: need at least 2", c.Ranks)
	}
	if c.Bench != Barrier && len(c.Sizes()) == 0 {
		return bad("no message size between %d and %d for %s", c.minSize(), c.maxSize(), c.Bench)
	}
	return nil
}

func (c Config) maxSize() int {
	if c.MaxSize > 0 {
		return c.MaxSize
	}
	if c.Bench.class() == classColl {
		return MaxCollSize
	}
	return MaxPt2ptSize
}

func (c Config) minSize() int {
	lo := max(c.MinSize, c.Bench.minSize())
	if lo == 0 {
		return 0
	}
	p := 1
	for p < lo {
		p *= 2
	}
	return p
}

// Sizes returns the message sizes in bytes, in the order they are run:
// doubling from the smallest to the largest (0, 1, 2, 4, ... for the
// latencies). Barrier has no size and returns nil.
func (c Config) Sizes() []int {
	if c.Bench == Barrier {
		return nil
	}
	var s []int
	for size, hi := c.minSize(), c.maxSize(); size <= hi; {
		s = append(s, size)
		if size == 0 {
			size = 1
		} else {
			size *= 2
		}
	}
	return s
}

// Counts returns the timed and warm-up iterations for messages of size
// bytes.
func (c Config) Counts(size int) (iterations, warmup int) {
	large := size > LargeMessageSize
	switch c.Bench.class() {
	case classBW:
		iterations, warmup = 100, 10
		if large {
			iterations, warmup = 20, 2
		}
	case classColl:
		iterations, warmup = 1000, 200
		if large {
			iterations, warmup = 100, 10
		}
	default:
		iterations, warmup = 10000, 100
		if large {
			iterations, warmup = 1000, 10
		}
	}
	if c.Iterations > 0 {
		iterations = c.Iterations
	}
	switch {
	case c.Warmup > 0:
		warmup = c.Warmup
	case c.Warmup < 0:
		warmup = 0
	}
	return iterations, warmup
}

// window returns the effective window.
func (c Config) window() int {
	if c.Window > 0 {
		return c.Window
	}
	return DefaultWindow
}

// threads returns the callers per rank: Threads for latency_mt, else 1.
func (c Config) threads() int {
	if c.Bench != LatencyMT {
		return 1
	}
	if c.Threads > 0 {
		return c.Threads
	}
	return DefaultThreads
}

// inProcessRanks returns the ranks of an in-process run.
func (c Config) inProcessRanks() int {
	switch c.Bench {
	case MbwMr:
		return 2 * max(c.Pairs, 1)
	}
	if c.Bench.class() == classColl && c.Ranks > 0 {
		return c.Ranks
	}
	return 2
}

// checkWorld reports whether the benchmark can run on n ranks, and returns
// the effective pairs of mbw_mr.
func (c Config) checkWorld(n int) (pairs int, err error) {
	switch c.Bench {
	case Latency, BW, BiBW, LatencyMT:
		if n != 2 {
			return 0, fmt.Errorf("%w: %s requires exactly two ranks, have %d", ErrConfig, c.Bench, n)
		}
	case MbwMr:
		pairs = c.Pairs
		if pairs == 0 {
			pairs = n / 2
		}
		if n < 2 || pairs < 1 || 2*pairs > n {
			return 0, fmt.Errorf("%w: mbw_mr with %d pairs needs at least %d ranks, have %d", ErrConfig, max(pairs, 1), 2*max(pairs, 1), n)
		}
	default:
		if n < 2 {
			return 0, fmt.Errorf("%w: %s requires at least two ranks, have %d", ErrConfig, c.Bench, n)
		}
	}
	return pairs, nil
}

// ParseSizes parses OMB's -m argument: "MAX", "MIN:MAX", "MIN:" or
// ":MAX". An absent bound is returned as zero (the default).
func ParseSizes(s string) (lo, hi int, err error) {
	num := func(x string) (int, error) {
		if x == "" {
			return 0, nil
		}
		n, err := strconv.Atoi(x)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%w: message size %q", ErrConfig, x)
		}
		return n, nil
	}
	a, b, found := strings.Cut(s, ":")
	if !found {
		hi, err = num(a)
		if err == nil && hi == 0 {
			err = fmt.Errorf("%w: -m %q: maximum message size must be positive", ErrConfig, s)
		}
		return 0, hi, err
	}
	if a == "" && b == "" {
		return 0, 0, fmt.Errorf("%w: -m %q: no size", ErrConfig, s)
	}
	if lo, err = num(a); err != nil {
		return 0, 0, err
	}
	if hi, err = num(b); err != nil {
		return 0, 0, err
	}
	if b != "" && hi == 0 {
		return 0, 0, fmt.Errorf("%w: -m %q: maximum message size must be positive", ErrConfig, s)
	}
	if hi > 0 && lo > hi {
		return 0, 0, fmt.Errorf("%w: -m %q: minimum above maximum", ErrConfig, s)
	}
	return lo, hi, nil
}
