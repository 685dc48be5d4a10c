package tcp_test

import (
	"testing"

	"github.com/fibermpi/fibermpi/rdma"
	"github.com/fibermpi/fibermpi/rdma/rdmatest"
	"github.com/fibermpi/fibermpi/rdma/tcp"
)

// conformanceQueue is the per-connection queue bound of the conformance
// runs: small, so that rdma.ErrAgain and paused readers happen all the
// time.
const conformanceQueue = 8 << 10

// TestConformance runs the suite over 2 to 4 transports of this process
// connected through loopback TCP, endpoint a on transport a % n.
func TestConformance(t *testing.T) {
	rdmatest.Run(t, func(t *testing.T, cfg rdmatest.Config) rdmatest.Fabric {
		n := min(max(cfg.Endpoints, 2), 4)
		trs := newJob(t, n, cfg.Endpoints, func(int) tcp.Config {
			return tcp.Config{Pool: cfg.Pool, MaxQueue: conformanceQueue, Logf: t.Logf}
		})
		hosts := make([]rdma.Transport, cfg.Endpoints)
		for a := range hosts {
			hosts[a] = trs[a%n]
		}
		return rdmatest.Fabric{Hosts: hosts}
	})
}
