package rdmatest

import (
	"testing"
	"time"

	"github.com/fibermpi/fibermpi/packet"
	"github.com/fibermpi/fibermpi/rdma"
)

// testTake: a transport that lets a waiting receiver take eager messages
// itself (rdma.EagerTaker) hands every message once, in the order sent,
// whether a TakeEager call takes it or Progress delivers it. testEager's
// traffic (SendEager and eager packets, mixed) goes from address 1 to
// address 0 a few messages at a time, while the receiving host is asked,
// in turn, to offer its messages for 0 to a taker that takes two in three
// and refuses the others, and its messages for address 1 (bound at the
// other host) to a taker that must never be offered one; after TakeOther
// the test lets Progress deliver, as the contract asks. The refused
// messages and those Progress gets first come through the Receiver, which
// takes some through ReceiveEager. Transports whose receiving host is no
// EagerTaker skip it.
func testTake(t *testing.T, f Factory) {
	var r *eagerSink
	e, es := eagerEnv(t, f, func(e *env) rdma.Receiver { r = &eagerSink{e: e}; return r })
	tk, ok := e.hosts[0].(rdma.EagerTaker)
	if !ok {
		t.Skipf("%s is not an rdma.EagerTaker", e.hosts[0].Name())
	}
	yes := &seqTaker{sink: r}
	no := &seqTaker{sink: r, never: true}
	n := scale(2000)
	sent, i := 0, 0
	var outcomes [3]int // TakeNone, Took, TakeOther
	deadline := time.Now().Add(e.timeout)
	// pump sends messages up to total, window of them in flight, and asks
	// for takes until all have arrived.
	pump := func(total, window int) {
		for ; int(e.arrived.Load()) < total; i++ {
			for sent < total && sent-int(e.arrived.Load()) < window {
				e.sendEagerMixed(es, sent)
				sent++
			}
			to, k := rdma.Addr(0), yes
			if i%5 == 4 {
				to, k = 1, no
			}
			k.now = false
			got := tk.TakeEager(packet.NoWorker, 1, to, k)
			if int(got) < len(outcomes) {
				outcomes[got]++
			}
			switch got {
			case rdma.Took:
				if k == no {
					t.Fatal("TakeEager for address 1 reported Took")
				}
			case rdma.TakeOther:
				e.progress(packet.NoWorker)
			case rdma.TakeNone:
			default:
				t.Fatalf("TakeEager reported %d, no Take", got)
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d of %d messages arrived in %v", e.arrived.Load(), total, e.timeout)
			}
		}
	}
	pump(n, 8)
	// A progress engine of the host's own (rdma/shm's tests give each
	// transport one where Puts copy through the rings) may deliver every
	// message before a TakeEager looks. Then one message at a time, each
	// looked for right after it is sent, until one is taken.
	for extra := 0; yes.took == 0 && extra < 100; extra++ {
		n++
		pump(n, 1)
	}
	r.check(n)
	t.Logf("%d messages: %d taken by TakeEager, %d by ReceiveEager, the rest by Receive", n, yes.took, r.direct-yes.took)
	if yes.took == 0 {
		t.Errorf("%s's TakeEager took none of %d messages (TakeNone %d times, Took %d, TakeOther %d)", e.hosts[0].Name(), n, outcomes[0], outcomes[1], outcomes[2])
	}
	e.checkPool("after the traffic")
}

// seqTaker is testTake's rdma.EagerTake: it takes the messages whose
// sequence number (the Context) is not 1 modulo 3 into sink, or, never
// set, fails when offered any. It fails when one TakeEager call offers it
// a message after it took one (now: it took one in this call).
type seqTaker struct {
	sink  *eagerSink
	never bool
	now   bool
	took  int
}

func (k *seqTaker) TakeEager(h rdma.EagerHeader, data []byte) bool {
	if k.never {
		k.sink.e.failf("message %d for address 0 offered to a taker for address 1", h.Context)
		return false
	}
	if k.now {
		k.sink.e.failf("message %d offered after a message taken in the same TakeEager call", h.Context)
		return false
	}
	if h.Context%3 == 1 {
		return false
	}
	s := k.sink
	s.mu.Lock()
	defer s.mu.Unlock()
	s.take(h.Context, h, data, "TakeEager")
	s.direct++
	k.took++
	k.now = true
	return true
}
