package rdmatest

import (
	"fmt"
	"sync"
	"testing"

	"github.com/fibermpi/fibermpi/packet"
	"github.com/fibermpi/fibermpi/rdma"
)

// Streams of testFlood.
const (
	floodRequest = 200
	floodAnswer  = 201
)

// testFlood: two endpoints each send a window of 10^4 packets to the other
// before waiting for anything, while their Receivers answer every packet
// with a Send of their own (re-using it). Both directions are full at
// once, so a transport with bounded queues answers rdma.ErrAgain on both
// sides; nobody may wait for the other inside Receive, or both would wait
// forever. Every request and every answer must arrive once, intact and in
// order, window after window.
func testFlood(t *testing.T, f Factory) {
	const rounds = 2
	window := scale(10000)
	e := newEnv(t, f, 2)
	sinks := [2]*sink{newSink(e, 0, true), newSink(e, 1, true)}
	for a := range 2 {
		me, peer := rdma.Addr(a), rdma.Addr(1-a)
		h := e.hosts[me]
		e.bind(me, receiverFunc(func(w int, pk *packet.Packet) {
			id, err := identify(pk, me)
			if err != nil || id.stream != floodRequest {
				e.putBack(w, pk)
				sinks[me].accept(id, err)
				return
			}
			sinks[me].accept(id, nil)
			stamp(pk, peer, pid{from: me, stream: floodAnswer, seq: id.seq})
			e.reply(w, h, peer, pk)
		}))
	}
	for round := range rounds {
		var wg sync.WaitGroup
		for a := range 2 {
			me, peer := rdma.Addr(a), rdma.Addr(1-a)
			wg.Go(func() {
				for i := range window {
					seq := uint32(round*window + i)
					if err := e.send(a, peer, pid{from: me, stream: floodRequest, seq: seq}); err != nil {
						e.failf("endpoint %d: request %d: %v", me, seq, err)
						return
					}
				}
			})
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		e.waitFor(fmt.Sprintf("the senders of window %d", round), func() bool {
			select {
			case <-done:
				return true
			default:
				return false
			}
		})
		want := uint32((round + 1) * window)
		e.waitFor(fmt.Sprintf("the answers of window %d", round), func() bool {
			return sinks[0].seen(streamKey{1, floodAnswer}) >= want && sinks[1].seen(streamKey{0, floodAnswer}) >= want
		})
	}
	want := uint32(rounds * window)
	for a := range 2 {
		peer := rdma.Addr(1 - a)
		if got := sinks[a].seen(streamKey{peer, floodRequest}); got != want {
			t.Errorf("endpoint %d: %d requests arrived in order, want %d", a, got, want)
		}
		if got := sinks[a].seen(streamKey{peer, floodAnswer}); got != want {
			t.Errorf("endpoint %d: %d answers arrived in order, want %d", a, got, want)
		}
		if got := sinks[a].received(); got != 2*int(want) {
			t.Errorf("endpoint %d: %d packets arrived, want %d", a, got, 2*want)
		}
	}
	e.checkPool("after the flood")
}
