//go:build mpi

package endpoint

import (
	"os"

	"github.com/fibermpi/fibermpi/rdma"
	"github.com/fibermpi/fibermpi/rdma/mpi"
)

// mpiBuilt: this build has the MPI transport (tag mpi).
const mpiBuilt = true

// newMPI makes the MPI transport (rdma/mpi) to peers; collective.
func (p *Process) newMPI(peers []int) (rdma.Transport, error) {
	return mpi.New(mpi.Config{Exchange: p.boot, Layout: p.layout, Peers: peers, PayloadSize: p.opts.PayloadSize,
		NoMove: os.Getenv(EnvMPIRendezvous) == "put"})
}
