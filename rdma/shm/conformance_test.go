//go:build linux

package shm_test

import (
	"testing"

	"github.com/fibermpi/fibermpi/rdma"
	"github.com/fibermpi/fibermpi/rdma/rdmatest"
	"github.com/fibermpi/fibermpi/rdma/shm"
)

// conformanceRing is the ring size of the conformance runs: small, so
// that full rings (rdma.ErrAgain, waiting Puts) happen all the time.
const conformanceRing = 8 << 10

// factory makes fabrics of 2 to 4 transports (processes) configured as
// base (with the suite's pool), endpoint a on transport a % n. When Puts
// copy through the rings (ForceCopy, RingPuts) every transport gets a
// progress engine (a goroutine, stopped when the suite closes the
// transport): a copied Put or Get needs the owner's progress, which in a
// real job its progress engine provides, and the suite calls Put and Get
// from its test goroutine without driving the owner.
func factory(base shm.Config) rdmatest.Factory {
	copies := base.ForceCopy || base.RingPuts
	return func(t *testing.T, cfg rdmatest.Config) rdmatest.Fabric {
		n := min(max(cfg.Endpoints, 2), 4)
		j := newJob(t, n, cfg.Endpoints, func(int) shm.Config {
			c := base
			c.Pool = cfg.Pool
			return c
		})
		hosts := make([]rdma.Transport, cfg.Endpoints)
		var es []*engine
		if copies {
			es = j.engines()
		}
		for a := range hosts {
			if copies {
				hosts[a] = es[a%n]
			} else {
				hosts[a] = j.trs[a%n]
			}
		}
		return rdmatest.Fabric{Hosts: hosts}
	}
}

// TestConformance runs the suite with Put and Get by cross-memory attach
// (process_vm_writev into this same process).
func TestConformance(t *testing.T) {
	rdmatest.Run(t, factory(shm.Config{RingSize: conformanceRing}))
}

// TestConformanceCopy runs the suite with Put and Get copied through the
// rings, as where the kernel refuses cross-memory attach.
func TestConformanceCopy(t *testing.T) {
	rdmatest.Run(t, factory(shm.Config{RingSize: conformanceRing, ForceCopy: true}))
}

// TestConformanceRingPuts runs the suite with Puts (and started Puts, which
// Progress finishes) copied through the rings where cross-memory attach
// works, as on a node whose processes have CPUs of their own.
func TestConformanceRingPuts(t *testing.T) {
	rdmatest.Run(t, factory(shm.Config{RingSize: conformanceRing, RingPuts: true}))
}
