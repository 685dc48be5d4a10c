// Command fmpi-osu runs OSU-style micro-benchmarks on fibermpi and prints
// OSU's tables, so that its output sits line for line beside the OSU
// micro-benchmarks' (or bench/osu-c's) over MPICH and Open MPI.
//
//	fmpi-osu latency -m 8:8192
//	fmpi-osu latency_mt -t 4
//	fmpirun -n 2 fmpi-osu bw
//	fmpi-osu compare build/bench-mpi/raw
//
// Run with no launcher, the ranks are endpoints of this one process, each
// run by a fiber; launched as several processes, each process is a rank.
// `fmpi-osu -h` lists the benchmarks and flags; internal/osu describes the
// method.
//
// go build optimizes the command with the CPU profile default.pgo of this
// directory (profile-guided optimization): the message path's calls inline
// across packages, which saves about a tenth of the instructions a message.
// The tables' header says "pgo" for such a build; -pgo=off builds without.
// scripts/pgo-profile.sh (make pgo) collects the profile anew from a set
// of benchmark runs. A program of yours gets the same from a profile of its
// own runs in its main package's directory.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strings"

	"github.com/fibermpi/fibermpi"
	"github.com/fibermpi/fibermpi/comm"
	"github.com/fibermpi/fibermpi/endpoint"
	"github.com/fibermpi/fibermpi/internal/osu"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "fmpi-osu:", err)
		}
		if errors.Is(err, errUsage) || errors.Is(err, flag.ErrHelp) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

var errUsage = errors.New("usage")

const usageText = `usage: fmpi-osu <benchmark> [flags]
       fmpi-osu compare [-baseline fibermpi] DIR
       fmpi-osu -version

Benchmarks (OSU micro-benchmarks' method, OSU's table format):
  latency     ping-pong latency of one pair of ranks (sizes from 0 B)
  bw          uni-directional bandwidth, windows of -W messages (from 1 B)
  bibw        bi-directional bandwidth
  mbw_mr      bandwidth and message rate of -p pairs (rank i -> i+pairs)
  latency_mt  -t callers per rank, caller k of rank 0 with caller k of
              rank 1 on tag k, iterations shared among them
  allreduce   MPI_FLOAT sum, every rank timed (from 4 B to 1 MiB)
  bcast       MPI_CHAR broadcast from rank 0, every rank timed (from 1 B)
  reduce      MPI_FLOAT sum to rank 0, every rank timed (from 4 B)
  barrier     barrier latency

Modes: launched as several processes (world size > 1), each process is a
rank. Otherwise the ranks are endpoints of this process, each run by one
fiber (or goroutine with -goroutines): 2 ranks; 2 x pairs for mbw_mr; -n for
the collectives. latency_mt in-process makes 2 endpoints at THREAD_MULTIPLE
and registers -t fibers on each (not 2 x t endpoints), as -t fibers per
process do in process mode.

compare reads DIR/<benchmark>/<contender>/*.txt (one OSU table each, one
sample per size per file) and prints, per benchmark and column, the median
and best of every contender at every size and its ratio to the baseline.

Flags:
`

func usage(fs *flag.FlagSet, w io.Writer) {
	fmt.Fprint(w, usageText)
	fs.SetOutput(w)
	fs.PrintDefaults()
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("fmpi-osu", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var (
		sizes      = fs.String("m", "", "message sizes `[MIN:]MAX` in bytes (OSU's -m; MIN rounded up to a power of two)")
		iters      = fs.Int("i", 0, "timed `iterations` per size (0: OSU's defaults)")
		warm       = fs.Int("x", -1, "warm-up `iterations` per size, not timed (-1: OSU's defaults)")
		window     = fs.Int("W", 0, "messages per window of bw, bibw, mbw_mr (0: 64)")
		threads    = fs.Int("t", 0, "latency_mt: callers (fibers) per rank (0: 2)")
		pairs      = fs.Int("p", 0, "mbw_mr: pairs (0: processes/2 in process mode, 1 in-process)")
		ranks      = fs.Int("n", 0, "collectives: ranks (in process, 0: 2; launched as P processes, a multiple of P: n/P endpoints per process)")
		full       = fs.Bool("f", false, "collectives: also minimum and maximum latency and iterations")
		progress   = fs.String("progress", "idle", "who polls the transport: `idle|server|caller`")
		eager      = fs.Int("eager", 0, "eager limit in `bytes` (0: the default, 8 KiB; -1: every message by rendezvous)")
		workers    = fs.Int("workers", 0, "fiber workers (0: GOMAXPROCS-1, at least 1)")
		goroutines = fs.Bool("goroutines", false, "run each caller on a goroutine instead of a fiber")
		coll       = fs.String("coll", "auto", "collectives: auto (through memory among the ranks of a process, two levels across processes) or messages (point-to-point schedules only)")
		version    = fs.Bool("version", false, "print the version of fibermpi and of the build, and exit")
		help       = fs.Bool("h", false, "print this help")
		cpuprofile = fs.String("cpuprofile", "", "write a CPU profile to `file` (file.<pid> per process)")
	)
	if len(args) == 0 {
		usage(fs, stderr)
		return errUsage
	}
	bench := ""
	if !strings.HasPrefix(args[0], "-") {
		bench, args = args[0], args[1:]
	}
	if bench == "compare" {
		return compare(args, stdout, stderr)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usage(fs, stdout)
			return nil
		}
		return fmt.Errorf("%w (fmpi-osu -h lists the flags)", err)
	}
	switch {
	case *help:
		usage(fs, stdout)
		return nil
	case *version:
		return fibermpi.PrintVersion(stdout, "fmpi-osu")
	case bench == "":
		usage(fs, stderr)
		return errUsage
	case fs.NArg() > 0:
		return fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	}
	cfg := osu.Config{Bench: osu.Bench(bench), Iterations: *iters, Window: *window,
		Threads: *threads, Pairs: *pairs, Ranks: *ranks, Full: *full}
	switch {
	case *warm == 0:
		cfg.Warmup = -1 // none
	case *warm > 0:
		cfg.Warmup = *warm
	case *warm < -1:
		return fmt.Errorf("%w: -x %d", osu.ErrConfig, *warm)
	}
	if *sizes != "" {
		lo, hi, err := osu.ParseSizes(*sizes)
		if err != nil {
			return err
		}
		cfg.MinSize, cfg.MaxSize = lo, hi
	}
	var opts osu.Options
	opts.Goroutines = *goroutines
	switch *coll {
	case "auto":
	case "messages":
		opts.CollPath = comm.CollMessages
	default:
		return fmt.Errorf("%w: -coll %q (want auto or messages)", osu.ErrConfig, *coll)
	}
	opts.Name = "fibermpi " + fibermpi.Version
	if fibermpi.BuildProfile() != "" {
		opts.Name += " pgo" // the tables say which build made them
	}
	opts.Endpoint.Workers = *workers
	switch *progress {
	case "idle":
		opts.Endpoint.Progress = endpoint.ProgressIdle
	case "server":
		opts.Endpoint.Progress = endpoint.ProgressServer
	case "caller":
		opts.Endpoint.Progress = endpoint.ProgressCaller
	default:
		return fmt.Errorf("%w: -progress %q (want idle, server or caller)", osu.ErrConfig, *progress)
	}
	if *eager != 0 {
		opts.Endpoint.EagerLimit = *eager
		if *eager > endpoint.DefaultEagerLimit {
			opts.Endpoint.PayloadSize = *eager // a packet must hold an eager message
		}
	}
	if *cpuprofile != "" {
		f, err := os.Create(fmt.Sprintf("%s.%d", *cpuprofile, os.Getpid()))
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	return osu.Run(cfg, opts, stdout)
}

// compare is `fmpi-osu compare [-baseline NAME] [-o FILE] DIR`.
func compare(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("fmpi-osu compare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	baseline := fs.String("baseline", "fibermpi", "the contender the ratios divide by")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: fmpi-osu compare [-baseline NAME] DIR\n\nDIR holds DIR/<benchmark>/<contender>/*.txt, one OSU table per file.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return fmt.Errorf("%w: compare takes one directory, got %d arguments", errUsage, fs.NArg())
	}
	samples, err := osu.LoadDir(fs.Arg(0))
	if err != nil {
		return err
	}
	return osu.Summarize(stdout, samples, *baseline)
}
