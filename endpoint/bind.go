package endpoint

import (
	"os"
	"runtime"

	"github.com/fibermpi/fibermpi/fiber"
)

// EnvBind chooses how the processes of a node are placed on its CPUs:
// "core" (the default) gives each process an equal share of the CPUs they
// may use, one block each, binds the process to its share and pins each of
// its workers to one CPU of it, when every process's workers fit in its
// share (by default a process starts as many workers as fit: its share
// less one CPU, at least one) (when they fill it, the Go runtime's monitor thread, which then
// shares a worker's CPU, runs at the lowest priority); "none" leaves the
// placement and the priorities to the kernel. Open MPI binds by
// default too (to a core for small jobs), and Slurm and Hydra on request:
// the CPUs a process may use are divided only among the processes of its
// node that may use the same ones, so one that its launcher gave CPUs of
// its own keeps them all. Either way GOMAXPROCS is kept above the workers,
// unless the GOMAXPROCS environment variable sets it. Set
// Options.Fiber.Pin to place the workers yourself.
const EnvBind = "FIBERMPI_BIND"

// bind binds this process to its share of the node's CPUs and its workers
// to CPUs of that share (EnvBind), in a job of several processes on this
// node, by setting cfg's Pin and CPUs and the affinity of the process's
// threads. With the default number of workers (cfg.Workers zero) that
// would not fit in the share, it sets cfg.Workers to fit: the share less
// one CPU, at least one. It does nothing when the caller placed the
// workers, when binding is off, when this process is alone on its node or
// shares its OS process with others of the job (processes simulated in
// tests), when the workers the caller asked for would not fit in a share
// (oversubscribed: the kernel balances better then), and where threads
// cannot be bound. The share divides the CPUs this process may use among
// the processes of the node that may use the same ones (a launcher may
// have placed them). Bound or not, it keeps a P beyond the workers
// (keepSpareP), and when the workers fill the CPUs the process runs on, it
// demotes the monitor thread.
//
// Why: two processes that poll each other's rings each need a CPU; left
// to the kernel, a Go runtime thread of one (sysmon, the thread that hands
// a preempted locked worker its P back) wakes on the other's CPU and stops
// its worker, and a worker may be moved away from its caches. Bound, each
// process's helper threads share its own CPUs. The share, not the workers'
// CPUs alone, so that the process's own goroutines keep the CPUs it would
// have had. When the workers fill the share, the runtime's monitor thread
// runs at the lowest priority (demoteMonitor, bind_linux.go).
func (p *Process) bind(cfg *fiber.Config) {
	if cfg.Pin || p.nodeProcs < 2 || p.sharedOS || os.Getenv(EnvBind) == "none" {
		return
	}
	allowed, err := allowedCPUs()
	if err != nil {
		return
	}
	mine := p.shareOf(allowed)
	share := len(mine)
	workers := cfg.Workers
	if workers == 0 {
		// The default, GOMAXPROCS−1, counts the CPUs of the node, not of
		// this process's share: N processes of a node would start N times
		// too many workers (on 16 CPUs, 2 processes 15 each), unbound, and
		// an idle one's spin takes a busy one's CPU. Fit the share instead,
		// leaving one of its CPUs to the rest of the program as the
		// default does the node's.
		workers = max(runtime.GOMAXPROCS(0)-1, 1)
		if workers > share {
			workers = max(share-1, 1)
			cfg.Workers = workers
		}
	}
	// Before any binding: the runtime would follow it within a second.
	keepSpareP(workers)
	// Bind when the workers fit the share; with fewer CPUs than processes
	// that may use them, or more workers than fit, the node is
	// oversubscribed, and the kernel balances better.
	cpus := allowed // where this process's threads run
	if share > 0 && workers <= share && (len(mine) == len(allowed) || bindThreads(mine) == nil) {
		cpus = mine
		cfg.Pin, cfg.CPUs = true, mine[:workers]
	}
	if workers >= len(cpus) {
		// No CPU is left for the runtime's own threads.
		demoteMonitor()
	}
}

// shareOf returns this process's share of allowed, the CPUs it may use:
// they are divided among the processes of the node that may use the same
// ones, in blocks, by rank. Those are all of the node's processes, unless
// their launcher placed them (Open MPI binds each rank of a small job to a
// core, Slurm binds tasks with --cpu-bind, Hydra with -bind-to), and then
// only those it placed alike. The share is empty when they outnumber the
// CPUs.
func (pl place) shareOf(allowed []int) []int {
	share := len(allowed) / max(pl.cpuProcs, 1)
	if share == 0 {
		return nil
	}
	return allowed[pl.cpuRank*share : (pl.cpuRank+1)*share]
}

// keepSpareP raises GOMAXPROCS to one more than workers if it is not more
// already, and so fixes it, unless the GOMAXPROCS environment variable set
// it.
//
// Since Go 1.25 the runtime sets GOMAXPROCS to the CPUs its threads may
// use, at start and again within a second of a change of affinity. Bound to
// a share of one CPU, a process would have one P, held by its spinning
// worker: every other goroutine (the watchdogs, a collective's progress,
// the program's own) would run only when the runtime preempts the worker,
// every 10 ms, each time handing the locked worker's P away and back. And a
// worker's P that is in a long system or cgo call (a large copy inside an
// MPI call, or a sleep) is taken away from it by the runtime's monitor
// within 20 µs unless another P is idle; each time, the monitor goes back
// to looking every 20 µs for a millisecond or more, on the worker's CPU.
// Under Open MPI's binding, fmpi-osu bw over MPI woke the monitor 1 500
// times a second in each process (BENCHMARKS.md, issue 17, session 16).
func keepSpareP(workers int) {
	if os.Getenv("GOMAXPROCS") != "" {
		return
	}
	runtime.GOMAXPROCS(max(runtime.GOMAXPROCS(0), workers+1))
}
