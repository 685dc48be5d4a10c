package inproc_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/fibermpi/fibermpi/rdma/inproc"
	"github.com/fibermpi/fibermpi/rdma/rdmatest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestConformance runs the transport conformance suite on inproc: every
// endpoint of the fabric lives on one Transport.
func TestConformance(t *testing.T) {
	rdmatest.Run(t, func(t *testing.T, cfg rdmatest.Config) rdmatest.Fabric {
		return rdmatest.SingleHost(inproc.New(), cfg.Endpoints)
	})
}
