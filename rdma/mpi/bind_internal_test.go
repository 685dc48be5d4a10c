//go:build mpi

package mpi

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/fibermpi/fibermpi/packet"
	"github.com/fibermpi/fibermpi/rdma"
)

// orderSink records the tags of the packets it receives, in order.
type orderSink struct {
	mu   sync.Mutex
	tags []int32
	pool *packet.Pool
}

var _ rdma.Receiver = (*orderSink)(nil)

func (s *orderSink) Receive(w int, pk *packet.Packet) {
	s.mu.Lock()
	s.tags = append(s.tags, pk.Tag)
	s.mu.Unlock()
	s.pool.Put(w, pk)
}

func (s *orderSink) got() []int32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.tags)
}

// TestBindReleasesHeldFirst: when an address is bound again, the arrivals
// held for it while it was unbound are delivered before its arrivals still
// in the release list. A deliverer that finds the address unbound holds
// the released arrivals it takes off the head of that list, oldest first,
// so the ones left there came after them (the conformance suite's
// BindWhileSending over MPI saw them overtaken in about one run in ten
// when Bind appended the held arrivals behind them).
func TestBindReleasesHeldFirst(t *testing.T) {
	pool, err := packet.New(packet.Config{Workers: 1, PerWorker: 8, Shared: 64, PayloadSize: 256})
	if err != nil {
		t.Fatal(err)
	}
	trs := NewJob(t, 2, 2, func(int) Config { return Config{Pool: pool, Logf: t.Logf} })
	tr := trs[0] // address 0 is process 0's
	s := &orderSink{pool: pool}
	if err := tr.Bind(0, s, pool); err != nil {
		t.Fatal(err)
	}
	if err := tr.Unbind(0); err != nil {
		t.Fatal(err)
	}
	pk := func(tag int32) *packet.Packet {
		p := pool.Get(0)
		p.Kind, p.Tag = packet.KindEager, tag
		return p
	}
	// What a deliverer leaves when it takes released arrivals 0 and 1 for
	// the unbound address: held, with 2 and 3 still in the release list.
	tr.imu.Lock()
	tr.held[0] = []*packet.Packet{pk(0), pk(1)}
	tr.release = append(tr.release, arrival{to: 0, pk: pk(2)}, arrival{to: 0, pk: pk(3)})
	tr.waiting.Add(2)
	tr.imu.Unlock()
	if err := tr.Bind(0, s, pool); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(s.got()) < 4 && time.Now().Before(deadline) {
		tr.Progress(0)
	}
	if got, want := s.got(), []int32{0, 1, 2, 3}; !slices.Equal(got, want) {
		t.Errorf("delivered tags %v, want %v", got, want)
	}
}
