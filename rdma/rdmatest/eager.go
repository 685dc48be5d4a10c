package rdmatest

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/fibermpi/fibermpi/packet"
	"github.com/fibermpi/fibermpi/rdma"
)

// testEager: a transport that sends eager messages without a packet
// (rdma.EagerSender) delivers them, mixed with eager packets sent with Send
// by the same sender, exactly once each and in the order of the calls, with
// their header and bytes, to a Receiver that takes some of them through
// ReceiveEager (rdma.EagerReceiver) and refuses the others, which must then
// come through Receive. A message for which SendEager reports false goes as
// a packet; SendEager reports false for what Send would refuse.
// Transports that are not EagerSenders skip it.
func testEager(t *testing.T, f Factory) {
	var r *eagerSink
	e, es := eagerEnv(t, f, func(e *env) rdma.Receiver { r = &eagerSink{e: e}; return r })

	n := scale(2000)
	for seq := range n {
		e.sendEagerMixed(es, seq)
	}
	e.waitArrived(int64(n))
	r.check(n)
	t.Logf("%d messages: %d taken by ReceiveEager, %d by Receive", n, r.direct, n-r.direct)
	if !r.anyOffered() {
		t.Logf("%s never called ReceiveEager", e.hosts[0].Name())
	}

	h, data := eagerMessage(1)
	if es.SendEager(packet.NoWorker, 5, h, data) {
		t.Error("SendEager to an address nobody bound reported true")
	}
	if es.SendEager(packet.NoWorker, 0, h, make([]byte, e.pool.PayloadSize()+1)) {
		t.Error("SendEager of a message longer than a packet reported true")
	}
	e.checkPool("after the traffic")
}

// eagerEnv is the setting of the eager tests: two addresses, the Receiver
// that receiver makes bound at 0 and a sink at 1, and host 1 as an
// rdma.EagerSender. Transports that are not EagerSenders skip.
func eagerEnv(t *testing.T, f Factory, receiver func(*env) rdma.Receiver) (*env, rdma.EagerSender) {
	t.Helper()
	e := newEnv(t, f, 2)
	es, ok := e.hosts[1].(rdma.EagerSender)
	if !ok {
		t.Skipf("%s is not an rdma.EagerSender", e.hosts[1].Name())
	}
	e.bind(0, receiver(e))
	e.bind(1, newSink(e, 1, true))
	return e, es
}

// sendEagerMixed sends message seq of the eager tests from address 1 to
// address 0: every third as a packet from the start, the others by
// SendEager first and, where it reports false (a full queue, a backend of
// the router without the path), as a packet too.
func (e *env) sendEagerMixed(es rdma.EagerSender, seq int) {
	e.t.Helper()
	h, data := eagerMessage(seq)
	if seq%3 != 0 && es.SendEager(packet.NoWorker, 0, h, data) {
		return
	}
	e.sendEagerPacket(seq, h, data)
}

// sendEagerPacket sends message seq, h and data, from address 1 to
// address 0 as an eager packet, driving progress while the transport says
// ErrAgain.
func (e *env) sendEagerPacket(seq int, h rdma.EagerHeader, data []byte) {
	e.t.Helper()
	pk := e.mustGet()
	pk.Kind, pk.From, pk.Context, pk.Source, pk.Tag = packet.KindEager, uint32(h.From), h.Context, h.Source, h.Tag
	if err := pk.SetData(data); err != nil {
		e.t.Fatal(err)
	}
	deadline := time.Now().Add(e.timeout)
	for {
		err := e.hosts[1].Send(packet.NoWorker, 0, pk)
		if err == nil {
			return
		}
		if !errors.Is(err, rdma.ErrAgain) || time.Now().After(deadline) {
			e.t.Fatalf("Send of message %d: %v", seq, err)
		}
		e.progress(packet.NoWorker)
		runtime.Gosched()
	}
}

// eagerMessage returns message seq of testEager: its header and bytes, a
// function of seq (lengths 0 to payloadSize).
func eagerMessage(seq int) (rdma.EagerHeader, []byte) {
	h := rdma.EagerHeader{From: 1, Context: uint32(seq), Source: int32(mix(uint64(seq))), Tag: -int32(seq)}
	data := make([]byte, int(mix(uint64(seq)+1)%(payloadSize+1)))
	for i := range data {
		data[i] = byte(mix(uint64(seq)<<16 | uint64(i)))
	}
	return h, data
}

// eagerSink is testEager's Receiver: it takes the even messages through
// ReceiveEager and refuses the odd ones, and records the order of
// everything it got.
type eagerSink struct {
	e      *env
	mu     sync.Mutex
	got    []uint32 // sequence numbers (the Context) in arrival order
	direct int
	offers map[uint32]int // ReceiveEager calls per message
}

func (s *eagerSink) ReceiveEager(w int, h rdma.EagerHeader, data []byte) bool {
	seq := h.Context
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.offers == nil {
		s.offers = make(map[uint32]int)
	}
	s.offers[seq]++
	if seq%2 == 1 {
		return false
	}
	s.take(seq, h, data, "ReceiveEager")
	s.direct++
	return true
}

func (s *eagerSink) Receive(w int, pk *packet.Packet) {
	h := rdma.EagerHeader{From: rdma.Addr(pk.From), Context: pk.Context, Source: pk.Source, Tag: pk.Tag}
	s.mu.Lock()
	if pk.Kind != packet.KindEager {
		s.e.failf("Receive got a packet of kind %v, want %v", pk.Kind, packet.KindEager)
	} else {
		if h.Context%2 == 0 && s.offers[h.Context] > 0 {
			s.e.failf("message %d: ReceiveEager took it and Receive got it too", h.Context)
		}
		s.take(h.Context, h, pk.Data(), "Receive")
	}
	s.mu.Unlock()
	s.e.putBack(w, pk)
}

// take checks message seq against what was sent and records it. The
// caller holds mu.
func (s *eagerSink) take(seq uint32, h rdma.EagerHeader, data []byte, via string) {
	wh, wdata := eagerMessage(int(seq))
	if h != wh || string(data) != string(wdata) {
		s.e.failf("message %d via %s: header %+v and %d bytes, want %+v and %d bytes (or the bytes differ)", seq, via, h, len(data), wh, len(wdata))
	}
	s.got = append(s.got, seq)
	s.e.arrived.Add(1)
}

// anyOffered reports whether ReceiveEager was ever called.
func (s *eagerSink) anyOffered() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.offers) > 0
}

// check fails the subtest unless messages 0 to n-1 arrived once each, in
// order.
func (s *eagerSink) check(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.got) != n {
		s.e.t.Errorf("%d messages arrived, want %d", len(s.got), n)
	}
	for i, seq := range s.got {
		if seq != uint32(i) {
			s.e.t.Errorf("arrival %d is message %d: %s", i, seq, fmt.Sprint(s.got[max(0, i-3):min(len(s.got), i+3)]))
			return
		}
	}
}
