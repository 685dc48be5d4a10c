package inproc_test

import (
	"testing"

	"github.com/fibermpi/fibermpi/packet"
	"github.com/fibermpi/fibermpi/rdma"
	"github.com/fibermpi/fibermpi/rdma/inproc"
)

// BenchmarkSend measures one Send to a bound endpoint whose Receiver
// returns the packet to the pool, with the table holding few or many
// bindings.
func BenchmarkSend(b *testing.B) {
	for _, bound := range []int{2, 1 << 14} {
		b.Run(map[int]string{2: "bound=2", 1 << 14: "bound=16384"}[bound], func(b *testing.B) {
			tr := inproc.New()
			pool, err := packet.New(packet.Config{Workers: 1, PerWorker: 8, Shared: 8, PayloadSize: 64})
			if err != nil {
				b.Fatal(err)
			}
			for a := range bound {
				if err := tr.Bind(rdma.Addr(a), giveBack{pool}, pool); err != nil {
					b.Fatal(err)
				}
			}
			to := rdma.Addr(bound - 1)
			for b.Loop() {
				if err := tr.Send(0, to, pool.Get(0)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
