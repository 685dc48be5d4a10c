package inproc_test

import (
	"fmt"

	"github.com/fibermpi/fibermpi/packet"
	"github.com/fibermpi/fibermpi/rdma"
	"github.com/fibermpi/fibermpi/rdma/inproc"
)

// printer prints what arrives and returns the packet to its pool.
type printer struct {
	me   rdma.Addr
	pool *packet.Pool
}

func (p printer) Receive(w int, pk *packet.Packet) {
	fmt.Printf("endpoint %d got %q (tag %d) from %d\n", p.me, pk.Data(), pk.Tag, pk.Source)
	p.pool.Put(w, pk)
}

// Two endpoints in one process: a packet, then a Put into registered
// memory, announced by a second packet.
func Example() {
	pool, err := packet.New(packet.Config{Workers: 1})
	if err != nil {
		panic(err)
	}
	tr := inproc.New()
	defer tr.Close()
	for a := range rdma.Addr(2) {
		if err := tr.Bind(a, printer{a, pool}, pool); err != nil {
			panic(err)
		}
	}

	pk := pool.Get(0)
	pk.Source, pk.Tag = 0, 7
	_ = pk.SetData([]byte("hello"))
	if err := tr.Send(0, 1, pk); err != nil { // delivered before Send returns
		pool.Put(0, pk)
		panic(err)
	}

	// Endpoint 1 exposes a buffer; endpoint 0 writes into it.
	buf := make([]byte, 8)
	region, err := tr.Register(buf)
	if err != nil {
		panic(err)
	}
	if err := tr.Put(1, region, 2, []byte("put")); err != nil {
		panic(err)
	}
	fmt.Printf("buffer of endpoint 1: %q\n", buf)
	_ = tr.Deregister(region)
	fmt.Println(tr.Put(1, region, 0, []byte("x")))
	// Output:
	// endpoint 1 got "hello" (tag 7) from 0
	// buffer of endpoint 1: "\x00\x00put\x00\x00\x00"
	// rdma: region not registered
}
