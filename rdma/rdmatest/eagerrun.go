package rdmatest

import (
	"encoding/binary"
	"sync"
	"testing"

	"github.com/fibermpi/fibermpi/packet"
	"github.com/fibermpi/fibermpi/rdma"
)

// testEagerRuns: eager messages sent in runs with one envelope (as a
// window of sends to one rank and tag makes them), some without a packet
// (rdma.EagerSender) and some as packets, reach a Receiver that also takes
// runs (rdma.EagerRunReceiver) exactly once each and in order, whether it
// takes all of a run it is offered, the first few or none: what a run
// receiver leaves must come through ReceiveEager or Receive. Transports
// that are not EagerSenders skip it; those that never offer runs pass it
// as testEager.
func testEagerRuns(t *testing.T, f Factory) {
	n := scale(3000)
	groups := runGroups(n)
	var r *runSink
	e, es := eagerEnv(t, f, func(e *env) rdma.Receiver { r = &runSink{e: e, groups: groups}; return r })
	for seq := range n {
		h, data := runMessage(groups, seq)
		// Every seventh message goes as a packet: its record sits in the
		// middle of a run of records of the same envelope.
		if seq%7 != 3 && es.SendEager(packet.NoWorker, 0, h, data) {
			continue
		}
		e.sendEagerPacket(seq, h, data)
	}
	e.waitArrived(int64(n))
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.next != uint32(n) {
		t.Errorf("%d messages arrived, want %d", r.next, n)
	}
	t.Logf("%d messages: %d runs offered (longest %d), %d messages taken from runs, %d by ReceiveEager, %d by Receive",
		n, r.runs, r.longest, r.fromRuns, r.direct, int(r.next)-r.fromRuns-r.direct)
	e.checkPool("after the traffic")
}

// runGroups returns the envelope number of each of n messages: runs of
// 1 to 40 messages share one.
func runGroups(n int) []uint32 {
	g := make([]uint32, 0, n)
	for k := uint32(0); len(g) < n; k++ {
		for range min(1+int(mix(uint64(k))%40), n-len(g)) {
			g = append(g, k)
		}
	}
	return g
}

// runMessage returns message seq of testEagerRuns: its envelope's, and
// bytes that start with seq (4 bytes to payloadSize).
func runMessage(groups []uint32, seq int) (rdma.EagerHeader, []byte) {
	k := groups[seq]
	h := rdma.EagerHeader{From: 1, Context: k, Source: int32(mix(uint64(k)) >> 40), Tag: int32(k % 1000)}
	data := make([]byte, 4+int(mix(uint64(seq)+7)%(payloadSize-3)))
	binary.LittleEndian.PutUint32(data, uint32(seq))
	for i := 4; i < len(data); i++ {
		data[i] = byte(mix(uint64(seq)<<16 | uint64(i)))
	}
	return h, data
}

// runSink is testEagerRuns's Receiver. Offered a run, it takes as many
// messages from its start as a function of the first one's number says
// (none to all); offered one message by ReceiveEager, it takes the even
// ones; it takes every packet. Each message taken must be the next one.
type runSink struct {
	e      *env
	mu     sync.Mutex
	next   uint32   // the number of the message expected next
	groups []uint32 // runGroups of the messages sent

	runs, longest, fromRuns, direct int
}

func (s *runSink) ReceiveEagerRun(w int, h rdma.EagerHeader, data [][]byte) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(data) == 0 {
		s.e.failf("ReceiveEagerRun offered no message")
		return 0
	}
	s.runs++
	s.longest = max(s.longest, len(data))
	take := int(mix(uint64(s.seq(data[0]))) % uint64(len(data)+1))
	for _, d := range data[:take] {
		s.take(h, d, "ReceiveEagerRun")
	}
	s.fromRuns += take
	return take
}

func (s *runSink) ReceiveEager(w int, h rdma.EagerHeader, data []byte) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seq(data)%2 == 1 {
		return false
	}
	s.take(h, data, "ReceiveEager")
	s.direct++
	return true
}

func (s *runSink) Receive(w int, pk *packet.Packet) {
	s.mu.Lock()
	if pk.Kind != packet.KindEager {
		s.e.failf("Receive got a packet of kind %v, want %v", pk.Kind, packet.KindEager)
	} else {
		s.take(rdma.EagerHeader{From: rdma.Addr(pk.From), Context: pk.Context, Source: pk.Source, Tag: pk.Tag}, pk.Data(), "Receive")
	}
	s.mu.Unlock()
	s.e.putBack(w, pk)
}

// seq returns the number a message's bytes start with (^0 if too short).
func (s *runSink) seq(data []byte) uint32 {
	if len(data) < 4 {
		return ^uint32(0)
	}
	return binary.LittleEndian.Uint32(data)
}

// take checks that a message is the next one, with its envelope and
// bytes, and counts it. The caller holds mu.
func (s *runSink) take(h rdma.EagerHeader, data []byte, via string) {
	seq := s.seq(data)
	if seq != s.next {
		s.e.failf("%s got message %d, want %d", via, seq, s.next)
		return
	}
	if int(seq) >= len(s.groups) {
		s.e.failf("%s got message %d of %d", via, seq, len(s.groups))
		return
	}
	wh, wdata := runMessage(s.groups, int(seq))
	if h != wh || string(data) != string(wdata) {
		s.e.failf("message %d via %s: header %+v and %d bytes, want %+v and %d bytes (or the bytes differ)", seq, via, h, len(data), wh, len(wdata))
	}
	s.next++
	s.e.arrived.Add(1)
}
