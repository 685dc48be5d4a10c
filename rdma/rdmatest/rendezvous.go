package rdmatest

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/fibermpi/fibermpi/packet"
	"github.com/fibermpi/fibermpi/rdma"
)

// testRendezvous runs the rendezvous protocol of the layer above entirely
// from Receivers: the sender announces a message (RTS); the receiver's
// Receiver registers a buffer and offers it (RTR) with the packet it got;
// the sender's Receiver Puts the data in two pieces and says so (Done);
// the receiver's Receiver checks the buffer, its guards, and deregisters.
// Every endpoint sends to its neighbour and to itself, several messages at
// once, of sizes from 0 to well past a packet.
func testRendezvous(t *testing.T, f Factory) {
	const n = 3
	perPair := scale(8)
	e := newEnv(t, f, n)

	type message struct {
		from, to rdma.Addr
		data     []byte
	}
	var msgs []message
	for from := range n {
		for _, to := range []int{(from + 1) % n, from} {
			for k := range perPair {
				size := 0
				if k > 0 {
					size = 1 + int(mix(uint64(len(msgs)))%(96<<10))
				}
				data := make([]byte, size)
				fillPayload(data, uint64(len(msgs))+1000)
				msgs = append(msgs, message{rdma.Addr(from), rdma.Addr(to), data})
			}
		}
	}

	rv := newRVBuffers(e, len(msgs), 0, func(id uint64) (from, to rdma.Addr, data []byte) {
		return msgs[id].from, msgs[id].to, msgs[id].data
	})
	rv.bind(n, func(w int, h rdma.Transport, pk *packet.Packet, id uint64, r rdma.Region) {
		m := msgs[id]
		half := len(m.data) / 2
		if err := h.Put(m.to, r, uint64(half), m.data[half:]); err != nil {
			e.failf("Put in Receive of message %d: %v", id, err)
		}
		if err := h.Put(m.to, r, 0, m.data[:half]); err != nil {
			e.failf("Put in Receive of message %d: %v", id, err)
		}
		pk.Kind = packet.KindDone
		e.reply(w, h, m.to, pk)
	})
	rv.run("rendezvous")
	e.checkPool("after the rendezvous")
}

// testRegisterWhileAccessing: goroutines register, Get, Put, check and
// deregister buffers at once, each between its own pair of endpoints.
func testRegisterWhileAccessing(t *testing.T, f Factory) {
	const pairs = 3
	rounds := scale(100)
	e := newEnv(t, f, 2*pairs)
	sinks := e.bindSinks(2*pairs, true)
	var wg sync.WaitGroup
	for p := range pairs {
		owner, peer := rdma.Addr(2*p), rdma.Addr(2*p+1)
		wg.Go(func() {
			if err := e.registerRounds(sinks, p, owner, peer, rounds); err != nil {
				e.failf("pair %d: %v", p, err)
			}
		})
	}
	wg.Wait()
	e.report()
	e.checkPool("after the rounds")
}

// registerRounds is one goroutine of testRegisterWhileAccessing. It runs
// off the test goroutine, so it returns its failure.
func (e *env) registerRounds(sinks []*sink, p int, owner, peer rdma.Addr, rounds int) error {
	const size = 1000
	w := p // each goroutine its own worker index
	for round := range rounds {
		g := newGuarded(size, uint64(p)<<32|uint64(round))
		r, err := e.hosts[owner].Register(g.buf)
		if err != nil {
			return fmt.Errorf("calling Register: %w", err)
		}
		e.issued(r)
		got := make([]byte, size)
		if err := e.hosts[peer].Get(owner, r, 0, got); err != nil {
			return fmt.Errorf("calling Get: %w", err)
		}
		if !bytes.Equal(got, g.want(0, size)) {
			return fmt.Errorf("round %d: Get read other bytes than the owner wrote", round)
		}
		src := make([]byte, size-round%size)
		fillPayload(src, uint64(round)^0xfeed)
		if err := e.hosts[peer].Put(owner, r, uint64(round%size), src); err != nil {
			return fmt.Errorf("calling Put: %w", err)
		}
		g.write(round%size, src)
		// Tell the owner, and wait until it heard.
		seq := uint32(round)
		if err := e.send(w, owner, pid{from: peer, stream: notifyStream, seq: seq}); err != nil {
			return fmt.Errorf("calling Send: %w", err)
		}
		k := streamKey{peer, notifyStream}
		deadline := time.Now().Add(e.timeout)
		for sinks[owner].seen(k) <= seq {
			if time.Now().After(deadline) {
				return fmt.Errorf("round %d: timed out waiting for the notification", round)
			}
			if e.progress(w) == 0 {
				runtime.Gosched()
			}
		}
		if err := g.check(); err != nil {
			return fmt.Errorf("round %d: %w", round, err)
		}
		if err := e.hosts[owner].Deregister(r); err != nil {
			return fmt.Errorf("calling Deregister: %w", err)
		}
		if err := e.hosts[peer].Put(owner, r, 0, src[:1]); !errors.Is(err, rdma.ErrNoRegion) {
			return fmt.Errorf("a Put after Deregister got %v, want rdma.ErrNoRegion", err)
		}
	}
	return nil
}

// testLarge: a Put and a Get of 4 MiB (1 MiB under -short), and accesses
// near the end of such a region.
func testLarge(t *testing.T, f Factory) {
	size := 4 << 20
	if testing.Short() {
		size = 1 << 20
	}
	e := newEnv(t, f, 2)
	sinks := e.bindSinks(2, true)
	g := newGuarded(size, 10)
	e.register(0, g)

	src := make([]byte, size)
	fillPayload(src, 11)
	if err := e.hosts[1].Put(0, g.region, 0, src); err != nil {
		t.Fatalf("Put of %d bytes: %v", size, err)
	}
	g.write(0, src)
	tail := make([]byte, 1000)
	fillPayload(tail, 12)
	if err := e.hosts[1].Put(0, g.region, uint64(size-len(tail)), tail); err != nil {
		t.Fatalf("Put at the end: %v", err)
	}
	g.write(size-len(tail), tail)
	e.notify(sinks, 1, 0)
	if err := g.check(); err != nil {
		t.Fatalf("after the Puts: %v", err)
	}

	dst := newGuarded(size, 13)
	if err := e.hosts[1].Get(0, g.region, 0, dst.buf); err != nil {
		t.Fatalf("Get of %d bytes: %v", size, err)
	}
	dst.write(0, g.want(0, size))
	if err := dst.check(); err != nil {
		t.Fatalf("Get of %d bytes: %v", size, err)
	}
	half := newGuarded(size/2+1, 14)
	if err := e.hosts[1].Get(0, g.region, uint64(size/2-1), half.buf); err != nil {
		t.Fatalf("Get of the upper half: %v", err)
	}
	half.write(0, g.want(size/2-1, size/2+1))
	if err := half.check(); err != nil {
		t.Fatalf("Get of the upper half: %v", err)
	}
	e.checkBoundsErr("Put one byte past a large region", e.hosts[1].Put(0, g.region, uint64(size), []byte{1}), uint64(size), 1)
	if err := e.hosts[0].Deregister(g.region); err != nil {
		t.Errorf("Deregister: %v", err)
	}
}

// rvBuffers is the receiving side of the suite's rendezvous tests, and
// the receivers' dispatch: the buffers registered for the messages
// announced, and how many completed.
type rvBuffers struct {
	e     *env
	count int                                               // messages 0 to count-1
	seed  uint64                                            // added to a message's id to seed its buffer's guards
	msg   func(id uint64) (from, to rdma.Addr, data []byte) // each message's ends and bytes
	mu    sync.Mutex
	bufs  map[uint64]*guarded // by message
	done  int
}

func newRVBuffers(e *env, count int, seed uint64, msg func(id uint64) (from, to rdma.Addr, data []byte)) *rvBuffers {
	return &rvBuffers{e: e, count: count, seed: seed, msg: msg, bufs: make(map[uint64]*guarded)}
}

// bind binds a Receiver to each of the first n endpoints. It plays the
// receiver's side of every message (RTS: offer; Done: finish) and hands
// the sender's side, the RTR of message id with its region, to rtr;
// packets for unknown messages and of other kinds are failures.
func (b *rvBuffers) bind(n int, rtr func(w int, h rdma.Transport, pk *packet.Packet, id uint64, r rdma.Region)) {
	e := b.e
	for a := range n {
		me := rdma.Addr(a)
		h := e.hosts[me]
		e.bind(me, receiverFunc(func(w int, pk *packet.Packet) {
			id := pk.SendID
			if id >= uint64(b.count) {
				e.failf("endpoint %d: packet for unknown message %d: %v", me, id, pk)
				e.putBack(w, pk)
				return
			}
			from, to, data := b.msg(id)
			switch pk.Kind {
			case packet.KindRTS: // at the receiver
				b.offer(w, h, pk, id, data, from)
			case packet.KindRTR: // at the sender
				r, err := rdma.ParseRegion(pk.Data())
				if err != nil {
					e.failf("RTR of message %d: %v", id, err)
				}
				rtr(w, h, pk, id, r)
			case packet.KindDone: // at the receiver
				b.finish(w, h, me, pk, id, data, from, to)
			default:
				e.failf("endpoint %d: unexpected packet %v", me, pk)
				e.putBack(w, pk)
			}
		}))
	}
}

// offer answers the RTS pk of message id, whose bytes are data, from
// endpoint from, at an endpoint on host h: it registers a guarded buffer
// and sends the RTR in pk.
func (b *rvBuffers) offer(w int, h rdma.Transport, pk *packet.Packet, id uint64, data []byte, from rdma.Addr) {
	e := b.e
	g := newGuarded(int(pk.Size), id+b.seed)
	r, err := h.Register(g.buf)
	if err != nil {
		e.failf("Register in Receive: %v", err)
		e.putBack(w, pk)
		return
	}
	g.region = r
	g.write(0, data)
	b.mu.Lock()
	b.bufs[id] = g
	b.mu.Unlock()
	pk.Kind = packet.KindRTR
	pk.SetLen(0)
	if err := pk.SetData(rdma.AppendRegion(nil, r)); err != nil {
		e.failf("region in RTR: %v", err)
	}
	e.reply(w, h, from, pk)
}

// finish takes the Done pk of message id at endpoint me on host h: it
// checks the buffer (data, and the guards around it) and deregisters it.
func (b *rvBuffers) finish(w int, h rdma.Transport, me rdma.Addr, pk *packet.Packet, id uint64, data []byte, from, to rdma.Addr) {
	e := b.e
	e.putBack(w, pk)
	b.mu.Lock()
	g := b.bufs[id]
	delete(b.bufs, id)
	b.done++
	b.mu.Unlock()
	if g == nil {
		e.failf("endpoint %d: Done for message %d that has no buffer", me, id)
		return
	}
	if err := g.check(); err != nil {
		e.failf("message %d (%d bytes, %d to %d): %v", id, len(data), from, to, err)
	}
	if err := h.Deregister(g.region); err != nil {
		e.failf("Deregister in Receive: %v", err)
	}
}

// run announces every message with an RTS, from the test goroutine, and
// waits until all have completed.
func (b *rvBuffers) run(what string) {
	e := b.e
	e.t.Helper()
	n := b.count
	for id := range uint64(n) {
		from, to, data := b.msg(id)
		pk := e.mustGet()
		pk.Kind = packet.KindRTS
		pk.SendID = id
		pk.Size = uint64(len(data))
		if err := e.sendRetry(packet.NoWorker, e.hosts[from], to, pk); err != nil {
			e.pool.Put(packet.NoWorker, pk)
			e.t.Fatalf("Send of RTS: %v", err)
		}
	}
	e.waitFor(fmt.Sprintf("%d %s to complete", n, what), func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.done == n
	})
}
