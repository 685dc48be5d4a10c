package tcp_test

import (
	"errors"
	"sync/atomic"
	"testing"

	"github.com/fibermpi/fibermpi/packet"
	"github.com/fibermpi/fibermpi/rdma"
	"github.com/fibermpi/fibermpi/rdma/tcp"
)

// counter is a Receiver that counts arrivals and returns them.
type counter struct {
	pool *packet.Pool
	n    atomic.Int64
}

func (c *counter) Receive(w int, pk *packet.Packet) {
	c.pool.Put(w, pk)
	c.n.Add(1)
}

// BenchmarkPingPong: one 8-byte packet each way per iteration between two
// transports over loopback, each side spinning on Progress (the reader
// goroutine per connection takes the frame off the socket, Progress
// delivers it): half the round trip is the one-way latency.
func BenchmarkPingPong(b *testing.B) {
	pool, err := packet.New(packet.Config{Workers: 2, PayloadSize: 512})
	if err != nil {
		b.Fatal(err)
	}
	trs := newJob(b, 2, 2, func(int) tcp.Config { return tcp.Config{Pool: pool, Logf: b.Logf} })
	recv := []*counter{{pool: pool}, {pool: pool}}
	for i, tr := range trs {
		if err := tr.Bind(rdma.Addr(i), recv[i], pool); err != nil {
			b.Fatal(err)
		}
	}
	send := func(w int, from int) {
		pk := pool.Get(w)
		pk.SetLen(8)
		for {
			err := trs[from].Send(w, rdma.Addr(1-from), pk)
			if err == nil {
				return
			}
			if !errors.Is(err, rdma.ErrAgain) {
				b.Fatal(err)
			}
		}
	}
	done := make(chan struct{})
	go func() { // the echo side
		defer close(done)
		for i := range int64(b.N) {
			for recv[1].n.Load() <= i {
				trs[1].Progress(1)
			}
			send(1, 1)
		}
	}()
	b.ResetTimer()
	for i := range int64(b.N) {
		send(0, 0)
		for recv[0].n.Load() <= i {
			trs[0].Progress(0)
		}
	}
	<-done
}
