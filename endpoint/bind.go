package endpoint

import (
	"os"
	"runtime"

	"github.com/fibermpi/fibermpi/fiber"
)

// EnvBind chooses how the processes of a node are placed on its CPUs:
// "core" (the default) binds each process, when the node's processes'
// workers fit on the CPUs they may use, to CPUs of its own, one per
// worker, and pins each worker to one of them; "none" leaves the placement
// to the kernel. Open MPI binds the same way by default (--bind-to core
// for small jobs). Set Options.Fiber.Pin to place the workers yourself.
const EnvBind = "FIBERMPI_BIND"

// bind binds this process and its workers to CPUs of their own (EnvBind)
// in a job of several processes on this node, by setting cfg's Pin and
// CPUs and the affinity of the process's threads. It does nothing when
// the caller placed the workers, when binding is off, when this process is
// alone on its node or shares its OS process with others of the job
// (processes simulated in tests), when the workers of the node's processes would share
// CPUs (oversubscribed: the kernel balances better then), and where
// threads cannot be bound.
//
// Why: two processes that poll each other's rings each need a CPU; left
// to the kernel, a Go runtime thread of one (sysmon, the thread that hands
// a preempted locked worker its P back) wakes on the other's CPU and stops
// its worker, and a worker may be moved away from its caches. Bound, each
// process's helper threads share its own CPUs.
func (p *Process) bind(cfg *fiber.Config) {
	if cfg.Pin || p.nodeProcs < 2 || p.sharedOS || os.Getenv(EnvBind) == "none" {
		return
	}
	workers := cfg.Workers
	if workers == 0 {
		workers = max(runtime.GOMAXPROCS(0)-1, 1)
	}
	allowed, err := allowedCPUs()
	if err != nil || p.nodeProcs*workers > len(allowed) {
		return
	}
	cpus := allowed[p.nodeRank*workers : (p.nodeRank+1)*workers]
	if bindThreads(cpus) != nil {
		return
	}
	cfg.Pin, cfg.CPUs = true, cpus
}
