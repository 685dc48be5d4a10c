package rdmatest

import (
	"fmt"
	"sync"
	"testing"

	"github.com/fibermpi/fibermpi/packet"
	"github.com/fibermpi/fibermpi/rdma"
)

// scale shrinks packet counts under -short.
func scale(n int) int {
	if testing.Short() {
		return max(n/4, 1)
	}
	return n
}

// testName: every host names its backend, the same way.
func testName(t *testing.T, f Factory) {
	e := newEnv(t, f, 2)
	name := e.hosts[0].Name()
	if name == "" {
		t.Error("Name() is empty")
	}
	for a, h := range e.hosts {
		if h.Name() != name {
			t.Errorf("host of endpoint %d is named %q, host of endpoint 0 %q", a, h.Name(), name)
		}
	}
}

// testDelivery: from every endpoint to every endpoint (itself included),
// packets with every header field set and payloads of every length arrive
// once, intact, in order.
func testDelivery(t *testing.T, f Factory) {
	const n = 3
	per := scale(64)
	e := newEnv(t, f, n)
	sinks := e.bindSinks(n, true)
	for seq := range per {
		for from := range n {
			for to := range n {
				e.mustSend(rdma.Addr(to), pid{from: rdma.Addr(from), seq: uint32(seq)})
			}
		}
	}
	e.waitArrived(int64(n * n * per))
	for to, s := range sinks {
		if got := s.received(); got != n*per {
			t.Errorf("endpoint %d received %d packets, want %d", to, got, n*per)
		}
		for from := range n {
			if got := s.seen(streamKey{rdma.Addr(from), 0}); got != uint32(per) {
				t.Errorf("endpoint %d has %d packets from %d, want %d", to, got, from, per)
			}
		}
	}
	e.checkPool("after delivery")
}

// sender is one goroutine's traffic: from one endpoint, as one worker
// index, its own stream towards each destination.
type sender struct {
	w      int
	from   rdma.Addr
	stream uint32
	to     []rdma.Addr
	count  int // packets to send, spread over to
}

// run sends s's packets, interleaving destinations, and returns how many
// went to each destination.
func (s sender) run(e *env) ([]uint32, error) {
	sent := make([]uint32, len(s.to))
	for i := range s.count {
		d := int(mix(uint64(s.stream)<<32|uint64(i)) % uint64(len(s.to)))
		id := pid{from: s.from, stream: s.stream, seq: sent[d]}
		if err := e.send(s.w, s.to[d], id); err != nil {
			return sent, fmt.Errorf("sender %d (endpoint %d, worker %d): send %+v to %d: %w", s.stream, s.from, s.w, id, s.to[d], err)
		}
		sent[d]++
	}
	return sent, nil
}

// runSenders runs the senders at once, waits for their packets to arrive
// and checks the count of every stream at every sink.
func (e *env) runSenders(sinks []*sink, senders []sender) {
	e.t.Helper()
	sent := make([][]uint32, len(senders))
	var wg sync.WaitGroup
	for i, s := range senders {
		wg.Go(func() {
			var err error
			sent[i], err = s.run(e)
			if err != nil {
				e.failf("%v", err)
			}
		})
	}
	// A transport that needs progress gets it from the senders when the
	// pool runs dry, and from here.
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	e.waitFor("the senders to finish", func() bool {
		select {
		case <-done:
			return true
		default:
			return false
		}
	})
	total := int64(0)
	for _, c := range sent {
		for _, n := range c {
			total += int64(n)
		}
	}
	e.waitArrived(total)
	for i, s := range senders {
		for d, to := range s.to {
			if got := sinks[to].seen(streamKey{s.from, s.stream}); got != sent[i][d] {
				e.t.Errorf("stream %d from %d to %d: %d packets arrived, %d sent", s.stream, s.from, to, got, sent[i][d])
			}
		}
	}
	if got := e.arrived.Load(); got != total {
		e.t.Errorf("%d packets arrived, %d sent", got, total)
	}
	e.checkPool("after the traffic")
}

// testFIFO: several goroutines of one endpoint send to one peer at once,
// each with its own sequence; each sequence arrives in order.
func testFIFO(t *testing.T, f Factory) {
	e := newEnv(t, f, 2)
	sinks := e.bindSinks(2, true)
	var senders []sender
	for g := range 4 {
		w := g
		if g%2 == 1 {
			w = packet.NoWorker
		}
		senders = append(senders, sender{w: w, from: 1, stream: uint32(g), to: []rdma.Addr{0}, count: scale(2000)})
	}
	e.runSenders(sinks, senders)
}

// testHandedOrder: two goroutines of one endpoint take turns sending one
// sequence to one peer, each Send returning before the other starts; the
// sequence arrives in order (sends that do not overlap are ordered, even
// across goroutines).
func testHandedOrder(t *testing.T, f Factory) {
	e := newEnv(t, f, 2)
	sinks := e.bindSinks(2, true)
	n := scale(2000)
	turn := [2]chan int{make(chan int, 1), make(chan int, 1)}
	var wg sync.WaitGroup
	for g := range 2 {
		wg.Go(func() {
			for seq := range turn[g] {
				if seq >= n {
					close(turn[1-g])
					return
				}
				if err := e.send(packet.NoWorker, 0, pid{from: 1, stream: 0, seq: uint32(seq)}); err != nil {
					e.failf("Send %d: %v", seq, err)
				}
				turn[1-g] <- seq + 1
			}
		})
	}
	turn[0] <- 0
	wg.Wait()
	e.waitArrived(int64(n))
	if got := sinks[0].seen(streamKey{1, 0}); got != uint32(n) {
		t.Errorf("%d packets of the handed sequence accepted in order, want %d", got, n)
	}
	e.checkPool("after the traffic")
}

// testManyToOne: every endpoint, with two goroutines each, sends to
// endpoint 0 (itself included) and to one other endpoint at once; nothing is lost, doubled or
// reordered, and every packet goes back to the pool.
func testManyToOne(t *testing.T, f Factory) {
	const n = 4
	e := newEnv(t, f, n)
	sinks := e.bindSinks(n, true)
	var senders []sender
	for from := range n {
		for g := range 2 {
			w := from*2 + g
			if g == 1 && from%2 == 1 {
				w = packet.NoWorker
			}
			other := rdma.Addr(1 + (from+g)%(n-1)) // never 0: one stream per destination
			senders = append(senders, sender{
				w: w, from: rdma.Addr(from), stream: uint32(g),
				to: []rdma.Addr{0, other}, count: scale(1500),
			})
		}
	}
	e.runSenders(sinks, senders)
	if got, least := sinks[0].received(), 2*n*scale(1500)/3; got < least {
		// The destinations are drawn from a hash; a skew this large
		// means the traffic was not many-to-one at all.
		t.Errorf("endpoint 0 received only %d packets", got)
	}
}

// testSendFromReceive: Receivers send from inside Receive, re-using the
// packet they were given: chains of packets bounce between two endpoints,
// each hop checked.
func testSendFromReceive(t *testing.T, f Factory) {
	const chains = 4
	hops := scale(200)
	e := newEnv(t, f, 2)
	var mu sync.Mutex
	finished := 0
	var ends [2]rdma.Receiver
	for a := range 2 {
		me := rdma.Addr(a)
		ends[a] = receiverFunc(func(w int, pk *packet.Packet) {
			id, err := identify(pk, me)
			if err != nil {
				e.failf("hop: %v", err)
				e.putBack(w, pk)
				return
			}
			if int(id.seq) == hops {
				e.putBack(w, pk)
				mu.Lock()
				finished++
				mu.Unlock()
				return
			}
			next := pid{from: me, stream: id.stream, seq: id.seq + 1}
			stamp(pk, id.from, next)
			e.reply(w, e.hosts[me], id.from, pk)
		})
	}
	e.bind(0, ends[0])
	e.bind(1, ends[1])
	for c := range chains {
		e.mustSend(1, pid{from: 0, stream: uint32(c)})
	}
	e.waitFor("the chains to finish", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return finished == chains
	})
	e.checkPool("after the chains")
}
