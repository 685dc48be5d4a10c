//go:build mpi

package mpi_test

import (
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/fibermpi/fibermpi/packet"
	"github.com/fibermpi/fibermpi/rdma"
	"github.com/fibermpi/fibermpi/rdma/mpi"
)

// bouncer sends every packet it receives on to the other endpoint of the
// pair, from inside Receive.
type bouncer struct {
	tr   rdma.Transport
	to   rdma.Addr
	pool *packet.Pool
	got  atomic.Int64
	err  atomic.Pointer[error]
}

func (b *bouncer) Receive(w int, pk *packet.Packet) {
	b.got.Add(1)
	if err := b.tr.Send(w, b.to, pk); err != nil {
		e := err // only a failure escapes
		b.err.Store(&e)
		b.pool.Put(w, pk)
	}
}

// pingPong is two transports of this process (one MPI rank talking to
// itself) with endpoints 0 and 1 bound, each bouncing what it gets to the
// other: one packet put into flight goes back and forth through MPI for as
// long as both are polled.
type pingPong struct {
	trs  []*mpi.Transport
	b    [2]*bouncer
	pool *packet.Pool
}

func newPingPong(t testing.TB) *pingPong {
	pool, err := packet.New(packet.Config{Workers: 1, PerWorker: 64, Shared: 256})
	if err != nil {
		t.Fatal(err)
	}
	pp := &pingPong{pool: pool}
	pp.trs = mpi.NewJob(t, 2, 2, func(int) mpi.Config { return mpi.Config{Pool: pool, Logf: t.Logf} })
	for a := range 2 {
		pp.b[a] = &bouncer{tr: pp.trs[a], to: rdma.Addr(1 - a), pool: pool}
		if err := pp.trs[a].Bind(rdma.Addr(a), pp.b[a], pool); err != nil {
			t.Fatal(err)
		}
	}
	return pp
}

// serve puts one packet of size bytes in flight from endpoint 0.
func (pp *pingPong) serve(t testing.TB, size int) {
	pk := pp.pool.Get(0)
	if pk == nil {
		t.Fatal("the pool is dry")
	}
	pk.Kind = packet.KindEager
	if err := pk.SetData(make([]byte, size)); err != nil {
		t.Fatal(err)
	}
	if err := pp.trs[0].Send(0, 1, pk); err != nil {
		t.Fatal(err)
	}
}

// trip polls both transports until endpoint 0 has received n more packets.
func (pp *pingPong) trip(t testing.TB, n int64) {
	want := pp.b[0].got.Load() + n
	for pp.b[0].got.Load() < want {
		pp.trs[1].Progress(0)
		pp.trs[0].Progress(0)
		for _, b := range pp.b {
			if p := b.err.Load(); p != nil {
				t.Fatal(*p)
			}
		}
	}
}

// TestPingPongAllocs checks that a packet's trip through the transport
// (Send, then the Progress that polls MPI and delivers it) allocates
// nothing once both transports are warm.
func TestPingPongAllocs(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	pp := newPingPong(t)
	pp.serve(t, 8)
	pp.trip(t, 100) // warm: send buffers, the inbox
	if n := testing.AllocsPerRun(1000, func() { pp.trip(t, 1) }); n != 0 {
		t.Errorf("a round trip allocates %v times, want 0", n)
	}
	if got := pp.b[1].got.Load(); got < 1100 {
		t.Errorf("endpoint 1 received %d packets, want at least 1100", got)
	}
}

// BenchmarkPingPong measures one round trip of an 8-byte packet between
// two transports of this process, every message through MPI (its path to
// the same rank): the CPU cost of the transport's path per message (the
// cgo calls, the MPI calls and the Go side), without a peer's latency.
func BenchmarkPingPong(b *testing.B) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	pp := newPingPong(b)
	pp.serve(b, 8)
	pp.trip(b, 100)
	b.ReportAllocs()
	for b.Loop() {
		pp.trip(b, 1)
	}
}
