package rdmatest

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/fibermpi/fibermpi/rdma"
)

// guardLen is the number of guard bytes on each side of a buffer the
// suite registers or reads into.
const guardLen = 64

// guarded is a buffer with guard bytes on both sides and a model of what
// all of it must hold.
type guarded struct {
	all    []byte // guard | buf | guard
	buf    []byte
	model  []byte
	region rdma.Region
}

// newGuarded makes a guarded buffer of n bytes filled from seed.
func newGuarded(n int, seed uint64) *guarded {
	all := make([]byte, n+2*guardLen)
	for i := range guardLen {
		all[i] = 0xA5 ^ byte(i)
		all[len(all)-1-i] = 0x5A ^ byte(i)
	}
	g := &guarded{all: all, buf: all[guardLen : guardLen+n : guardLen+n]}
	fillPayload(g.buf, seed)
	g.model = bytes.Clone(all)
	return g
}

// write records that b was written at off.
func (g *guarded) write(off int, b []byte) { copy(g.model[guardLen+off:], b) }

// want returns the model's bytes [off, off+n) of the buffer.
func (g *guarded) want(off, n int) []byte { return g.model[guardLen+off : guardLen+off+n] }

// check compares the whole buffer, guards included, with the model.
func (g *guarded) check() error {
	if bytes.Equal(g.all, g.model) {
		return nil
	}
	for i := range g.all {
		if g.all[i] != g.model[i] {
			where := "in the buffer"
			switch {
			case i < guardLen:
				where = "in the guard before the buffer"
			case i >= len(g.all)-guardLen:
				where = "in the guard after the buffer"
			}
			return fmt.Errorf("byte %d of a %d-byte buffer (%s) is %#x, want %#x", i-guardLen, len(g.buf), where, g.all[i], g.model[i])
		}
	}
	return nil
}

// guardsIntact reports whether the guard bytes hold what they should.
func (g *guarded) guardsIntact() bool {
	n := len(g.all)
	return bytes.Equal(g.all[:guardLen], g.model[:guardLen]) && bytes.Equal(g.all[n-guardLen:], g.model[n-guardLen:])
}

// register registers g.buf on the host of endpoint a.
func (e *env) register(a rdma.Addr, g *guarded) {
	e.t.Helper()
	r, err := e.hosts[a].Register(g.buf)
	if err != nil {
		e.t.Fatalf("Register(%d bytes) at %d: %v", len(g.buf), a, err)
	}
	if r.Len != uint64(len(g.buf)) {
		e.t.Errorf("Register(%d bytes) returned %v: wrong length", len(g.buf), r)
	}
	e.issued(r)
	g.region = r
}

// issued remembers the key of a region a transport handed out.
func (e *env) issued(r rdma.Region) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.keys == nil {
		e.keys = make(map[uint32]bool)
	}
	e.keys[r.Key] = true
}

// unissuedKey returns a key no transport of the fabric has handed out.
func (e *env) unissuedKey() uint32 {
	e.mu.Lock()
	defer e.mu.Unlock()
	k := uint32(0x5eed)
	for e.keys[k] {
		k++
	}
	return k
}

// notifyStream is the stream of the packets that tell an owner that Puts
// into its memory are complete.
const notifyStream = 100

// notify sends a packet from one endpoint to another and waits until it
// arrives: after that, the receiver may read what the sender Put into its
// memory before. Both endpoints have strict sinks.
func (e *env) notify(sinks []*sink, from, to rdma.Addr) {
	e.t.Helper()
	k := streamKey{from, notifyStream}
	seq := sinks[to].seen(k)
	e.mustSend(to, pid{from: from, stream: notifyStream, seq: seq})
	e.waitFor(fmt.Sprintf("notification %d from %d to %d", seq, from, to), func() bool { return sinks[to].seen(k) > seq })
}

// testPutGet: Put and Get round trips at many offsets and lengths, from a
// peer and from the owner itself, with guard bytes around both the region
// and the destination of Get.
func testPutGet(t *testing.T, f Factory) {
	const size = 1000
	e := newEnv(t, f, 2)
	sinks := e.bindSinks(2, true)
	g := newGuarded(size, 1)
	e.register(0, g)
	type access struct{ off, n int }
	accesses := []access{
		{0, 0}, {0, 1}, {0, size}, {1, 7}, {7, 100}, {size - 1, 1}, {size - 64, 64},
		{size, 0}, {size / 2, size / 2}, {333, 1}, {512, 488},
	}
	for k, a := range accesses {
		for _, from := range []rdma.Addr{1, 0} {
			what := fmt.Sprintf("from %d: %d bytes at offset %d", from, a.n, a.off)
			src := make([]byte, a.n)
			fillPayload(src, mix(uint64(k)<<8|uint64(from)))
			srcCopy := bytes.Clone(src)
			if err := e.hosts[from].Put(0, g.region, uint64(a.off), src); err != nil {
				t.Fatalf("Put %s: %v", what, err)
			}
			g.write(a.off, src)
			if !bytes.Equal(src, srcCopy) {
				t.Errorf("Put %s changed its source", what)
			}
			e.notify(sinks, from, 0)
			if err := g.check(); err != nil {
				t.Fatalf("after Put %s: %v", what, err)
			}

			dst := newGuarded(a.n, 99)
			if err := e.hosts[from].Get(0, g.region, uint64(a.off), dst.buf); err != nil {
				t.Fatalf("Get %s: %v", what, err)
			}
			dst.write(0, g.want(a.off, a.n))
			if err := dst.check(); err != nil {
				t.Fatalf("Get %s: destination: %v", what, err)
			}
			if err := g.check(); err != nil {
				t.Fatalf("Get %s changed the region: %v", what, err)
			}
		}
	}
	if err := e.hosts[0].Deregister(g.region); err != nil {
		t.Errorf("Deregister: %v", err)
	}
	e.checkPool("after the round trips")
}

// testEmptyRegion: empty and nil buffers register, take empty accesses
// (as a rendezvous of an empty message does) and refuse others.
func testEmptyRegion(t *testing.T, f Factory) {
	e := newEnv(t, f, 2)
	e.bindSinks(2, true)
	for _, buf := range [][]byte{nil, {}, make([]byte, 8)[8:]} {
		r, err := e.hosts[0].Register(buf)
		if err != nil {
			t.Fatalf("Register of an empty buffer (nil %v): %v", buf == nil, err)
		}
		e.issued(r)
		if r.Len != 0 {
			t.Errorf("Register of an empty buffer returned %v", r)
		}
		if err := e.hosts[1].Put(0, r, 0, nil); err != nil {
			t.Errorf("empty Put into an empty region: %v", err)
		}
		if err := e.hosts[1].Get(0, r, 0, []byte{}); err != nil {
			t.Errorf("empty Get from an empty region: %v", err)
		}
		e.wantErr("Put of 1 byte into an empty region", e.hosts[1].Put(0, r, 0, []byte{1}), rdma.ErrOutOfBounds)
		e.wantErr("empty Get at offset 1 of an empty region", e.hosts[1].Get(0, r, 1, nil), rdma.ErrOutOfBounds)
		if err := e.hosts[0].Deregister(r); err != nil {
			t.Errorf("Deregister of an empty region: %v", err)
		}
	}
}

// testBounds: accesses past the end of a region fail with
// rdma.ErrOutOfBounds and write nothing, neither into the region and its
// guards nor into the destination of a Get.
func testBounds(t *testing.T, f Factory) {
	const size = 256
	e := newEnv(t, f, 2)
	sinks := e.bindSinks(2, true)
	g := newGuarded(size, 2)
	e.register(0, g)
	type access struct {
		off uint64
		n   int
	}
	accesses := []access{
		{size, 1}, {size - 1, 2}, {size + 1, 0}, {0, size + 1}, {size / 2, size},
		{math.MaxUint64, 1}, {math.MaxUint64, 0}, {math.MaxUint64 - size/2, size},
		{1 << 63, 1}, {1 << 32, 1}, {size + 1<<32, 8},
	}
	for _, a := range accesses {
		for _, from := range []rdma.Addr{1, 0} {
			what := fmt.Sprintf("from %d: %d bytes at offset %d of a %d-byte region", from, a.n, a.off, size)
			src := make([]byte, a.n)
			fillPayload(src, a.off)
			err := e.hosts[from].Put(0, g.region, a.off, src)
			e.checkBoundsErr("Put "+what, err, a.off, a.n)

			dst := newGuarded(a.n, 3)
			err = e.hosts[from].Get(0, g.region, a.off, dst.buf)
			e.checkBoundsErr("Get "+what, err, a.off, a.n)
			if err := dst.check(); err != nil {
				t.Errorf("failed Get %s wrote its destination: %v", what, err)
			}
		}
	}
	// Anything a failed Put might have sent is ordered before this.
	e.notify(sinks, 1, 0)
	if err := g.check(); err != nil {
		t.Errorf("failed Puts wrote: %v", err)
	}
}

// checkBoundsErr checks the error of an access past the end.
func (e *env) checkBoundsErr(what string, err error, off uint64, n int) {
	e.t.Helper()
	if !errors.Is(err, rdma.ErrOutOfBounds) {
		e.t.Errorf("%s: got error %v; want rdma.ErrOutOfBounds", what, err)
		return
	}
	if be, ok := errors.AsType[*rdma.BoundsError](err); ok && (be.Off != off || be.Len != n) {
		e.t.Errorf("%s: the BoundsError says %d bytes at offset %d", what, be.Len, be.Off)
	}
}

// testDeregister: a withdrawn region refuses Put, Get and a second
// Deregister with rdma.ErrNoRegion, and its stale descriptor does not reach
// a registration made later.
func testDeregister(t *testing.T, f Factory) {
	const size = 128
	e := newEnv(t, f, 2)
	sinks := e.bindSinks(2, true)
	old := newGuarded(size, 4)
	e.register(0, old)
	if err := e.hosts[0].Deregister(old.region); err != nil {
		t.Fatalf("Deregister: %v", err)
	}
	src := make([]byte, 16)
	e.wantErr("Put after Deregister", e.hosts[1].Put(0, old.region, 0, src), rdma.ErrNoRegion)
	e.wantErr("Get after Deregister", e.hosts[1].Get(0, old.region, 0, src), rdma.ErrNoRegion)
	e.wantErr("second Deregister", e.hosts[0].Deregister(old.region), rdma.ErrNoRegion)
	e.wantErr("Deregister of a key never issued",
		e.hosts[0].Deregister(rdma.Region{Key: e.unissuedKey(), Len: size}), rdma.ErrNoRegion)

	// New registrations of the same size must not answer to the old
	// descriptor, however the transport picks keys.
	var news []*guarded
	for i := range 4 {
		g := newGuarded(size, 5+uint64(i))
		e.register(0, g)
		news = append(news, g)
		fillPayload(src, 77)
		e.wantErr(fmt.Sprintf("Put with a stale region after %d new registrations", i+1),
			e.hosts[1].Put(0, old.region, 0, src), rdma.ErrNoRegion)
	}
	e.notify(sinks, 1, 0)
	for i, g := range news {
		if err := g.check(); err != nil {
			t.Errorf("registration %d after the stale one: %v", i, err)
		}
		if err := e.hosts[0].Deregister(g.region); err != nil {
			t.Errorf("Deregister of registration %d: %v", i, err)
		}
	}
	if err := old.check(); err != nil {
		t.Errorf("the deregistered buffer: %v", err)
	}
}

// testForgedRegion: descriptors with an unknown key fail with
// rdma.ErrNoRegion; descriptors with a known key and a changed base or
// length may work or fail as the transport defines, but never touch
// memory outside the registration.
func testForgedRegion(t *testing.T, f Factory) {
	const size = 256
	e := newEnv(t, f, 2)
	sinks := e.bindSinks(2, true)
	g := newGuarded(size, 6)
	e.register(0, g)
	r := g.region
	src := make([]byte, 64)
	fillPayload(src, 8)

	unknown := rdma.Region{Key: e.unissuedKey(), Addr: r.Addr, Len: r.Len}
	e.wantErr("Put with an unknown key", e.hosts[1].Put(0, unknown, 0, src), rdma.ErrNoRegion)
	e.wantErr("Get with an unknown key", e.hosts[1].Get(0, unknown, 0, src), rdma.ErrNoRegion)

	type forged struct {
		what string
		r    rdma.Region
		off  uint64
	}
	for _, fg := range []forged{
		{"longer", rdma.Region{Key: r.Key, Addr: r.Addr, Len: r.Len + 64}, size},
		{"much longer", rdma.Region{Key: r.Key, Addr: r.Addr, Len: math.MaxUint64}, size + 1<<20},
		{"moved up", rdma.Region{Key: r.Key, Addr: r.Addr + 64, Len: r.Len}, size - 64},
		{"moved down", rdma.Region{Key: r.Key, Addr: r.Addr - 64, Len: r.Len}, 0},
		{"shorter", rdma.Region{Key: r.Key, Addr: r.Addr, Len: r.Len - 64}, size - 128},
	} {
		dst := newGuarded(len(src), 9)
		if err := e.hosts[1].Get(0, fg.r, fg.off, dst.buf); err != nil {
			if err := dst.check(); err != nil {
				t.Errorf("failed Get with a %s region wrote its destination: %v", fg.what, err)
			}
		} else if !dst.guardsIntact() {
			t.Errorf("Get with a %s region wrote outside its destination", fg.what)
		}
		putErr := e.hosts[1].Put(0, fg.r, fg.off, src)
		e.notify(sinks, 1, 0)
		if err := g.check(); err != nil {
			if putErr != nil {
				t.Errorf("failed Put with a %s region wrote: %v", fg.what, err)
				continue
			}
			// A successful Put may only have written inside the buffer.
			if !g.guardsIntact() {
				t.Errorf("Put with a %s region wrote outside the registration", fg.what)
			}
			copy(g.model[guardLen:guardLen+size], g.buf) // accept what it wrote inside
		}
	}
}
