package packet_test

import (
	"fmt"

	"github.com/fibermpi/fibermpi/packet"
)

// A worker takes a packet, fills in an eager message, and returns it.
func Example() {
	pool, err := packet.New(packet.Config{Workers: 2, PerWorker: 4, Shared: 8, PayloadSize: 1024})
	if err != nil {
		panic(err)
	}
	const w = 0 // this caller is worker 0
	p := pool.Get(w)
	p.Kind = packet.KindEager
	p.Context, p.Source, p.Tag = 7, 1, 42
	if err := p.SetData([]byte("hello")); err != nil {
		panic(err)
	}
	fmt.Println(p.Kind, p.Tag, string(p.Data()), p.Cap())
	pool.Put(w, p)
	fmt.Println(pool.Free(0), pool.Free(packet.NoWorker))
	// Output:
	// eager 42 hello 1024
	// 4 8
}

// Exhaustion is reported, not hidden: Get returns nil until a packet is
// returned.
func ExamplePool_Get_exhaustion() {
	pool, _ := packet.New(packet.Config{Workers: 1, PerWorker: 1, Shared: 1, PayloadSize: 64})
	a := pool.Get(packet.NoWorker) // from the shared pool
	b := pool.Get(packet.NoWorker) // stolen from worker 0's deque
	fmt.Println(a != nil, b != nil, pool.Get(packet.NoWorker) == nil)
	pool.Put(packet.NoWorker, a)
	c := pool.Get(packet.NoWorker)
	fmt.Println(c == a)
	pool.Put(packet.NoWorker, b)
	pool.Put(packet.NoWorker, c)
	// Output:
	// true true true
	// true
}

// The zero Config is valid; String shows what it means.
func ExampleConfig() {
	cfg := packet.Config{Workers: 4}
	fmt.Println(cfg)
	fmt.Println(packet.Config{PayloadSize: 100}.Validate())
	// Output:
	// packet.Config{Workers: 4, PerWorker: 64, Shared: 256, PayloadSize: 8192, Overflow: fail}
	// packet: invalid config: PayloadSize = 100: not a multiple of 64
}

// Under OverflowGrow the pool adds packets when it runs dry, up to
// MaxPackets, and reports exhaustion after that.
func ExampleConfig_overflowGrow() {
	pool, err := packet.New(packet.Config{
		Workers: 1, PerWorker: 2, Shared: 2, PayloadSize: 64,
		Overflow: packet.OverflowGrow, GrowBy: 4, MaxPackets: 10,
	})
	if err != nil {
		panic(err)
	}
	var held []*packet.Packet
	for p := pool.Get(0); p != nil; p = pool.Get(0) {
		held = append(held, p)
	}
	st := pool.Stats()
	fmt.Println(len(held), st.Packets, st.Grows, st.Exhausted)
	for _, p := range held {
		pool.Put(0, p)
	}
	// Output:
	// 10 10 2 1
}

// A transport that carries packets as bytes writes the header with
// EncodeHeader and reads it into a packet of the receiving pool with
// DecodeHeader, which rejects a length the packet cannot hold.
func ExamplePacket_EncodeHeader() {
	pool, _ := packet.New(packet.Config{Workers: 1, PerWorker: 2, Shared: 1, PayloadSize: 64})
	src := pool.Get(0)
	src.Kind, src.Context, src.Source, src.Tag, src.From = packet.KindEager, 3, 1, 9, 17
	_ = src.SetData([]byte("ping"))

	wire := make([]byte, packet.HeaderWireSize+src.Len())
	n := src.EncodeHeader(wire)
	copy(wire[n:], src.Data())

	dst := pool.Get(0)
	if err := dst.DecodeHeader(wire); err != nil {
		panic(err)
	}
	copy(dst.Payload(), wire[n:])
	fmt.Println(dst.Kind, dst.Source, dst.Tag, dst.From, string(dst.Data()))
	pool.Put(0, src)
	pool.Put(0, dst)
	// Output:
	// eager 1 9 17 ping
}
