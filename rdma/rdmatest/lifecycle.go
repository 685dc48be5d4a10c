package rdmatest

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fibermpi/fibermpi/packet"
	"github.com/fibermpi/fibermpi/rdma"
)

// refuse sends a packet stamped for to from endpoint from, expects target,
// and checks that the caller got the packet back intact.
func (e *env) refuse(what string, from, to rdma.Addr, target error) {
	e.t.Helper()
	pk := e.mustGet()
	id := pid{from: from, stream: 7, seq: 1}
	stamp(pk, to, id)
	err := e.hosts[from].Send(packet.NoWorker, to, pk)
	if err == nil {
		e.t.Errorf("%s: Send to %d succeeded; want %v", what, to, target)
		return // the transport owns pk now
	}
	if !errors.Is(err, target) {
		e.t.Errorf("%s: Send to %d: got error %v; want %v", what, to, err, target)
	}
	if _, err := identify(pk, to); err != nil {
		e.t.Errorf("%s: the refused packet changed: %v", what, err)
	}
	e.pool.Put(packet.NoWorker, pk)
}

// testNoPeer: Send, Put and Get to addresses nobody bound fail with
// rdma.ErrNoPeer; the refused packet stays the caller's, intact and usable.
func testNoPeer(t *testing.T, f Factory) {
	const n = 3
	e := newEnv(t, f, n)
	sinks := []*sink{newSink(e, 0, true), newSink(e, 1, true)}
	e.bind(0, sinks[0])
	e.bind(1, sinks[1])
	for _, to := range []rdma.Addr{2, n, 1 << 16, math.MaxUint32} {
		e.refuse(fmt.Sprintf("address %d, never bound", to), 0, to, rdma.ErrNoPeer)
	}

	// The caller may send a refused packet elsewhere.
	pk := e.mustGet()
	stamp(pk, 2, pid{from: 0, stream: 7, seq: 1})
	if err := e.hosts[0].Send(packet.NoWorker, 2, pk); !errors.Is(err, rdma.ErrNoPeer) {
		t.Fatalf("Send to an unbound address: got %v; want rdma.ErrNoPeer", err)
	}
	stamp(pk, 1, pid{from: 0, stream: 7, seq: 0})
	if err := e.hosts[0].Send(packet.NoWorker, 1, pk); err != nil {
		t.Fatalf("Send of a refused packet to a bound address: %v", err)
	}
	e.waitArrived(1)

	g := newGuarded(64, 1)
	e.register(2, g)
	e.wantErr("Put to an owner never bound", e.hosts[0].Put(2, g.region, 0, []byte{1}), rdma.ErrNoPeer)
	e.wantErr("Get from an owner never bound", e.hosts[0].Get(2, g.region, 0, make([]byte, 1)), rdma.ErrNoPeer)
	e.notify(sinks, 0, 1)
	if err := g.check(); err != nil {
		t.Errorf("refused Put wrote: %v", err)
	}
	if err := e.hosts[2].Deregister(g.region); err != nil {
		t.Errorf("Deregister: %v", err)
	}
}

// testUnbind: after Unbind, Send, Put and Get to the address fail with
// rdma.ErrNoPeer, a second Unbind too, and the address can be bound again.
func testUnbind(t *testing.T, f Factory) {
	e := newEnv(t, f, 2)
	first := e.bindSinks(2, true)
	e.mustSend(1, pid{from: 0})
	e.waitArrived(1)
	g := newGuarded(64, 2)
	e.register(1, g)

	if err := e.hosts[1].Unbind(1); err != nil {
		t.Fatalf("Unbind: %v", err)
	}
	e.refuse("after Unbind", 0, 1, rdma.ErrNoPeer)
	e.refuse("from the unbound endpoint to itself", 1, 1, rdma.ErrNoPeer)
	e.wantErr("Put to an unbound owner", e.hosts[0].Put(1, g.region, 0, []byte{1}), rdma.ErrNoPeer)
	e.wantErr("Get from an unbound owner", e.hosts[0].Get(1, g.region, 0, make([]byte, 1)), rdma.ErrNoPeer)
	e.wantErr("second Unbind", e.hosts[1].Unbind(1), rdma.ErrNoPeer)

	again := newSink(e, 1, true)
	e.bind(1, again)
	e.mustSend(1, pid{from: 0, stream: 1})
	e.waitArrived(2)
	if again.received() != 1 || first[1].received() != 1 {
		t.Errorf("after binding again: the new Receiver got %d packets (want 1), the old one %d (want 1)",
			again.received(), first[1].received())
	}
	if err := e.hosts[0].Put(1, g.region, 0, []byte{1}); err != nil {
		t.Errorf("Put to the owner bound again: %v", err)
	}
	g.write(0, []byte{1})
	e.notify([]*sink{first[0], again}, 0, 1)
	if err := g.check(); err != nil {
		t.Error(err)
	}
	if err := e.hosts[1].Deregister(g.region); err != nil {
		t.Errorf("Deregister: %v", err)
	}
}

// testUnbindKeepsQueued: packets a transport accepted before an Unbind
// are delivered, never dropped. The Unbind comes right after the sends,
// before any Progress, so a transport that delivers from Progress still
// holds them; the address is then bound again and every packet must arrive.
func testUnbindKeepsQueued(t *testing.T, f Factory) {
	const per = 50
	e := newEnv(t, f, 2)
	s := e.bindSinks(2, true)
	for seq := range per {
		e.mustSend(1, pid{from: 0, seq: uint32(seq)})
	}
	if err := e.hosts[1].Unbind(1); err != nil {
		t.Fatalf("Unbind: %v", err)
	}
	e.bind(1, s[1])
	e.waitArrived(per)
	if got := s[1].received(); got != per {
		t.Errorf("%d of %d packets sent before the Unbind arrived", got, per)
	}
	e.checkPool("after the traffic")
}

// testBind: binding an address twice fails with rdma.ErrBound and leaves
// the first Receiver in place; binding a nil Receiver fails and binds
// nothing.
func testBind(t *testing.T, f Factory) {
	e := newEnv(t, f, 3)
	first := newSink(e, 0, true)
	e.bind(0, first)
	second := newSink(e, 0, true)
	e.wantErr("second Bind", e.hosts[0].Bind(0, second, e.pool), rdma.ErrBound)
	e.wantErr("second Bind of the same Receiver", e.hosts[0].Bind(0, first, e.pool), rdma.ErrBound)
	e.mustSend(0, pid{from: 1})
	e.mustSend(0, pid{from: 2})
	e.waitArrived(2)
	if first.received() != 2 || second.received() != 0 {
		t.Errorf("the first Receiver got %d packets (want 2), the refused one %d (want 0)", first.received(), second.received())
	}

	if err := e.hosts[2].Bind(2, nil, e.pool); err == nil {
		t.Errorf("Bind of a nil Receiver succeeded")
	}
	e.refuse("after a refused Bind of nil", 0, 2, rdma.ErrNoPeer)
	e.bind(2, newSink(e, 2, true))
	e.mustSend(2, pid{from: 0})
	e.waitArrived(3)

	// Addresses far beyond the job may be refused, but must not bring the
	// transport down (a table sized by the largest address would).
	for _, far := range []rdma.Addr{1 << 20, math.MaxUint32} {
		s := newSink(e, far, true)
		if err := e.hosts[0].Bind(far, s, e.pool); err != nil {
			t.Logf("Bind(%d) refused: %v", far, err)
			continue
		}
		e.mustSend(far, pid{from: 1, stream: 3})
		e.waitFor(fmt.Sprintf("a packet to %d", far), func() bool { return s.received() == 1 })
		if err := e.hosts[0].Unbind(far); err != nil {
			t.Errorf("Unbind(%d): %v", far, err)
		}
	}
}

// testBindWhileSending: one goroutine binds and unbinds an address over
// and over while others send to it; a refused packet is sent again, so
// every stream must arrive complete and in order at the one Receiver.
func testBindWhileSending(t *testing.T, f Factory) {
	const senders = 2
	per := scale(1000)
	e := newEnv(t, f, 2)
	s := newSink(e, 1, true)
	e.bind(1, s)
	var stop atomic.Bool
	var refused atomic.Int64
	var wg sync.WaitGroup
	for g := range senders {
		wg.Go(func() {
			deadline := time.Now().Add(e.timeout)
			for seq := 0; seq < per; {
				err := e.send(g, 1, pid{from: 0, stream: uint32(g), seq: uint32(seq)})
				switch {
				case err == nil:
					seq++
				case errors.Is(err, rdma.ErrNoPeer):
					refused.Add(1)
					if time.Now().After(deadline) {
						e.failf("sender %d: still refused after %v", g, e.timeout)
						return
					}
					runtime.Gosched()
				default:
					e.failf("sender %d: Send: %v", g, err)
					return
				}
			}
		})
	}
	toggled := make(chan int)
	go func() {
		n := 0
		for ; !stop.Load(); n++ {
			if err := e.hosts[1].Unbind(1); err != nil {
				e.failf("Unbind: %v", err)
				break
			}
			runtime.Gosched()
			if err := e.hosts[1].Bind(1, s, e.pool); err != nil {
				e.failf("Bind: %v", err)
				break
			}
			runtime.Gosched()
		}
		toggled <- n
	}()
	wg.Wait()
	stop.Store(true)
	n := <-toggled
	e.waitArrived(int64(senders * per))
	for g := range senders {
		if got := s.seen(streamKey{0, uint32(g)}); got != uint32(per) {
			t.Errorf("stream %d: %d packets arrived, want %d", g, got, per)
		}
	}
	t.Logf("%d Bind/Unbind pairs, %d Sends refused", n, refused.Load())
	e.checkPool("after the traffic")
}

// closeAll closes every transport of the fabric, which must succeed.
func (e *env) closeAll() {
	e.t.Helper()
	e.closed = true
	for _, h := range e.uniq {
		if err := h.Close(); err != nil {
			e.t.Errorf("%s: Close: %v", h.Name(), err)
		}
	}
}

// testClose: after Close every call fails with rdma.ErrClosed, Close
// included, Progress reports nothing, and a refused Send leaves the packet
// with the caller.
func testClose(t *testing.T, f Factory) {
	e := newEnv(t, f, 2)
	sinks := e.bindSinks(2, true)
	g := newGuarded(64, 3)
	e.register(0, g)
	e.notify(sinks, 1, 0)
	e.closeAll()
	for a, h := range e.hosts {
		me := rdma.Addr(a)
		what := func(call string) string { return fmt.Sprintf("%s on the host of %d after Close", call, me) }
		e.wantErr(what("Close"), h.Close(), rdma.ErrClosed)
		e.wantErr(what("Bind"), h.Bind(me, newSink(e, me, true), e.pool), rdma.ErrClosed)
		e.wantErr(what("Bind of a fresh address"), h.Bind(2, newSink(e, 2, true), e.pool), rdma.ErrClosed)
		e.wantErr(what("Unbind"), h.Unbind(me), rdma.ErrClosed)
		e.refuse(what("Send"), me, 1-me, rdma.ErrClosed)
		_, err := h.Register(make([]byte, 8))
		e.wantErr(what("Register"), err, rdma.ErrClosed)
		e.wantErr(what("Deregister"), h.Deregister(g.region), rdma.ErrClosed)
		e.wantErr(what("Put"), h.Put(0, g.region, 0, []byte{1}), rdma.ErrClosed)
		e.wantErr(what("Get"), h.Get(0, g.region, 0, make([]byte, 1)), rdma.ErrClosed)
		if n := h.Progress(packet.NoWorker); n != 0 {
			t.Errorf("%s returned %d", what("Progress"), n)
		}
		if h.Name() == "" {
			t.Errorf("%s is empty", what("Name"))
		}
	}
	if err := g.check(); err != nil {
		t.Errorf("refused Put wrote: %v", err)
	}
	if got := sinks[0].received() + sinks[1].received(); got != 1 {
		t.Errorf("%d packets arrived, want 1", got)
	}
	e.checkPool("after Close")
}

// testCloseWhileSending: goroutines send until the transports close under
// them; every Send either succeeds or is refused with rdma.ErrClosed (or,
// between processes, rdma.ErrNoPeer), nothing arrives twice or out of
// order, and every packet goes back to the pool.
func testCloseWhileSending(t *testing.T, f Factory) {
	const n, senders = 3, 3
	e := newEnv(t, f, n)
	sinks := e.bindSinks(n, false)
	accepted := make([]uint32, senders)
	var sent atomic.Int64   // Add by the senders, Load here
	var closing atomic.Bool // Store here after Close, Load by the senders
	var wg sync.WaitGroup
	for g := range senders {
		from := rdma.Addr(g % n)
		wg.Go(func() {
			deadline := time.Now().Add(e.timeout)
			for seq := uint32(0); ; seq++ {
				accepted[g] = seq
				if time.Now().After(deadline) {
					e.failf("sender %d: Send still succeeds %v after the test began", g, e.timeout)
					return
				}
				// Unlike elsewhere, a sender does not drive progress
				// when the pool is dry: the backlog is meant to stand
				// until Close, which must return it to the pool.
				pk := e.pool.Get(g)
				for ; pk == nil; pk = e.pool.Get(g) {
					if closing.Load() || time.Now().After(deadline) {
						return
					}
					runtime.Gosched()
				}
				stamp(pk, 0, pid{from: from, stream: uint32(g), seq: seq})
				if err := e.hosts[from].Send(g, 0, pk); err != nil {
					e.pool.Put(g, pk)
					if !errors.Is(err, rdma.ErrClosed) && !errors.Is(err, rdma.ErrNoPeer) {
						e.failf("sender %d: Send while closing: %v", g, err)
					}
					return
				}
				sent.Add(1)
			}
		})
	}
	e.waitArrived(int64(scale(300)))
	// Let packets pile up without progress from here, so that a
	// transport that delivers later has some in flight when it closes
	// (they must come back to the pool). One that delivers in Send never
	// has a backlog; for it, let the senders run a little.
	from := sent.Load()
	for deadline := time.Now().Add(e.timeout); time.Now().Before(deadline); runtime.Gosched() {
		n := sent.Load()
		if n-e.arrived.Load() >= 64 || n >= from+5000 {
			break
		}
	}
	e.closeAll()
	closing.Store(true)
	wg.Wait()
	e.report()
	total := uint32(0)
	for g := range senders {
		got := sinks[0].seen(streamKey{rdma.Addr(g % n), uint32(g)})
		if got > accepted[g] {
			t.Errorf("stream %d: seq %d arrived, but only %d Sends succeeded", g, got-1, accepted[g])
		}
		total += accepted[g]
	}
	if got := e.arrived.Load(); got > int64(total) {
		t.Errorf("%d packets arrived, %d Sends succeeded", got, total)
	}
	t.Logf("%d Sends succeeded, %d packets arrived", total, e.arrived.Load())
}
