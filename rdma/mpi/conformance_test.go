//go:build mpi

package mpi_test

import (
	"testing"

	"github.com/fibermpi/fibermpi/rdma"
	"github.com/fibermpi/fibermpi/rdma/mpi"
	"github.com/fibermpi/fibermpi/rdma/rdmatest"
)

// TestConformance runs the suite over 2 to 4 transports of this process,
// each on its own lane (tags) of one MPI rank, endpoint a on transport
// a % n: every packet and transfer goes through MPI_Isend and MPI_Irecv
// (MPI's path to itself). MaxQueue and Ring are small so that
// rdma.ErrAgain and a short ring happen all the time.
func TestConformance(t *testing.T) {
	rdmatest.Run(t, func(t *testing.T, cfg rdmatest.Config) rdmatest.Fabric {
		n := min(max(cfg.Endpoints, 2), 4)
		trs := mpi.NewJob(t, n, cfg.Endpoints, func(int) mpi.Config {
			return mpi.Config{Pool: cfg.Pool, MaxQueue: 16, Ring: 8, Logf: t.Logf}
		})
		hosts := make([]rdma.Transport, cfg.Endpoints)
		for a := range hosts {
			hosts[a] = trs[a%n]
		}
		return rdmatest.Fabric{Hosts: hosts}
	})
}

// TestConformanceSplit runs the suite with packets split into MPI messages
// of at most 128 bytes (Config.Whole): every packet with more than 64
// bytes of payload goes as a kPacketFirst and kPacketMore parts, which
// the receiver joins, among the other transports' messages.
func TestConformanceSplit(t *testing.T) {
	rdmatest.Run(t, func(t *testing.T, cfg rdmatest.Config) rdmatest.Fabric {
		n := min(max(cfg.Endpoints, 2), 4)
		trs := mpi.NewJob(t, n, cfg.Endpoints, func(int) mpi.Config {
			return mpi.Config{Pool: cfg.Pool, MaxQueue: 16, Ring: 8, Whole: 128, Logf: t.Logf}
		})
		hosts := make([]rdma.Transport, cfg.Endpoints)
		for a := range hosts {
			hosts[a] = trs[a%n]
		}
		return rdmatest.Fabric{Hosts: hosts}
	})
}
