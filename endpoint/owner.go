package endpoint

import "github.com/fibermpi/fibermpi/rdma"

// Owner returns the index of the process (0 to Procs()−1) that owns the
// endpoint at address a, or −1 for an address the job has not allocated.
// Every process of the job agrees on it. It is a load and an index, without
// a lock; the comm package uses it to find the ranks of a communicator that
// share this process's memory.
func (p *Process) Owner(a rdma.Addr) int { return p.layout.Owner(a) }
