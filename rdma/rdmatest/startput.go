package rdmatest

import (
	"bytes"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/fibermpi/fibermpi/packet"
	"github.com/fibermpi/fibermpi/rdma"
)

// starters returns the hosts as rdma.PutStarters, or skips the subtest if
// one is not.
func (e *env) starters() []rdma.PutStarter {
	e.t.Helper()
	ps := make([]rdma.PutStarter, len(e.hosts))
	for a, h := range e.hosts {
		p, ok := h.(rdma.PutStarter)
		if !ok {
			e.t.Skipf("%s does not implement rdma.PutStarter", h.Name())
		}
		ps[a] = p
	}
	return ps
}

// putEnd is a PutDone that counts its calls and keeps the last error;
// then (if set) it runs after.
type putEnd struct {
	e     *env
	calls atomic.Int32
	mu    sync.Mutex
	err   error
	after func(w int)
}

func (p *putEnd) PutDone(w int, err error) {
	if w != packet.NoWorker && (w < 0 || w >= p.e.pool.Workers()) {
		p.e.failf("PutDone got worker index %d; want packet.NoWorker or one in [0, %d)", w, p.e.pool.Workers())
	}
	p.mu.Lock()
	p.err = err
	p.mu.Unlock()
	if p.calls.Add(1) == 1 && p.after != nil {
		p.after(w)
	}
}

// result returns the error of a Put that StartPut started: err if it did
// not stay pending, else what PutDone got (ok false while not called).
func (p *putEnd) result(pending bool, err error) (error, bool) {
	if !pending {
		return err, true
	}
	if p.calls.Load() == 0 {
		return nil, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err, true
}

// testStartPut runs the rendezvous of testRendezvous with StartPut from
// the sender's Receiver: every RTR starts its two Puts and returns, and the
// Done goes out from the second PutDone, so that all the transfers of all
// messages are in flight at once. Every PutDone must come once, with no
// error, from Progress (never from StartPut); the receiver checks its
// buffer and guards when the Done arrives. Then the failures: StartPut
// into a deregistered region fails with rdma.ErrNoRegion, past the end
// with rdma.ErrOutOfBounds (at once or through PutDone), and after Close
// with rdma.ErrClosed at once. Transports that do not implement
// rdma.PutStarter skip it.
func testStartPut(t *testing.T, f Factory) {
	const n = 3
	perPair := scale(16)
	e := newEnv(t, f, n)
	ps := e.starters()

	type message struct {
		from, to rdma.Addr
		data     []byte
		end      [2]putEnd
		ends     atomic.Int32 // Puts over (PutDone, or StartPut not pending)
	}
	var msgs []*message
	for from := range n {
		for _, to := range []int{(from + 1) % n, from} {
			for k := range perPair {
				size := 0
				if k > 0 {
					size = 1 + int(mix(uint64(len(msgs))+77)%(200<<10))
				}
				data := make([]byte, size)
				fillPayload(data, uint64(len(msgs))+3000)
				msgs = append(msgs, &message{from: rdma.Addr(from), to: rdma.Addr(to), data: data})
			}
		}
	}

	rv := newRVBuffers(e, len(msgs), 5000, func(id uint64) (from, to rdma.Addr, data []byte) {
		return msgs[id].from, msgs[id].to, msgs[id].data
	})
	rv.bind(n, func(w int, h rdma.Transport, pk *packet.Packet, id uint64, r rdma.Region) {
		m := msgs[id]
		pk.Kind = packet.KindDone
		pk.SetLen(0)
		// The second Put to end sends the Done.
		over := func(w int) {
			if m.ends.Add(1) == 2 {
				e.reply(w, h, m.to, pk)
			}
		}
		half := len(m.data) / 2
		parts := [2]struct {
			off  int
			data []byte
		}{{half, m.data[half:]}, {0, m.data[:half]}}
		for i, part := range parts {
			pe := &m.end[i]
			pe.e = e
			pe.after = func(w int) {
				pe.mu.Lock()
				err := pe.err
				pe.mu.Unlock()
				if err != nil {
					e.failf("PutDone of message %d, part %d: %v", id, i, err)
				}
				over(w)
			}
			pending, err := ps[m.from].StartPut(m.to, r, uint64(part.off), part.data, pe)
			if err != nil {
				e.failf("StartPut in Receive of message %d: %v", id, err)
			}
			if pending {
				continue
			}
			if c := pe.calls.Load(); c != 0 {
				e.failf("message %d: StartPut called PutDone (%d times) and returned pending false", id, c)
			}
			over(w)
		}
	})
	rv.run("rendezvous by StartPut")
	for id, m := range msgs {
		for i := range m.end {
			if c := m.end[i].calls.Load(); c > 1 {
				t.Errorf("message %d, part %d: PutDone called %d times", id, i, c)
			}
		}
	}
	e.checkPool("after the rendezvous")

	// Failures, from outside Receive, between endpoints 1 and 0, whose
	// Receivers are now sinks: a notification from 1 to 0 after a Put
	// ends tells 0 that its bytes are in (a transport that copies through
	// its peer's progress may end a Put before the owner took the bytes).
	for a := range rdma.Addr(2) {
		if err := e.hosts[a].Unbind(a); err != nil {
			t.Fatalf("Unbind(%d): %v", a, err)
		}
	}
	sinks := e.bindSinks(2, true)
	g := newGuarded(1000, 6000)
	e.register(0, g)
	src := make([]byte, 100)
	fillPayload(src, 6001)
	started := func(what string, off uint64, b []byte) error {
		t.Helper()
		pe := &putEnd{e: e}
		pending, err := ps[1].StartPut(0, g.region, off, b, pe)
		var res error
		e.waitFor(what, func() bool {
			var ok bool
			res, ok = pe.result(pending, err)
			return ok
		})
		if !pending && pe.calls.Load() != 0 {
			t.Errorf("%s: StartPut called PutDone and returned pending false", what)
		}
		return res
	}
	e.wantErr("StartPut past the end of a region", started("StartPut past the end", 950, src), rdma.ErrOutOfBounds)
	if err := started("a good StartPut", 900, src); err != nil {
		t.Errorf("StartPut of 100 bytes at 900 of 1000: %v", err)
	}
	g.write(900, src)
	e.notify(sinks, 1, 0)
	if err := g.check(); err != nil {
		t.Errorf("after a good StartPut and a failed one: %v", err)
	}
	if err := e.hosts[0].Deregister(g.region); err != nil {
		t.Fatalf("Deregister: %v", err)
	}
	e.wantErr("StartPut into a deregistered region", started("StartPut after Deregister", 0, src), rdma.ErrNoRegion)
	e.notify(sinks, 1, 0)
	if !g.guardsIntact() || !bytes.Equal(g.buf[900:], src) {
		t.Errorf("after the failed StartPuts: the region's bytes or guards changed")
	}

	for _, h := range e.uniq {
		if err := h.Close(); err != nil {
			t.Errorf("%s: Close: %v", h.Name(), err)
		}
	}
	e.closed = true
	pe := &putEnd{e: e}
	pending, err := ps[1].StartPut(0, g.region, 0, src, pe)
	if pending || !errors.Is(err, rdma.ErrClosed) {
		t.Errorf("StartPut after Close: pending %v, error %v; want false, rdma.ErrClosed", pending, err)
	}
}
