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
