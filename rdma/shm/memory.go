//go:build linux

package shm

import (
	"fmt"
	"math/bits"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/fibermpi/fibermpi/rdma"
)

// registry holds this process's registrations: the Go buffers, pinned,
// and their descriptions in the segment's table, which peers read to
// check a Region before they touch the memory.
//
// A key is a slot index in its low bits and the slot's generation above
// them; the generation grows at every reuse of the slot and slots are
// reused in FIFO order, so a key comes back only after 2^(32-slotBits)
// reuses of its slot (2^18 with the default 2^14 slots): a stale Region
// does not reach a later registration.
type registry struct {
	mu       sync.RWMutex
	seg      *segment
	slotBits uint
	local    []localReg // by slot
	free     []uint32   // free slots, FIFO
	freeHead int
	live     int
}

// localReg is one slot's registration.
type localReg struct {
	key uint32 // 0: free
	gen uint32
	buf []byte
	pin runtime.Pinner
}

func (g *registry) init(seg *segment, n int) {
	g.seg = seg
	g.slotBits = uint(bits.TrailingZeros(uint(n)))
	g.local = make([]localReg, n)
	g.free = make([]uint32, n)
	for i := range g.free {
		g.free[i] = uint32(i)
	}
}

// lookup returns the buffer registered as r, if r matches it exactly.
// The caller holds mu (either way).
func (g *registry) lookup(r rdma.Region) ([]byte, bool) {
	slot := int(r.Key & (1<<g.slotBits - 1))
	if r.Key == 0 || slot >= len(g.local) {
		return nil, false
	}
	l := &g.local[slot]
	if l.key != r.Key || uint64(len(l.buf)) != r.Len || bufAddr(l.buf) != r.Addr {
		return nil, false
	}
	return l.buf, true
}

// closeLocked forgets every registration. The caller holds mu.
func (g *registry) closeLocked() {
	for i := range g.local {
		l := &g.local[i]
		if l.key != 0 {
			l.pin.Unpin()
			l.key, l.buf = 0, nil
		}
	}
}

// bufAddr is the address peers write buf at: its first byte, or 0.
func bufAddr(buf []byte) uint64 {
	if len(buf) == 0 {
		return 0
	}
	// Safety: only the address is kept, as a number for peers; the
	// buffer stays pinned and registered (reachable from the registry)
	// while peers may use it.
	return uint64(uintptr(unsafe.Pointer(&buf[0])))
}

// Register exposes buf to Put and Get by peers until Deregister, pinning
// it (runtime.Pinner) so that its address stays valid. The Region's Addr
// is buf's address in this process. It fails with ErrLimit when
// Config.MaxRegions registrations are live.
func (t *Transport) Register(buf []byte) (rdma.Region, error) {
	g := &t.regs
	g.mu.Lock()
	defer g.mu.Unlock()
	if t.closed.Load() {
		return rdma.Region{}, rdma.ErrClosed
	}
	if g.live == len(g.local) {
		return rdma.Region{}, fmt.Errorf("%w: %d registrations live (MaxRegions)", ErrLimit, g.live)
	}
	slot := g.free[g.freeHead]
	g.freeHead = (g.freeHead + 1) % len(g.free)
	g.live++
	l := &g.local[slot]
	l.gen = (l.gen + 1) & (1<<(32-g.slotBits) - 1)
	if l.gen == 0 {
		l.gen = 1
	}
	l.key = l.gen<<g.slotBits | slot
	l.buf = buf
	if len(buf) > 0 {
		l.pin.Pin(&buf[0])
	}
	r := rdma.Region{Key: l.key, Addr: bufAddr(buf), Len: uint64(len(buf))}
	s := &g.seg.regions[slot]
	s.addr.Store(r.Addr)
	s.len.Store(r.Len)
	s.key.Store(r.Key) // last: peers check the key around addr and len
	return r, nil
}

// Deregister withdraws r. A copied Put still in a ring for it is dropped
// when it arrives; a cross-memory Put racing with Deregister writes into
// the buffer as the caller left it (the layer above deregisters only
// after the peer said it is done).
func (t *Transport) Deregister(r rdma.Region) error {
	g := &t.regs
	g.mu.Lock()
	defer g.mu.Unlock()
	if t.closed.Load() {
		return rdma.ErrClosed
	}
	if _, ok := g.lookup(r); !ok {
		return rdma.ErrNoRegion
	}
	slot := r.Key & (1<<g.slotBits - 1)
	g.seg.regions[slot].key.Store(0) // first: peers stop trusting addr and len
	l := &g.local[slot]
	l.pin.Unpin()
	l.key, l.buf = 0, nil
	g.free[(g.freeHead+len(g.free)-g.live)%len(g.free)] = slot
	g.live--
	return nil
}

// access checks a Put or Get of n bytes at off of r, registered by owner,
// and returns the ring towards the owner's process.
func (t *Transport) access(owner rdma.Addr, r rdma.Region, off uint64, n int) (*outRing, error) {
	if t.closed.Load() {
		return nil, rdma.ErrClosed
	}
	o, err := t.route(owner)
	if err != nil {
		return nil, err
	}
	if !o.seg.region(r) {
		return nil, rdma.ErrNoRegion
	}
	if err := rdma.CheckBounds(r, off, n); err != nil {
		return nil, err
	}
	return o, nil
}

// local runs fn on the bytes [off, off+n) of this process's registration r.
func (t *Transport) local(r rdma.Region, off uint64, n int, fn func([]byte)) error {
	t.regs.mu.RLock()
	defer t.regs.mu.RUnlock()
	if t.closed.Load() {
		return rdma.ErrClosed
	}
	buf, ok := t.regs.lookup(r)
	if !ok {
		return rdma.ErrNoRegion
	}
	fn(buf[off : off+uint64(n)])
	return nil
}

// Put copies src into the region r that owner registered, at off. Into
// another process it is one process_vm_writev (cross-memory attach), or,
// where the kernel refuses that, a copy through the ring in chunks that
// the owner's Progress (or any wait of the owner's in Put or Get) copies
// into the registration before it delivers the packets sent after the
// Put. It returns once the bytes are written or in the ring. Waiting for
// ring room it drains this process's rings (see the package
// documentation) and parks nothing: call it from a fiber or goroutine
// alike; it yields only the Go scheduler's way (runtime.Gosched) when it
// waits long.
func (t *Transport) Put(owner rdma.Addr, r rdma.Region, off uint64, src []byte) error {
	o, err := t.access(owner, r, off, len(src))
	if err != nil || len(src) == 0 {
		return err
	}
	if !o.self {
		o.bulk(len(src))
	}
	switch {
	case o.self:
		return t.local(r, off, len(src), func(dst []byte) { copy(dst, src) })
	case !o.ringPut:
		return o.vm(unix.ProcessVMWritev, src, r.Addr+off)
	}
	attach, measure := o.chooseAttach(len(src))
	if attach {
		return o.attachPut(r, off, src, measure)
	}
	return t.putCopy(o, r, off, src, measure)
}

// Get copies from the region r that owner registered, at off, into dst:
// one process_vm_readv, or a request the owner answers through the rings
// (then Get waits for the answer while draining its rings, as Put waits
// for room).
func (t *Transport) Get(owner rdma.Addr, r rdma.Region, off uint64, dst []byte) error {
	o, err := t.access(owner, r, off, len(dst))
	if err != nil || len(dst) == 0 {
		return err
	}
	switch {
	case o.self:
		return t.local(r, off, len(dst), func(src []byte) { copy(dst, src) })
	case o.cma:
		return o.vm(unix.ProcessVMReadv, dst, r.Addr+off)
	}
	return t.getCopy(o, r, off, dst)
}

// vmFunc is unix.ProcessVMReadv or unix.ProcessVMWritev.
type vmFunc func(pid int, local []unix.Iovec, remote []unix.RemoteIovec, flags uint) (int, error)

// vm moves buf to or from addr in o's process, looping over partial
// transfers.
func (o *outRing) vm(f vmFunc, buf []byte, addr uint64) error {
	for len(buf) > 0 {
		local := [1]unix.Iovec{{Base: &buf[0]}}
		local[0].SetLen(len(buf))
		remote := [1]unix.RemoteIovec{{Base: uintptr(addr), Len: len(buf)}}
		n, err := f(o.pid, local[:], remote[:], 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			if e := o.alive(); e != nil {
				return e
			}
			return &PeerError{Rank: o.proc, Err: fmt.Errorf("cross-memory attach of %d bytes at %#x: %w", len(buf), addr, err)}
		}
		if n <= 0 {
			return &PeerError{Rank: o.proc, Err: fmt.Errorf("cross-memory attach moved nothing at %#x", addr)}
		}
		buf, addr = buf[n:], addr+uint64(n)
	}
	return nil
}

// waiter paces a copied Put or Get waiting for a peer: it drains this
// process's rings, answers copied Gets, and now and then checks that the
// transport is open and the peer alive, and lets other goroutines run.
type waiter struct {
	t     *Transport
	o     *outRing
	spins int
}

func (w *waiter) wait() error {
	if w.t.drain()+w.t.serve() > 0 {
		return nil
	}
	w.spins++
	if w.spins%64 == 0 {
		if w.t.closed.Load() {
			return rdma.ErrClosed
		}
		if err := w.o.alive(); err != nil {
			return err
		}
		runtime.Gosched()
	}
	return nil
}

// putCopy writes src as recPut records into o's ring; where the kernel
// allows cross-memory attach (Config.RingPuts), a ring that stays full for
// attachAfter makes it write the rest that way. It measures the Put if
// measure (chooseAttach said so: pace chooses the way of Puts this large).
func (t *Transport) putCopy(o *outRing, r rdma.Region, off uint64, src []byte, measure bool) error {
	w := waiter{t: t, o: o}
	var stalled, began time.Time
	if measure {
		total := len(src)
		began = time.Now()
		defer func() { o.recordPut(false, total, time.Since(began)) }()
	}
	if len(src) >= paceMin {
		defer o.noteOverlap(o.back.ctl.bulk.Load())
	}
	for len(src) > 0 {
		o.mu.lock()
		if o.dead {
			o.mu.unlock()
			return rdma.ErrClosed
		}
		n := o.putChunk(r, off, src)
		o.mu.unlock()
		if n == 0 {
			if o.attachNow(&stalled) {
				return o.vm(unix.ProcessVMWritev, src, r.Addr+off)
			}
			if err := w.wait(); err != nil {
				return err
			}
			continue
		}
		stalled = time.Time{}
		o.wake()
		src, off = src[n:], off+uint64(n)
	}
	return nil
}

// putChunk writes the next chunk of a copied Put, at most o.chunk bytes
// of src for off of r, as a recPut record, and returns how many bytes it
// wrote: 0 when the ring has no room. The caller holds mu and wakes the
// owner after it releases it.
func (o *outRing) putChunk(r rdma.Region, off uint64, src []byte) int {
	n := min(len(src), o.chunk)
	size := uint64(recordSize(n))
	at, ok := o.reserve(size)
	if !ok {
		return 0
	}
	rec := o.data[at : at+size]
	le.PutUint64(rec[fRegAddr:], r.Addr)
	le.PutUint64(rec[fRegLen:], r.Len)
	le.PutUint64(rec[fOff:], off)
	putHead(rec, recPut, r.Key, n)
	copy(rec[headSize:], src[:n])
	o.publish(size)
	return n
}

// startedPut is a copied Put that StartPut started and could not finish
// at once: the rest of its bytes go into the ring as room appears.
type startedPut struct {
	r    rdma.Region
	off  uint64
	src  []byte // what is left to write
	done rdma.PutDone
	// total is the Put's length, and began when its first chunk was
	// written (zero: not yet), if it is measured (chooseAttach's measure).
	total int
	began time.Time
	// stalled is when a push first found the ring full since it last
	// wrote (zero: it has not); see attachAfter.
	stalled time.Time
	// seen is the owner's count of large Puts when this one began
	// (ringCtl.bulk), if it is large (paceMin): its end notes whether
	// the owner started one meanwhile (outRing.overlapped).
	seen  uint64
	large bool
}

// attachAfter is how long a Put through the rings (Config.RingPuts) waits
// for room before it writes the rest of its bytes by cross-memory attach.
// The owner, running, takes a chunk out in a few microseconds; a ring full
// for longer means the owner is not running (a CPU shared with other
// work, a long computation between its calls), and then one copy by the
// sender alone beats waiting for it: measured under a loaded machine,
// 0.3 GB/s through the rings against 2.5 GB/s attached.
const attachAfter = 50 * time.Microsecond

// attachNow reports whether a copied Put that found o's ring full should
// write the rest of its bytes by cross-memory attach: the kernel allows it
// and the ring has stayed full for attachAfter since *stalled, which the
// first full look sets (a write that finds room resets it to zero).
func (o *outRing) attachNow(stalled *time.Time) bool {
	switch {
	case !o.cma:
		return false
	case stalled.IsZero():
		*stalled = time.Now()
		return false
	}
	return time.Since(*stalled) > attachAfter
}

// StartPut starts what Put does and returns without waiting
// (rdma.PutStarter). Towards this process, or by cross-memory attach, the
// Put is over when it returns (pending false). Through the rings it writes
// the chunks that fit now; if some do not, it returns pending true and
// this transport's Progress writes the rest as the owner frees room (or,
// once the ring has stayed full for attachAfter, by cross-memory attach
// where the kernel allows it), then calls done.PutDone from that Progress
// (or from Close, with rdma.ErrClosed). Started Puts towards one process
// are written in the order they were started. It never waits for the
// owner and parks nothing.
func (t *Transport) StartPut(owner rdma.Addr, r rdma.Region, off uint64, src []byte, done rdma.PutDone) (bool, error) {
	o, err := t.access(owner, r, off, len(src))
	if err != nil || len(src) == 0 {
		return false, err
	}
	if o.self || !o.ringPut {
		return false, t.Put(owner, r, off, src)
	}
	o.bulk(len(src))
	attach, measure := o.chooseAttach(len(src))
	if attach {
		return t.startSplit(o, r, off, src, done, measure)
	}
	total := len(src)
	large, seen := len(src) >= paceMin, uint64(0)
	if large {
		seen = o.back.ctl.bulk.Load()
	}
	var began time.Time
	// One chunk per turn of the lock, as in putCopy: senders of small
	// packets to the same process wait for one chunk's copy at most.
	for len(src) > 0 {
		o.mu.lock()
		if o.dead {
			o.mu.unlock()
			return false, rdma.ErrClosed
		}
		n := 0
		if len(o.puts) == 0 {
			if measure && began.IsZero() {
				began = time.Now()
			}
			n = o.putChunk(r, off, src)
		}
		if n == 0 {
			p := startedPut{r: r, off: off, src: src, done: done, seen: seen, large: large}
			if measure {
				p.total, p.began = total, began
			}
			o.puts = append(o.puts, p)
			t.putting.Add(1)
			o.mu.unlock()
			return true, nil
		}
		o.mu.unlock()
		o.wake() // the owner may copy this chunk out while the next goes in
		src, off = src[n:], off+uint64(n)
	}
	if large {
		o.noteOverlap(seen)
	}
	if measure {
		o.recordPut(false, total, time.Since(began))
	}
	return false, nil
}

// pushPuts writes the chunks of started Puts that fit in their rings and
// calls PutDone, with worker w, for the Puts whose last chunk it wrote or
// whose rest it wrote by cross-memory attach. It returns how many chunks
// and attached rests it wrote.
func (t *Transport) pushPuts(w int) int {
	moved := 0
	for _, o := range t.out {
		if o == nil || o.self {
			continue
		}
		moved += t.endSplits(w, o)
		for {
			o.mu.lock()
			if o.dead || len(o.puts) == 0 {
				o.mu.unlock()
				break
			}
			p := &o.puts[0]
			if p.total > 0 && p.began.IsZero() {
				p.began = time.Now()
			}
			n := o.putChunk(p.r, p.off, p.src)
			var end startedPut // the Put to end: its done, and its rest to attach
			switch {
			case n > 0:
				p.src, p.off = p.src[n:], p.off+uint64(n)
				p.stalled = time.Time{}
				if len(p.src) == 0 {
					end = *p
				}
			case o.attachNow(&p.stalled):
				end = *p
			}
			if end.done != nil {
				o.puts = slices.Delete(o.puts, 0, 1)
				t.putting.Add(-1)
				if end.large {
					o.overlapped(end.seen, time.Now())
				}
			}
			o.mu.unlock()
			if n > 0 {
				o.wake()
			}
			if end.done == nil {
				if n == 0 {
					break
				}
				moved++
				continue
			}
			moved++
			var err error
			if len(end.src) > 0 {
				err = o.vm(unix.ProcessVMWritev, end.src, end.r.Addr+end.off)
			}
			if end.total > 0 && err == nil {
				o.recordPut(false, end.total, time.Since(end.began))
			}
			// The last chunk is published (or the rest written): a packet
			// the caller sends now follows it in the ring.
			end.done.PutDone(w, err)
		}
	}
	return moved
}

// apply carries out a record other than a packet, taken from ir. The
// caller holds ir.take.
func (t *Transport) apply(ir *inRing, typ, n int, word1 uint32, rec []byte) {
	data := rec[headSize : headSize+n]
	switch typ {
	case recPut:
		r := rdma.Region{Key: word1, Addr: le.Uint64(rec[fRegAddr:]), Len: le.Uint64(rec[fRegLen:])}
		off := le.Uint64(rec[fOff:])
		if rdma.CheckBounds(r, off, len(data)) == nil {
			// A registration withdrawn meanwhile drops the bytes.
			_ = t.local(r, off, len(data), func(dst []byte) { copy(dst, data) })
		}
	case recGetReq:
		t.gets.request(&getServe{
			to:  ir.from,
			r:   rdma.Region{Key: word1, Addr: le.Uint64(rec[fRegAddr:]), Len: le.Uint64(rec[fRegLen:])},
			off: le.Uint64(rec[fOff:]),
			n:   le.Uint64(rec[fN:]),
			id:  le.Uint64(rec[fReqID:]),
		})
	case recGetData:
		t.gets.answer(le.Uint64(rec[fReqID:]), word1, le.Uint64(rec[fOff:]), data)
	case recRead:
		r := rdma.Region{Key: word1, Addr: le.Uint64(rec[fRegAddr:]), Len: le.Uint64(rec[fRegLen:])}
		var stamp int64
		if len(data) >= stampSize {
			stamp = int64(le.Uint64(data))
		}
		t.read(ir, rec, r, le.Uint64(rec[fOff:]), le.Uint64(rec[fN:]), le.Uint64(rec[fSrc:]), stamp)
	}
}

// getState is the copied Gets of this process: those it waits for
// (waits) and those it answers (serves).
type getState struct {
	mu     sync.Mutex
	nextID uint64
	waits  map[uint64]*getWait
	serves []*getServe
	// serving counts serves: Added under mu, Loaded by Progress to skip
	// serve when there is nothing to answer.
	serving atomic.Int32
	// turn is held by the one goroutine answering (serve).
	turn   spinlock
	closed bool
}

// getWait is a copied Get waiting for its bytes.
type getWait struct {
	dst  []byte
	got  int
	fail bool // the owner found no such registration
}

// getServe is a copied Get of a peer being answered.
type getServe struct {
	to     int
	r      rdma.Region
	off, n uint64
	id     uint64
	sent   uint64
}

func (g *getState) request(s *getServe) {
	g.mu.Lock()
	if !g.closed {
		g.serves = append(g.serves, s)
		g.serving.Add(1)
	}
	g.mu.Unlock()
}

func (g *getState) answer(id uint64, status uint32, dstOff uint64, data []byte) {
	g.mu.Lock()
	defer g.mu.Unlock()
	w := g.waits[id]
	if w == nil {
		return // the Get gave up (Close)
	}
	if status != getOK {
		w.fail = true
		return
	}
	if dstOff <= uint64(len(w.dst)) {
		w.got += copy(w.dst[dstOff:], data)
	}
}

func (g *getState) closeAll() {
	g.mu.Lock()
	g.closed = true
	g.serves = nil
	g.serving.Store(0)
	g.mu.Unlock()
}

// getCopy asks o's process for the bytes and waits for them.
func (t *Transport) getCopy(o *outRing, r rdma.Region, off uint64, dst []byte) error {
	g := &t.gets
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return rdma.ErrClosed
	}
	g.nextID++
	id := g.nextID
	if g.waits == nil {
		g.waits = make(map[uint64]*getWait)
	}
	gw := &getWait{dst: dst}
	g.waits[id] = gw
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		delete(g.waits, id)
		g.mu.Unlock()
	}()

	w := waiter{t: t, o: o}
	size := uint64(recordSize(0))
	for {
		o.mu.lock()
		if o.dead {
			o.mu.unlock()
			return rdma.ErrClosed
		}
		at, ok := o.reserve(size)
		if ok {
			rec := o.data[at : at+size]
			le.PutUint64(rec[fRegAddr:], r.Addr)
			le.PutUint64(rec[fRegLen:], r.Len)
			le.PutUint64(rec[fOff:], off)
			le.PutUint64(rec[fN:], uint64(len(dst)))
			le.PutUint64(rec[fReqID:], id)
			putHead(rec, recGetReq, r.Key, 0)
			o.publish(size)
		}
		o.mu.unlock()
		if ok {
			break
		}
		if err := w.wait(); err != nil {
			return err
		}
	}
	o.wake()
	for {
		g.mu.Lock()
		got, fail := gw.got, gw.fail
		g.mu.Unlock()
		switch {
		case fail:
			return rdma.ErrNoRegion
		case got >= len(dst):
			return nil
		}
		if err := w.wait(); err != nil {
			return err
		}
	}
}

// serve writes answers to copied Gets of peers into their rings, as far as
// there is room, and returns how many records it wrote. One goroutine
// answers at a time; the others return 0.
func (t *Transport) serve() int {
	g := &t.gets
	if g.serving.Load() == 0 || !g.turn.tryLock() {
		return 0
	}
	defer g.turn.unlock()
	g.mu.Lock()
	todo := append([]*getServe(nil), g.serves...)
	g.mu.Unlock()
	n, finished := 0, 0
	for _, s := range todo {
		k, done := t.answer(s)
		n += k
		if !done {
			break // keep answers in request order
		}
		finished++
	}
	if finished > 0 {
		g.mu.Lock()
		if !g.closed {
			g.serves = g.serves[finished:]
			g.serving.Add(int32(-finished))
		}
		g.mu.Unlock()
	}
	return n
}

// answer writes as much of s's answer as fits into the requester's ring.
func (t *Transport) answer(s *getServe) (records int, done bool) {
	o := t.out[s.to]
	for {
		n := min(s.n-s.sent, uint64(o.chunk))
		status := uint32(getOK)
		var data []byte
		t.regs.mu.RLock()
		if buf, ok := t.regs.lookup(s.r); !ok || rdma.CheckBounds(s.r, s.off, int(s.n)) != nil {
			status, n = getNoRegion, 0
		} else {
			data = buf[s.off+s.sent : s.off+s.sent+n]
		}
		size := uint64(recordSize(int(n)))
		o.mu.lock()
		if o.dead {
			o.mu.unlock()
			t.regs.mu.RUnlock()
			return records, true
		}
		at, ok := o.reserve(size)
		if ok {
			rec := o.data[at : at+size]
			le.PutUint64(rec[fReqID:], s.id)
			le.PutUint64(rec[fOff:], s.sent)
			putHead(rec, recGetData, status, int(n))
			copy(rec[headSize:], data)
			o.publish(size)
		}
		o.mu.unlock()
		t.regs.mu.RUnlock()
		if !ok {
			return records, false
		}
		o.wake()
		records++
		s.sent += n
		if status != getOK || s.sent == s.n {
			return records, true
		}
	}
}
