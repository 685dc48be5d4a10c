package jobtest

import (
	"testing"

	"github.com/fibermpi/fibermpi/rdma"
	"github.com/fibermpi/fibermpi/rdma/rdmatest"
)

// A port of the test wire is a transport like the others: it passes the
// suite. (The queued wire, which refuses with ErrAgain, is exercised by the
// jobs of every multi-transport test.)
func TestWireConformance(t *testing.T) {
	for _, limit := range []int{0} {
		t.Run(NewWire(limit).Name(), func(t *testing.T) {
			rdmatest.Run(t, func(t *testing.T, cfg rdmatest.Config) rdmatest.Fabric {
				return rdmatest.SingleHost(NewWire(limit).Port(), cfg.Endpoints)
			})
		})
	}
}

var _ rdma.Transport = (*Port)(nil)
