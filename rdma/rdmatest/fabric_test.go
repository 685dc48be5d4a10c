package rdmatest_test

import (
	"bytes"
	"runtime"
	"sync"

	"github.com/fibermpi/fibermpi/packet"
	"github.com/fibermpi/fibermpi/rdma"
)

// This file is a second backend for testing the suite itself: a fabric of
// hosts, each standing for a process, that deliver only from Progress (as
// a transport between processes does), each with its own registrations.
// Faults can be switched on to check that the suite catches them.

// fault names one defect of the test fabric.
type fault string

const (
	faultNone        fault = ""
	faultDuplicate   fault = "duplicate"   // every 50th packet arrives twice
	faultReorder     fault = "reorder"     // pairs of packets swap
	faultCorrupt     fault = "corrupt"     // a header bit flips now and then
	faultTruncate    fault = "truncate"    // full payloads lose their last byte
	faultLeak        fault = "leak"        // delivered copies, originals never returned
	faultBadWorker   fault = "badworker"   // Receive gets an invalid worker index
	faultPartialPut  fault = "partialput"  // an out-of-bounds Put writes what fits
	faultKeyReuse    fault = "keyreuse"    // keys of withdrawn regions are reused
	faultIgnoreClose fault = "ignoreclose" // Close does nothing
	faultDropClose   fault = "dropclose"   // Close forgets queued packets
	faultKeepRefused fault = "keeprefused" // a refused packet is scribbled on
	faultLoseUnbound fault = "loseunbound" // packets queued for an unbound address vanish
	faultRebind      fault = "rebind"      // a second Bind replaces the first
	faultNoPeerCheck fault = "nopeercheck" // Put and Get ignore whether the owner is bound
	faultStaleClosed fault = "staleclosed" // Unbind works after Close
	faultBigOffset   fault = "bigoffset"   // bounds checked with off+n, which overflows
	faultDeliverSync fault = "deliversync" // correct, but delivers in Send (as inproc)
	faultSelfDeliver fault = "selfdeliver" // a send to oneself is refused
	faultLatePut     fault = "lateput"     // Put lands after later packets arrive
	faultDirtyGet    fault = "dirtyget"    // a failed Get fills dst with junk
	faultLanes       fault = "lanes"       // one lane per sending goroutine: order kept only within a goroutine
)

// router connects the hosts of one fabric: which host each bound address
// lives on.
type router struct {
	pool  *packet.Pool
	fault fault
	mu    sync.Mutex
	where map[rdma.Addr]binding
	hosts []*host
}

// binding is a bound address: its host and Receiver.
type binding struct {
	h *host
	r rdma.Receiver
}

// item is a packet in flight to a host, with the Receiver it was sent to.
type item struct {
	w    int
	to   rdma.Addr
	r    rdma.Receiver
	pk   *packet.Packet
	lane uint64 // the sending goroutine (faultLanes)
}

// goid returns the calling goroutine's id, from its stack header
// ("goroutine 123 [running]:"); only faultLanes needs it.
func goid() uint64 {
	var buf [32]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	var id uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			break
		}
		id = id*10 + uint64(c-'0')
	}
	return id
}

// host is one simulated process.
type host struct {
	rt *router

	// delivering is held by the one Progress call that delivers; taking
	// a batch and delivering it must not interleave with another, or
	// order is lost.
	delivering sync.Mutex

	mu      sync.Mutex
	inbox   []item
	late    []func() // Puts to land one Progress late (faultLatePut)
	later   []func() // Puts to land at the end of the next Progress
	regions map[uint32][]byte
	nextKey uint32
	closed  bool
	sends   int
}

func newFabric(pool *packet.Pool, nhosts int, f fault) *router {
	rt := &router{pool: pool, fault: f, where: make(map[rdma.Addr]binding)}
	for range nhosts {
		rt.hosts = append(rt.hosts, &host{rt: rt, regions: make(map[uint32][]byte)})
	}
	return rt
}

func (h *host) Name() string { return "testfabric" }

func (h *host) Bind(a rdma.Addr, r rdma.Receiver, pool *packet.Pool) error {
	if r == nil || pool == nil {
		return rdma.ErrNoPeer
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return rdma.ErrClosed
	}
	h.rt.mu.Lock()
	defer h.rt.mu.Unlock()
	if _, ok := h.rt.where[a]; ok && h.rt.fault != faultRebind {
		return rdma.ErrBound
	}
	h.rt.where[a] = binding{h, r}
	return nil
}

func (h *host) Unbind(a rdma.Addr) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed && h.rt.fault != faultStaleClosed {
		return rdma.ErrClosed
	}
	h.rt.mu.Lock()
	b, ok := h.rt.where[a]
	if ok && b.h == h {
		delete(h.rt.where, a)
	}
	h.rt.mu.Unlock()
	if !ok || b.h != h {
		return rdma.ErrNoPeer
	}
	if h.rt.fault == faultLoseUnbound {
		kept := h.inbox[:0]
		for _, it := range h.inbox {
			if it.to != a {
				kept = append(kept, it)
			}
		}
		h.inbox = kept // the others are neither delivered nor returned
	}
	return nil
}

// lookup returns the binding of a.
func (rt *router) lookup(a rdma.Addr) binding {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.where[a]
}

func (h *host) isClosed() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.closed && h.rt.fault != faultIgnoreClose
}

func (h *host) Send(w int, to rdma.Addr, pk *packet.Packet) error {
	if h.isClosed() {
		return rdma.ErrClosed
	}
	b := h.rt.lookup(to)
	dst, r := b.h, b.r
	if dst == nil || (h.rt.fault == faultSelfDeliver && dst == h) {
		if h.rt.fault == faultKeepRefused {
			pk.Flags ^= 0x10
		}
		return rdma.ErrNoPeer
	}
	h.mu.Lock()
	h.sends++
	n := h.sends
	h.mu.Unlock()
	switch h.rt.fault {
	case faultCorrupt:
		if n%37 == 0 {
			pk.RecvID ^= 1 << 40
		}
	case faultTruncate:
		if pk.Len() == pk.Cap() {
			pk.SetLen(pk.Len() - 1)
		}
	}
	items := []item{{w: packet.NoWorker, to: to, r: r, pk: pk}}
	switch {
	case h.rt.fault == faultDuplicate && n%50 == 0, h.rt.fault == faultLeak:
		cp := h.rt.pool.Get(packet.NoWorker)
		if cp != nil {
			cp.CopyHeader(pk)
			copy(cp.Data(), pk.Data())
			if h.rt.fault == faultLeak {
				items[0].pk = cp
			} else {
				items = append(items, item{w: packet.NoWorker, to: to, r: r, pk: cp})
			}
		}
	case h.rt.fault == faultBadWorker:
		items[0].w = 1000
	}
	dst.mu.Lock()
	defer dst.mu.Unlock()
	if dst.closed && h.rt.fault != faultIgnoreClose {
		for _, it := range items[1:] {
			h.rt.pool.Put(packet.NoWorker, it.pk)
		}
		return rdma.ErrNoPeer
	}
	if h.rt.fault == faultReorder && n%2 == 0 && len(dst.inbox) > 0 {
		last := dst.inbox[len(dst.inbox)-1]
		dst.inbox[len(dst.inbox)-1] = items[0]
		items[0] = last
	}
	if h.rt.fault == faultLanes {
		lane := goid()
		for i := range items {
			items[i].lane = lane
		}
	}
	dst.inbox = append(dst.inbox, items...)
	return nil
}

func (h *host) Progress(w int) int {
	if !h.delivering.TryLock() {
		return 0 // another goroutine delivers (or this one, re-entered)
	}
	defer h.delivering.Unlock()
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return 0
	}
	batch, late := h.inbox, h.later
	h.inbox, h.later, h.late = nil, h.late, nil
	if h.rt.fault == faultLanes && len(batch) > 0 {
		// Deliver only the lowest lane; the others wait, each in order.
		lane := batch[0].lane
		for _, it := range batch {
			lane = min(lane, it.lane)
		}
		var now []item
		for _, it := range batch {
			if it.lane == lane {
				now = append(now, it)
			} else {
				h.inbox = append(h.inbox, it)
			}
		}
		batch = now
	}
	h.mu.Unlock()
	defer func() {
		for _, f := range late {
			f()
		}
	}()
	for _, it := range batch {
		if it.w != packet.NoWorker {
			it.r.Receive(it.w, it.pk)
		} else {
			it.r.Receive(w, it.pk)
		}
	}
	return len(batch) + len(late)
}

func (h *host) Register(buf []byte) (rdma.Region, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return rdma.Region{}, rdma.ErrClosed
	}
	if h.rt.fault == faultKeyReuse {
		h.nextKey = 0
	}
	for {
		h.nextKey++
		if _, used := h.regions[h.nextKey]; !used {
			break
		}
	}
	h.regions[h.nextKey] = buf
	return rdma.Region{Key: h.nextKey, Addr: 0x1000, Len: uint64(len(buf))}, nil
}

func (h *host) Deregister(r rdma.Region) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return rdma.ErrClosed
	}
	if _, ok := h.regions[r.Key]; !ok {
		return rdma.ErrNoRegion
	}
	delete(h.regions, r.Key)
	return nil
}

// region finds the memory of a Put or Get: the part that fits (for
// faultPartialPut) and the bounds error.
func (h *host) region(owner rdma.Addr, r rdma.Region, off uint64, n int) ([]byte, error) {
	if h.isClosed() {
		return nil, rdma.ErrClosed
	}
	oh := h.rt.lookup(owner).h
	if oh == nil {
		if h.rt.fault != faultNoPeerCheck {
			return nil, rdma.ErrNoPeer
		}
		oh = h // look the key up here instead
	}
	oh.mu.Lock()
	buf, ok := oh.regions[r.Key]
	oh.mu.Unlock()
	if !ok || r.Addr != 0x1000 || r.Len != uint64(len(buf)) {
		return nil, rdma.ErrNoRegion
	}
	if h.rt.fault == faultBigOffset {
		if off+uint64(n) > r.Len {
			return buf[min(off, r.Len):], &rdma.BoundsError{Region: r, Off: off, Len: n}
		}
		return buf[off : off+uint64(n)], nil
	}
	if err := rdma.CheckBounds(r, off, n); err != nil {
		return buf[min(off, r.Len):], err
	}
	return buf[off : off+uint64(n)], nil
}

func (h *host) Put(owner rdma.Addr, r rdma.Region, off uint64, src []byte) error {
	dst, err := h.region(owner, r, off, len(src))
	if err != nil && (h.rt.fault != faultPartialPut || dst == nil) {
		return err
	}
	if h.rt.fault == faultLatePut && err == nil {
		oh := h.rt.lookup(owner).h
		cp := append([]byte(nil), src...)
		oh.mu.Lock()
		oh.late = append(oh.late, func() { copy(dst, cp) })
		oh.mu.Unlock()
		return nil
	}
	copy(dst, src)
	return err
}

func (h *host) Get(owner rdma.Addr, r rdma.Region, off uint64, dst []byte) error {
	src, err := h.region(owner, r, off, len(dst))
	if err != nil {
		if h.rt.fault == faultDirtyGet {
			for i := range dst {
				dst[i] = 0xdd
			}
		}
		return err
	}
	copy(dst, src)
	return nil
}

func (h *host) Close() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return rdma.ErrClosed
	}
	if h.rt.fault == faultIgnoreClose {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	batch := h.inbox
	h.inbox = nil
	h.rt.mu.Lock()
	for a, b := range h.rt.where {
		if b.h == h {
			delete(h.rt.where, a)
		}
	}
	h.rt.mu.Unlock()
	clear(h.regions)
	h.mu.Unlock()
	if h.rt.fault != faultDropClose {
		for _, it := range batch {
			h.rt.pool.Put(packet.NoWorker, it.pk)
		}
	}
	return nil
}
