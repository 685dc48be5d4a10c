package route_test

import (
	"errors"
	"testing"

	"github.com/fibermpi/fibermpi/packet"
	"github.com/fibermpi/fibermpi/rdma"
	"github.com/fibermpi/fibermpi/rdma/inproc"
	"github.com/fibermpi/fibermpi/rdma/rdmatest"
	"github.com/fibermpi/fibermpi/rdma/route"
)

// wire is a backend shared by the routers of several simulated processes:
// an in-process transport seen only as an rdma.Transport, that does not
// close twice.
type wire struct {
	rdma.Transport
	closed *bool
}

func (w wire) Close() error {
	if *w.closed {
		return nil
	}
	*w.closed = true
	return w.Transport.Close()
}

// routers returns the routers of procs simulated processes whose endpoints
// (n in all, spread in blocks) the layout assigns, joined by one wire.
func routers(t *testing.T, procs, n int) ([]*route.Transport, *rdma.Layout) {
	t.Helper()
	layout := rdma.NewLayout(procs)
	if extra := n - procs; extra > 0 {
		counts := make([]int, procs)
		for i := range extra {
			counts[i%procs]++
		}
		if _, err := layout.Append(counts); err != nil {
			t.Fatal(err)
		}
	}
	w := wire{rdmatest.HideLocal(inproc.New()), new(bool)}
	rs := make([]*route.Transport, procs)
	for p := range procs {
		by := make([]rdma.Transport, procs)
		for q := range by {
			if q != p {
				by[q] = w
			}
		}
		r, err := route.New(p, layout, inproc.New(), by)
		if err != nil {
			t.Fatal(err)
		}
		rs[p] = r
	}
	return rs, layout
}

func TestConformanceTwoProcesses(t *testing.T) {
	rdmatest.Run(t, func(t *testing.T, cfg rdmatest.Config) rdmatest.Fabric {
		rs, layout := routers(t, 2, max(cfg.Endpoints, 2))
		hosts := make([]rdma.Transport, cfg.Endpoints)
		for a := range hosts {
			hosts[a] = rs[layout.Owner(rdma.Addr(a))]
		}
		return rdmatest.Fabric{Hosts: hosts}
	})
}

func TestConformanceOneProcess(t *testing.T) {
	rdmatest.Run(t, func(t *testing.T, cfg rdmatest.Config) rdmatest.Fabric {
		layout := rdma.NewLayout(1)
		if cfg.Endpoints > 1 {
			if _, err := layout.Append([]int{cfg.Endpoints - 1}); err != nil {
				t.Fatal(err)
			}
		}
		r, err := route.New(0, layout, inproc.New(), make([]rdma.Transport, 1))
		if err != nil {
			t.Fatal(err)
		}
		return rdmatest.SingleHost(r, cfg.Endpoints)
	})
}

// Locality is per address: Peer reaches this process's endpoints and says
// ErrRemote for the others'; a process nobody reaches is an error naming it.
func TestPeerPerAddress(t *testing.T) {
	rs, _ := routers(t, 2, 2)
	defer rs[0].Close()
	pool, err := packet.New(packet.Config{Workers: 1, PerWorker: 4, PayloadSize: 64})
	if err != nil {
		t.Fatal(err)
	}
	sink := receiverFunc(func(w int, pk *packet.Packet) { pool.Put(w, pk) })
	if err := rs[0].Bind(0, sink, pool); err != nil {
		t.Fatal(err)
	}
	if err := rs[0].Bind(1, sink, pool); !errors.Is(err, rdma.ErrNoPeer) {
		t.Fatalf("Bind of another process's address: %v, want ErrNoPeer", err)
	}
	if _, err := rs[0].Peer(0); err != nil {
		t.Fatalf("Peer of a local endpoint: %v", err)
	}
	if _, err := rs[0].Peer(1); !errors.Is(err, rdma.ErrRemote) {
		t.Fatalf("Peer of a remote endpoint: %v, want ErrRemote", err)
	}
	if _, err := rs[0].Peer(7); !errors.Is(err, rdma.ErrNoPeer) {
		t.Fatalf("Peer of an unallocated address: %v, want ErrNoPeer", err)
	}

	layout := rdma.NewLayout(2)
	lonely, err := route.New(0, layout, inproc.New(), make([]rdma.Transport, 2))
	if err != nil {
		t.Fatal(err)
	}
	defer lonely.Close()
	pk := pool.Get(0)
	if err := lonely.Send(0, 1, pk); !errors.Is(err, route.ErrUnreachable) {
		t.Fatalf("Send to an unreachable process: %v, want ErrUnreachable", err)
	}
	pool.Put(0, pk)
}

func TestNewChecks(t *testing.T) {
	layout := rdma.NewLayout(2)
	if _, err := route.New(0, layout, rdmatest.HideLocal(inproc.New()), make([]rdma.Transport, 2)); err == nil {
		t.Error("a local backend without rdma.Local was accepted")
	}
	if _, err := route.New(0, layout, inproc.New(), make([]rdma.Transport, 3)); err == nil {
		t.Error("backends for 3 processes in a job of 2 were accepted")
	}
}

type receiverFunc func(w int, pk *packet.Packet)

func (f receiverFunc) Receive(w int, pk *packet.Packet) { f(w, pk) }
