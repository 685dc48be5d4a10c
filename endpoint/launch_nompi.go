//go:build !mpi

package endpoint

import (
	"errors"

	"github.com/fibermpi/fibermpi/rdma"
)

// mpiBuilt: this build has no MPI transport (build with -tags mpi).
const mpiBuilt = false

func (p *Process) newMPI([]int) (rdma.Transport, error) {
	return nil, errors.New("endpoint: built without the MPI transport (-tags mpi)")
}
