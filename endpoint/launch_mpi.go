//go:build mpi

package endpoint

import (
	"os"

	"github.com/fibermpi/fibermpi/rdma"
	"github.com/fibermpi/fibermpi/rdma/mpi"
)

// mpiBuilt: this build has the MPI transport (tag mpi).
const mpiBuilt = true

// newMPI makes the MPI transport (rdma/mpi) to peers; collective. Init
// checked the environment it reads.
func (p *Process) newMPI(peers []int) (rdma.Transport, error) {
	whole, pieces, err := mpiTuning(os.LookupEnv)
	if err != nil {
		return nil, err
	}
	return mpi.New(mpi.Config{Exchange: p.boot, Layout: p.layout, Peers: peers, PayloadSize: p.opts.PayloadSize,
		NoMove: os.Getenv(EnvMPIRendezvous) == "put", Whole: whole, MovedPieces: pieces})
}
