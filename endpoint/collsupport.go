package endpoint

import "github.com/fibermpi/fibermpi/rdma"

// What the comm package's collectives need from the process beyond
// messages: where each rank lives, and a way to drive progress while they
// wait for something other than a request.

// Owner returns the index of the process (0 to Procs()−1) that owns the
// endpoint at address a, or −1 for an address the job has not allocated.
// Every process of the job agrees on it. It is a load and an index, without
// a lock; the comm package uses it to find the ranks of a communicator that
// share this process's memory.
func (p *Process) Owner(a rdma.Addr) int { return p.layout.Owner(a) }

// Progress polls the transport once for the handle's caller and reports
// whether it handled anything, as a blocking call does between looks when
// it cannot simply sleep on a request (Probe). It never blocks. A caller
// that waits by polling must call it: with ProgressIdle the transport is
// polled only by idle workers, and a fiber that keeps yielding keeps its
// worker busy.
func (e *Endpoint) Progress() bool { return e.c.p.progress(e.worker) > 0 }
