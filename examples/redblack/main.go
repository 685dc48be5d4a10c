package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/fibermpi/fibermpi"
	"github.com/fibermpi/fibermpi/endpoint"
)

func main() { os.Exit(cli(os.Args[1:], os.Stdout, os.Stderr)) }

// cli runs the command with args and returns its exit status: 0 on success,
// 1 if a run fails or differs from seq, 2 for bad flags.
func cli(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("redblack", flag.ContinueOnError)
	fs.SetOutput(stderr)
	variant := fs.String("variant", "all", "variant to run: seq, threads, mpi, hybrid, funneled, a comma-separated list, or all")
	n := fs.Int("n", 512, "grid size: n×n interior cells")
	iters := fs.Int("iters", 200, "iterations (red sweep + black sweep); with -tol, the most to run")
	tol := fs.Float64("tol", 0, "if > 0, stop at the first iteration whose residual (largest change of a cell) is below it")
	ranks := fs.Int("ranks", 2, "mpi: ranks; hybrid and funneled: processes (at least 1); under a launcher, the number of processes (its default there)")
	threads := fs.Int("threads", 2, "threads: fibers; hybrid and funneled: fibers per process (at least 1)")
	eps := fs.Int("endpoints", 2, "hybrid: endpoints per process (1 or 2)")
	workers := fs.Int("workers", 0, "fiber workers, i.e. OS threads (0: GOMAXPROCS)")
	spin := fs.Duration("spin", 20*time.Microsecond, "how long an idle fiber worker spins before it sleeps (0: the fiber default, 1ms; short suits a shared machine)")
	check := fs.Bool("check", true, "compare every grid with seq's, bit for bit (runs seq too)")
	repeat := fs.Int("repeat", 1, "run each variant this many times, in rounds, and show the median time")
	every := fs.Duration("progress", DefaultProgressEvery, "interval of progress lines on stderr during long runs (0: none)")
	version := fs.Bool("version", false, "print the version of fibermpi and of the build, and exit")
	verbose := fs.Bool("v", false, "under a launcher, every process prints its own table (only process 0's checks the grids); otherwise only process 0 prints")
	tracePath := fs.String("trace", "", "write a fibermpi trace of the run to this file (see cmd/fmpi-trace; with several variants, the last one's)")
	hash := fs.Bool("hash", false, "after each run print a line with its time per iteration, residual bits and grid hash (see bench/redblack-c)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: redblack [flags]\n\nRed-black SOR (Snir 2009 §4.3) in every variant, checked against the sequential code.\n\nVariants:\n")
		for _, v := range variants {
			fmt.Fprintf(stderr, "  %-9s %-16s %s\n", v.Name, v.Section, v.Summary)
		}
		fmt.Fprintf(stderr, "\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *version {
		if fibermpi.PrintVersion(stdout, "redblack") != nil {
			return 1
		}
		return 0
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "redblack: unexpected arguments %q\n", fs.Args())
		return 2
	}
	// Under a launcher (fmpirun, mpiexec.hydra) the variants that pass
	// messages run as real processes, one stripe each: -ranks is the number
	// of processes. Detect joins the job, so it is left (Close) on every way
	// out that does not reach Init, and the process finalized on the others.
	b, err := endpoint.DetectBootstrap()
	if err != nil {
		fmt.Fprintf(stderr, "redblack: %v\n", err)
		return 2
	}
	if b.Name() != "single" {
		defer func() {
			if job != nil {
				_ = job.Finalize()
				job = nil
			} else {
				_ = b.Close()
			}
		}()
		set := false
		fs.Visit(func(f *flag.Flag) { set = set || f.Name == "ranks" })
		if !set {
			*ranks = b.Size()
		} else if *ranks != b.Size() {
			fmt.Fprintf(stderr, "redblack: -ranks %d, but launched as %s: under a launcher -ranks is the number of processes (or leave it out)\n",
				*ranks, count(b.Size(), "process"))
			return 2
		}
		if b.Rank() != 0 && !*verbose {
			stdout = io.Discard
		}
	}
	// Config takes a zero count as its default of 1; on the command line a
	// count of 0 is more likely a slip, so it is refused as negatives are.
	for _, c := range []struct {
		name string
		v    int
	}{{"ranks", *ranks}, {"threads", *threads}, {"endpoints", *eps}} {
		if c.v < 1 {
			fmt.Fprintf(stderr, "redblack: -%s %d; need at least 1\n", c.name, c.v)
			return 2
		}
	}
	cfg := Config{Rows: *n, Cols: *n, Iters: *iters, Tol: *tol, Ranks: *ranks, Threads: *threads,
		Endpoints: *eps, Workers: *workers, Spin: *spin}
	var vs []Variant
	names := strings.Split(*variant, ",")
	if *variant == "all" {
		names = nil
		for _, v := range variants {
			names = append(names, v.Name)
		}
	}
	for _, name := range names {
		v, err := Lookup(strings.TrimSpace(name))
		if err == nil {
			err = v.Check(cfg)
		}
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 2
		}
		vs = append(vs, v)
	}
	if *repeat < 1 {
		fmt.Fprintf(stderr, "redblack: -repeat %d; need at least 1\n", *repeat)
		return 2
	}
	if *every < 0 {
		fmt.Fprintf(stderr, "redblack: negative -progress %v\n", *every)
		return 2
	}
	cfg = cfg.withDefaults()
	traceFile = *tracePath
	if b.Name() != "single" {
		// One process for every run: a launched process joins its job once.
		// Its thread level is the highest any chosen variant needs.
		level := endpoint.ThreadSingle
		for _, v := range vs {
			if v.level != nil {
				level = max(level, v.level(cfg))
			}
		}
		o := processOptions(cfg.Workers, cfg.Spin)
		o.Bootstrap = b
		p, err := endpoint.Init(level, o)
		if err != nil {
			fmt.Fprintf(stderr, "redblack: process %d: %v\n", b.Rank(), err)
			return 1
		}
		job = p
	}
	// skip says whether this process leaves v out: under a launcher only
	// process 0 runs the variants without messages (and seq, to check).
	skip := func(v Variant) bool { return job != nil && job.Rank() != 0 && !v.procs }

	where := ""
	if job != nil {
		where = fmt.Sprintf(", process %d of %d", job.Rank(), job.Procs())
	}
	fmt.Fprintf(stdout, "red-black SOR on %d×%d cells, %s, %s (idle spin %v)%s\n",
		cfg.Rows, cfg.Cols, stopRule(cfg), count(cfg.Workers, "fiber worker"), cfg.Spin, where)
	var ref *Result
	status := 0
	// Each line of the table goes out in one write: under a launcher the
	// processes share one standard output, and tabwriter writes cell by
	// cell.
	tw := tabwriter.NewWriter(&lineWriter{w: stdout}, 0, 0, 2, ' ', 0)
	runOne := func(v Variant) *Result {
		c := cfg
		if *every > 0 {
			c.ProgressEvery = *every
			c.Progress = func(it int, res float64) {
				if math.IsNaN(res) {
					fmt.Fprintf(stderr, "  %s: iteration %d of %d\n", v.Name, it, c.Iters)
				} else {
					fmt.Fprintf(stderr, "  %s: iteration %d, residual %.3e\n", v.Name, it, res)
				}
			}
		}
		r, err := v.Run(c)
		if err != nil {
			tw.Flush()
			fmt.Fprintf(stderr, "redblack: %s: %v\n", v.Name, err)
			status = 1
		}
		return r
	}
	if *check && !(job != nil && job.Rank() != 0) {
		seq, _ := Lookup("seq")
		if ref = runOne(seq); ref == nil {
			return 1
		}
	}
	// Rounds run every variant once each, so that a change of the machine's
	// load affects all of them alike; the table shows the median.
	type row struct {
		first   *Result // iterations and residual (its grid is dropped)
		times   []time.Duration
		cpus    []time.Duration
		verdict string
	}
	rows := make([]row, len(vs))
	for round := range *repeat {
		for k, v := range vs {
			if skip(v) {
				continue
			}
			r := ref
			if v.Name != "seq" || ref == nil || round > 0 {
				if r = runOne(v); r == nil {
					continue
				}
			}
			verdict := judge(v, r, ref)
			if job != nil && job.Rank() != 0 && *check {
				verdict = "checked at process 0"
			}
			if rows[k].verdict == "" || !strings.HasPrefix(rows[k].verdict, "DIFFERS") {
				rows[k].verdict = verdict
			}
			if strings.HasPrefix(rows[k].verdict, "DIFFERS") {
				status = 1
			}
			if rows[k].first == nil {
				rows[k].first = &Result{Iters: r.Iters, Res: r.Res}
			}
			if *hash && r.Grid != nil { // under a launcher process 0 alone has the grid
				printHash(stdout, v, cfg, r)
			}
			rows[k].times = append(rows[k].times, r.PerIter())
			rows[k].cpus = append(rows[k].cpus, r.CPU/time.Duration(r.Iters))
		}
	}
	if *repeat > 1 {
		fmt.Fprintf(tw, "variant\tlayout\titers\tresidual\ttime/iter (median of %d)\tmin\tcpu/iter\tvs seq\n", *repeat)
	} else {
		fmt.Fprintln(tw, "variant\tlayout\titers\tresidual\ttime/iter\tcpu/iter\tvs seq")
	}
	for k, v := range vs {
		rw := rows[k]
		if rw.first == nil {
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.6e\t%v\t", v.Name, layout(v.Name, cfg), rw.first.Iters, rw.first.Res, round(median(rw.times)))
		if *repeat > 1 {
			fmt.Fprintf(tw, "%v\t", round(slices.Min(rw.times)))
		}
		fmt.Fprintf(tw, "%v\t%s\n", round(median(rw.cpus)), rw.verdict)
	}
	tw.Flush()
	return status
}

// printHash prints the line bench/redblack-c/compare.sh reads, in the
// format of the C reference's: layout is processes×threads.
func printHash(w io.Writer, v Variant, c Config, r *Result) {
	p, t := 1, 1
	switch v.Name {
	case "threads":
		t = c.Threads
	case "mpi":
		p = c.Ranks
	case "hybrid", "funneled":
		p, t = c.Ranks, c.Threads
	}
	fmt.Fprintf(w, "result impl=go variant=%s layout=%dx%d n=%d iters=%d ns_per_iter=%d residual=%016x hash=%016x kernel=%s\n",
		v.Name, p, t, c.Rows, r.Iters, r.PerIter().Nanoseconds(), math.Float64bits(r.Res), r.Grid.Hash(), kernelName())
}

// median returns the median of ds (not empty), sorting ds.
func median(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	m := ds[len(ds)/2]
	if len(ds)%2 == 0 {
		m = (ds[len(ds)/2-1] + m) / 2
	}
	return m
}

// judge compares r, a run of v, with seq's result ref (nil: not checked).
func judge(v Variant, r, ref *Result) string {
	switch {
	case ref == nil:
		return "not checked"
	case v.Name == "seq":
		return "reference"
	case r.Iters != ref.Iters:
		return fmt.Sprintf("DIFFERS: %d iterations, seq %d", r.Iters, ref.Iters)
	}
	if err := r.Grid.CheckAgainst(ref.Grid); err != nil {
		return "DIFFERS: " + strings.TrimPrefix(err.Error(), ErrMismatch.Error()+": ")
	}
	if math.Float64bits(r.Res) != math.Float64bits(ref.Res) {
		return fmt.Sprintf("DIFFERS: residual %v, seq %v", r.Res, ref.Res)
	}
	return "identical"
}

// stopRule describes when a run stops.
func stopRule(c Config) string {
	if c.Tol > 0 {
		return fmt.Sprintf("until the residual < %g (at most %d iterations)", c.Tol, c.Iters)
	}
	return fmt.Sprintf("%d iterations", c.Iters)
}

// layout describes how variant name decomposes the grid under c.
func layout(name string, c Config) string {
	switch name {
	case "threads":
		return count(c.Threads, "fiber") + ", shared grid"
	case "mpi":
		return count(c.Ranks, "rank")
	case "hybrid":
		return fmt.Sprintf("%s × %s, %s each", count(c.Ranks, "proc"), count(c.Threads, "fiber"), count(c.Endpoints, "endpoint"))
	case "funneled":
		return fmt.Sprintf("%s × %s, master talks", count(c.Ranks, "proc"), count(c.Threads, "fiber"))
	}
	return "1 goroutine"
}

// count writes n and noun, in the plural unless n is 1: "1 rank", "2 ranks",
// "3 processes".
func count(n int, noun string) string {
	switch {
	case n == 1:
		return "1 " + noun
	case strings.HasSuffix(noun, "s"):
		return fmt.Sprintf("%d %ses", n, noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// round shortens a duration for the table.
func round(d time.Duration) time.Duration {
	switch {
	case d >= time.Second:
		return d.Round(time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(time.Microsecond)
	}
	return d.Round(10 * time.Nanosecond)
}

// lineWriter passes what is written to it on to w one whole line per Write
// (a line is written when its newline arrives), so that lines of processes
// sharing w are not cut into each other: one write of a line shorter than
// PIPE_BUF to a pipe is atomic.
type lineWriter struct {
	w   io.Writer
	buf []byte
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		if _, err := l.w.Write(l.buf[:i+1]); err != nil {
			return len(p), err
		}
		l.buf = l.buf[i+1:]
	}
}
