package main

import (
	"fmt"
	"strings"

	"github.com/fibermpi/fibermpi/endpoint"
)

// A Variant is one of the codes of Snir 2009 §4.3, ported.
type Variant struct {
	Name    string // flag value: seq, threads, mpi, hybrid, funneled
	Section string // the Snir 2009 section it ports
	Summary string // one line, in terms of the command's flags
	check   func(Config) error
	run     func(Config) (*Result, error)
	// level is the thread level the variant's endpoints need (see
	// runStripes); procs is set for the variants that pass messages, which
	// under a launcher run one stripe per real process.
	level func(Config) endpoint.ThreadLevel
	procs bool
}

// Variants returns every variant, seq first.
func Variants() []Variant { return append([]Variant(nil), variants...) }

var variants = []Variant{
	{
		Name: "seq", Section: "§4.3.1",
		Summary: "sequential: the whole grid, red sweep then black sweep",
		check:   func(Config) error { return nil },
		run:     runSeq,
	},
	{
		Name: "threads", Section: "§4.3.4",
		Summary: "-threads fibers on one shared grid, neighbour flags, no barrier",
		check: func(c Config) error {
			return c.needRows("threads", c.Threads, count(c.Threads, "thread"))
		},
		run: func(c Config) (*Result, error) { return runStripes(c, "threads", 1, c.Threads, 0) },
	},
	{
		Name: "mpi", Section: "§4.3.3",
		Summary: "-ranks ranks, one stripe each; Vector halos by Isend/Irecv/WaitAll; Scan",
		check: func(c Config) error {
			return c.needRows("mpi", c.Ranks, count(c.Ranks, "rank"))
		},
		run:   func(c Config) (*Result, error) { return runStripes(c, "mpi", c.Ranks, 1, 1) },
		level: func(Config) endpoint.ThreadLevel { return endpoint.ThreadSingle },
		procs: true,
	},
	{
		Name: "hybrid", Section: "§4.3.5",
		Summary: "-ranks processes × -threads fibers; edge fibers own -endpoints, inner ones share memory",
		check: func(c Config) error {
			if c.Endpoints > 2 {
				return fmt.Errorf("%w: hybrid has 1 or 2 endpoints per process (one per edge of its stripe), not %d",
					ErrConfig, c.Endpoints)
			}
			if c.Endpoints > c.Threads {
				return fmt.Errorf("%w: hybrid with %d endpoints per process needs at least %d threads per process (one per endpoint), not %d",
					ErrConfig, c.Endpoints, c.Endpoints, c.Threads)
			}
			return c.needRows("hybrid", c.Ranks*c.Threads, count(c.Ranks, "process")+" × "+count(c.Threads, "thread"))
		},
		run: func(c Config) (*Result, error) { return runStripes(c, "hybrid", c.Ranks, c.Threads, c.Endpoints) },
		level: func(c Config) endpoint.ThreadLevel {
			if c.Endpoints == 1 && c.Threads > 1 {
				return endpoint.ThreadMultiple
			}
			return endpoint.ThreadSingle
		},
		procs: true,
	},
	{
		Name: "funneled", Section: "§4.3.2 + §4.3.3",
		Summary: "-ranks processes × -threads fibers, barriers, only the master communicates",
		check: func(c Config) error {
			return c.needRows("funneled", c.Ranks*c.Threads, count(c.Ranks, "process")+" × "+count(c.Threads, "thread"))
		},
		run:   runFunneled,
		level: func(Config) endpoint.ThreadLevel { return endpoint.ThreadFunneled },
		procs: true,
	},
}

// Lookup returns the variant called name.
func Lookup(name string) (Variant, error) {
	for _, v := range variants {
		if v.Name == name {
			return v, nil
		}
	}
	names := make([]string, len(variants))
	for i, v := range variants {
		names[i] = v.Name
	}
	return Variant{}, fmt.Errorf("%w %q (have %s)", ErrVariant, name, strings.Join(names, ", "))
}

// Check reports whether v can run cfg (zero counts taking their defaults).
func (v Variant) Check(cfg Config) error {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return err
	}
	return v.check(cfg)
}

// Run runs v on cfg and returns the final grid with the iteration count,
// residual and time. Bad settings are refused before anything starts.
func (v Variant) Run(cfg Config) (*Result, error) {
	if err := v.Check(cfg); err != nil {
		return nil, err
	}
	return v.run(cfg.withDefaults())
}

// Run runs the variant called name on cfg.
func Run(name string, cfg Config) (*Result, error) {
	v, err := Lookup(name)
	if err != nil {
		return nil, err
	}
	return v.Run(cfg)
}
