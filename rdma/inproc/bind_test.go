package inproc_test

import (
	"errors"
	"math"
	"runtime"
	"testing"

	"github.com/fibermpi/fibermpi/packet"
	"github.com/fibermpi/fibermpi/rdma"
	"github.com/fibermpi/fibermpi/rdma/inproc"
)

// giveBack returns every packet it receives to its pool.
type giveBack struct{ pool *packet.Pool }

func (g giveBack) Receive(w int, pk *packet.Packet) { g.pool.Put(w, pk) }

// TestBindMemoryLinear: binding N addresses allocates O(N) bytes. (Binding
// used to copy the whole table each time: O(N²) bytes, minutes for 1e5.)
func TestBindMemoryLinear(t *testing.T) {
	const n = 1 << 16
	tr := inproc.New()
	pool, err := packet.New(packet.Config{Workers: 1, PerWorker: 1, PayloadSize: 64})
	if err != nil {
		t.Fatal(err)
	}
	r := giveBack{pool}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for a := range n {
		if err := tr.Bind(rdma.Addr(a), r, pool); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	// A binding is 16 bytes (plus a pointer in its chunk); allow four
	// times the table's size for the directories and the allocator.
	if got, limit := after.TotalAlloc-before.TotalAlloc, uint64(4*n*24); got > limit {
		t.Errorf("binding %d addresses allocated %d bytes; want at most %d", n, got, limit)
	}
	for a := range n {
		if err := tr.Unbind(rdma.Addr(a)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tr.Unbind(0); !errors.Is(err, rdma.ErrNoPeer) {
		t.Errorf("Unbind after Unbind: %v", err)
	}
}

// TestSparseAddresses: addresses in chunks that do not exist yet, between
// and beyond bound ones, are not bound.
func TestSparseAddresses(t *testing.T) {
	tr := inproc.New()
	pool, err := packet.New(packet.Config{Workers: 1, PerWorker: 1, Shared: 1, PayloadSize: 64})
	if err != nil {
		t.Fatal(err)
	}
	bound := []rdma.Addr{0, 5000, 1 << 24, math.MaxUint32}
	for _, a := range bound {
		if err := tr.Bind(a, giveBack{pool}, pool); err != nil {
			t.Fatalf("Bind(%d): %v", a, err)
		}
	}
	for _, a := range []rdma.Addr{1, 4999, 5001, 1 << 20, 1<<24 + 1, math.MaxUint32 - 1} {
		pk := pool.Get(packet.NoWorker)
		if err := tr.Send(packet.NoWorker, a, pk); !errors.Is(err, rdma.ErrNoPeer) {
			t.Errorf("Send to unbound %d: %v", a, err)
		}
		pool.Put(packet.NoWorker, pk)
	}
	for _, a := range bound {
		if err := tr.Send(packet.NoWorker, a, pool.Get(packet.NoWorker)); err != nil {
			t.Errorf("Send to %d: %v", a, err)
		}
	}
	if s := pool.Stats(); s.InUse != 0 {
		t.Errorf("%d packets not returned", s.InUse)
	}
}

// TestNoAllocs: Send, Put and Get allocate nothing.
func TestNoAllocs(t *testing.T) {
	tr := inproc.New()
	pool, err := packet.New(packet.Config{Workers: 1, PerWorker: 4, Shared: 4, PayloadSize: 64})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Bind(3, giveBack{pool}, pool); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 256)
	r, err := tr.Register(buf)
	if err != nil {
		t.Fatal(err)
	}
	src, dst := make([]byte, 64), make([]byte, 64)
	allocs := testing.AllocsPerRun(1000, func() {
		if err := tr.Send(0, 3, pool.Get(0)); err != nil {
			t.Fatal(err)
		}
		if err := tr.Put(3, r, 100, src); err != nil {
			t.Fatal(err)
		}
		if err := tr.Get(3, r, 100, dst); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("Send+Put+Get allocated %v times per run", allocs)
	}
}
