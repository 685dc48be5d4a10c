//go:build mpi

package mpi

import "golang.org/x/sys/unix"

// osYield gives the processor to another runnable thread (sched_yield)
// without going through the Go scheduler: the caller keeps its P.
//
// It is a system call as the runtime sees one (entersyscall), not a raw
// one, so that the waiting goroutine can be stopped while it yields. A
// wait loop whose only way out of Go code is a raw system call is all but
// unpreemptible: the garbage collector's signal to stop it finds it in the
// system call or in the assembly around it, neither of which is a safe
// point, and the collector spins until a signal happens to land in the
// loop's Go code. Under Open MPI's binding of a rank to one CPU that took
// up to 0.8 s at startup (Bind's await, while the worker's GC assist
// waited for it; BENCHMARKS.md, issue 17, session 25). A goroutine in a
// system call is scanned where it stands.
func osYield() { _, _, _ = unix.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0) }
