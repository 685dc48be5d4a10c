//go:build linux

package shm

import (
	"encoding/binary"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/cpu"

	"github.com/fibermpi/fibermpi/packet"
	"github.com/fibermpi/fibermpi/rdma"
)

// Records. A record starts on a 64-byte boundary of its ring and takes a
// whole number of cache lines, so a consumer reading one record never
// shares a line with the producer writing the next. Its first 56 bytes
// are its head; data follows:
//
//	recPacket   the packet header as packet.EncodeHeader writes it (its
//	            length field at offPacketLen is the payload length), then
//	            the payload
//	the others  the fields below (fLen is the data length), then data
//
// and in every head, over bytes the packet header leaves as zero padding,
//
//	offWord1 (uint32)  recPacket: destination address; recPut, recGetReq,
//	                   recRead: registration key; recGetData: status
//	offType  (byte)    the record's type
//
// An 8-byte message is one 64-byte line. TestHeaderWire checks the two
// facts of packet's wire layout this relies on.
const (
	recPacket  = 1  // a packet for the address in word 1
	recPut     = 2  // bytes of a copied Put into registration word 1
	recGetReq  = 3  // a copied Get asks for bytes of registration word 1
	recGetData = 4  // bytes answering a copied Get; word 1 is a status
	recRead    = 5  // the owner is to read part of a split Put into registration word 1
	recSkip    = 15 // nothing up to the end of the ring: continue at its start

	headSize     = packet.HeaderWireSize
	offPacketLen = 12 // the payload length in packet.EncodeHeader's layout
	offWord1     = 50
	offType      = 55
	recAlign     = 64
)

// Fields of the heads of recPut, recGetReq, recGetData and recRead (byte
// offsets).
const (
	fRegAddr = 0  // recPut, recGetReq, recRead: the Region's Addr
	fRegLen  = 8  // recPut, recGetReq, recRead: the Region's Len
	fOff     = 16 // recPut, recGetReq, recRead: offset in the region; recGetData: offset in the Get's dst
	fN       = 24 // recGetReq: bytes asked for; recRead: bytes to read
	fReqID   = 32 // recGetReq, recGetData: the Get's id
	fSrc     = 32 // recRead: the address of the bytes in the producer
	fLen     = 40 // uint32: the data bytes after the head
	fState   = 44 // uint32, recRead: waiting, taken or cancelled (split.go)
)

// Statuses of recGetData.
const (
	getOK       = 0
	getNoRegion = 1
)

var le = binary.LittleEndian

// queuedSize returns the bytes a drained packet record with n payload
// bytes takes in a queue.
func queuedSize(n int) int { return (headSize + n + 7) &^ 7 }

// putHead writes the type, word 1 and data length of a record other than
// a packet.
func putHead(rec []byte, typ int, word1 uint32, n int) {
	le.PutUint32(rec[fLen:], uint32(n))
	le.PutUint32(rec[offWord1:], word1)
	rec[offType] = byte(typ)
}

// spinlock is a lock for sections of a few hundred nanoseconds that never
// block. It never parks a goroutine in the Go scheduler (a locked worker
// must not); a waiter that spins long yields with runtime.Gosched.
type spinlock struct {
	v atomic.Uint32 // 1 while held: CompareAndSwap to take, Store(0) to release
}

func (l *spinlock) lock() {
	if !l.v.CompareAndSwap(0, 1) {
		l.lockSlow()
	}
}

//go:noinline
func (l *spinlock) lockSlow() {
	for i := 1; ; i++ {
		if l.v.Load() == 0 && l.v.CompareAndSwap(0, 1) {
			return
		}
		spinWait(i)
	}
}

func (l *spinlock) tryLock() bool { return l.v.Load() == 0 && l.v.CompareAndSwap(0, 1) }

func (l *spinlock) unlock() { l.v.Store(0) }

// ringLock holds an inRing's two locks in one word, so that a Progress
// call that delivers without building packets (every arrival taken by
// ReceiveEager) takes and releases both with one atomic operation each:
// deliver (lkDeliver), held by the one goroutine delivering the ring,
// across its Receive calls; and take (lkTake), held while records are
// taken out of the ring or the queue. The deliverer takes both at once,
// releases take before it calls Receive and takes it again for the next
// batch; a drain takes take alone.
type ringLock struct {
	v atomic.Uint32 // lkDeliver | lkTake bits
}

const (
	lkDeliver = 1
	lkTake    = 2
)

// tryDeliver takes both locks unless another goroutine delivers the ring,
// waiting (spinning) only while a drain holds take.
func (l *ringLock) tryDeliver() bool {
	for i := 1; ; i++ {
		s := l.v.Load()
		if s&lkDeliver != 0 {
			return false
		}
		if s == 0 && l.v.CompareAndSwap(0, lkDeliver|lkTake) {
			return true
		}
		spinWait(i)
	}
}

// lockTake takes take: a drain, or the deliverer again for its next batch.
func (l *ringLock) lockTake() {
	for i := 1; ; i++ {
		if s := l.v.Load(); s&lkTake == 0 && l.v.CompareAndSwap(s, s|lkTake) {
			return
		}
		spinWait(i)
	}
}

// unlockTake releases take alone.
func (l *ringLock) unlockTake() { l.v.And(^uint32(lkTake)) }

// unlockDeliver releases deliver, and take if the caller holds it too
// (held tells).
func (l *ringLock) unlockDeliver(held bool) {
	m := uint32(lkDeliver)
	if held {
		m |= lkTake
	}
	l.v.And(^m)
}

// spinWait is the i-th wait of a spinning lock: a Gosched now and then,
// never a park (a locked worker must not).
func spinWait(i int) {
	if i%128 == 0 {
		runtime.Gosched()
	}
}

// outRing is this process's producer side of the ring it sends into in
// one process's segment (a peer's, or its own for its own addresses).
// Goroutines of this process that send to that process at once take turns
// with mu: the ring itself has one producer and one consumer, and needs
// no lock between the processes.
type outRing struct {
	mu spinlock
	// Under mu.
	dead      bool         // Close has run: the memory is gone
	tail      uint64       // the producer's position (ctl.tail is its published copy)
	headCache uint64       // the last ctl.head seen: room is known without reading it
	puts      []startedPut // Puts started and not all written, in order
	splits    []splitPut   // Puts split with the owner whose read has not ended, in order
	reads     uint64       // recRead records written
	noSplit   bool         // the owner failed a read: split no more
	bothAt    time.Time    // when the owner was last seen sending large Puts back at once (split.go)
	pace      putPace      // how fast large Puts go each way (pace.go)
	_         cpu.CacheLinePad

	// Read-only after New.
	ctl  *ringCtl
	data []byte
	size uint64
	mask uint64
	seg  *segment // the receiver's segment
	proc int      // the receiver
	pid  int
	self bool // the receiver is this process
	cma  bool // Get (and Put, unless ringPut) uses process_vm_readv/writev
	// ringPut: Put copies through this ring (the kernel refuses
	// cross-memory attach, or Config.RingPuts).
	ringPut bool
	// alwaysSplit: every started Put of paceMin bytes or more is split,
	// unmeasured (Config.SplitPuts).
	alwaysSplit bool
	chunk       int // the most data bytes in one recPut or recGetData record
	// raceSync is nil except in race builds (race.go).
	raceSync *atomic.Uint64
	// back is this process's ring from the receiver (nil for self).
	back *inRing
	// pidfd is a pidfd of the receiver (to notice its exit), or -1:
	// Stored by New and Close, Loaded by the liveness checks.
	pidfd atomic.Int32
}

func newOutRing(seg *segment, ring int, proc, pid int) *outRing {
	ctl, data := seg.ring(ring)
	o := &outRing{ctl: ctl, data: data, size: uint64(len(data)), mask: uint64(len(data) - 1), seg: seg, proc: proc, pid: pid}
	o.pidfd.Store(-1)
	o.chunk = len(data) / 8 // a power of two: a message of one is one chunk
	o.raceSync = raceSyncFor(seg.dev, seg.ino, ring)
	// The consumer may have run before (it never has: the ring is new),
	// but start from what the ring says, not from zero.
	o.tail = ctl.tail.Load()
	o.headCache = ctl.head.Load()
	return o
}

// reserve finds room for a record of size bytes (a multiple of recAlign)
// and returns its offset in data, writing a skip record first if it does
// not fit before the end. It reports false if the ring is too full. The
// caller holds mu and publishes with publish.
func (o *outRing) reserve(size uint64) (uint64, bool) {
	pos := o.tail
	off := pos & o.mask
	need := size
	rem := o.size - off
	if size > rem {
		need += rem // skip to the start
	}
	if pos+need-o.headCache > o.size {
		o.headCache = o.ctl.head.Load()
		if pos+need-o.headCache > o.size {
			return 0, false
		}
	}
	if size > rem {
		o.data[off+offType] = recSkip
		o.tail += rem
		off = 0
	}
	return off, true
}

// publish makes the records written since the last publish, ending with
// one of size bytes, visible to the consumer. The Store is the release
// that the consumer's Load of tail pairs with: every byte of the records
// is written before it.
func (o *outRing) publish(size uint64) {
	o.tail += size
	if o.raceSync != nil {
		o.raceSync.Add(1) // before the Store: a consumer that sees tail acquires this
	}
	o.ctl.tail.Store(o.tail)
}

// wake wakes one of the receiver's sleeping threads, if there are any. It
// runs after publish: see doc.go, "Sleeping".
func (o *outRing) wake() {
	if o.seg.hdr.waiters.Load() != 0 {
		wakeOne(o.seg.hdr)
	}
}

// commit finishes a packet record that Transport.open reserved and its
// caller filled in (header and payload): it stamps the destination and
// the record type, publishes the record, releases mu and wakes the
// receiver if it sleeps.
func (o *outRing) commit(to rdma.Addr, rec []byte) {
	o.publishPacket(to, rec)
	o.mu.unlock()
	o.wake()
}

// publishPacket stamps the packet record rec with its destination and
// type and publishes it.
func (o *outRing) publishPacket(to rdma.Addr, rec []byte) {
	le.PutUint32(rec[offWord1:], uint32(to))
	rec[offType] = recPacket
	o.publish(uint64(len(rec)))
}

// inRing is this process's consumer side of one ring of its segment.
//
// Two locks, in one word (ringLock): deliver is held by the one goroutine
// that delivers this ring's packets (Progress takes it with tryDeliver and
// keeps it across Receive calls, which keeps deliveries in ring order);
// take is held while records are taken out of the ring or the queue,
// never across a call out of the transport other than ReceiveEager
// (rdma.EagerReceiver), which must not call back into it. A Put or Get
// that waits for room drains the ring into queue under take alone, even
// when the goroutine delivering the ring is the one waiting (a Receive
// that Puts): delivery then goes on from the queue, which comes before
// the ring.
type inRing struct {
	lk ringLock
	_  cpu.CacheLinePad

	// Under take.
	dead      bool
	head      uint64 // the consumer's position (ctl.head is its published copy)
	published uint64 // the last head Stored
	tailCache uint64 // the last ctl.tail seen
	queue     []byte // packet records drained by a waiting Put or Get, in ring order
	qhead     int
	// queued is the number of records in queue: changed under take,
	// Loaded by Sleep without it.
	queued atomic.Int32

	// Under deliver: the packets of one batch and their Receivers, and
	// whether the deliverer holds take too (endDeliver).
	batch       [batchSize]*packet.Packet
	recv        [batchSize]rdma.Receiver
	holdingTake bool
	// Under take: the payloads of a run of eager records (gather).
	run [batchSize][]byte
	// Under take: when this ring's last split read ended (monoNow).
	readEnd int64
	_       cpu.CacheLinePad

	// Read-only after New.
	ctl  *ringCtl
	data []byte
	size uint64
	mask uint64
	from int // the producer
	// raceSync is nil except in race builds (race.go).
	raceSync *atomic.Uint64
}

// endDeliver releases deliver, and take if the deliverer holds it
// (Transport.deliver defers it: a method, not a closure, so that the
// deferred call costs a poll next to nothing).
func (ir *inRing) endDeliver() { ir.lk.unlockDeliver(ir.holdingTake) }

// batchSize is the most packets a deliverer takes out of a ring at once.
const batchSize = 32

func newInRing(seg *segment, ring, from int) *inRing {
	ctl, data := seg.ring(ring)
	ir := &inRing{ctl: ctl, data: data, size: uint64(len(data)), mask: uint64(len(data) - 1), from: from}
	ir.raceSync = raceSyncFor(seg.dev, seg.ino, ring)
	ir.head = ctl.head.Load()
	ir.published = ir.head
	ir.tailCache = ir.head
	return ir
}

// peekRing returns the next record of the ring: its bytes (padding
// included), type, data length and word 1. It reports ok false when the
// ring is empty, and corrupt true (with ok false) for bytes that are no
// record. The caller holds take.
func (ir *inRing) peekRing() (rec []byte, typ, n int, word1 uint32, ok, corrupt bool) {
	for {
		if ir.seenAll() {
			return nil, 0, 0, 0, false, false
		}
		if ir.tailCache-ir.head > ir.size {
			return nil, 0, 0, 0, false, true
		}
		off := ir.head & ir.mask
		head := ir.data[off : off+headSize]
		switch typ = int(head[offType]); typ {
		case recSkip:
			ir.head += ir.size - off
			continue
		case recPacket:
			n = int(le.Uint32(head[offPacketLen:]))
		case recPut, recGetReq, recGetData, recRead:
			n = int(le.Uint32(head[fLen:]))
		default:
			return nil, 0, 0, 0, false, true
		}
		size := uint64(recordSize(n))
		if size > ir.size-off || ir.head+size > ir.tailCache {
			return nil, 0, 0, 0, false, true
		}
		rec = ir.data[off : off+size]
		return rec, typ, n, le.Uint32(head[offWord1:]), true, false
	}
}

// seenAll reports whether the consumer has taken every record up to the
// tail, loading the tail again when it has taken every record up to the
// last one it saw.
func (ir *inRing) seenAll() bool {
	if ir.head != ir.tailCache {
		return false
	}
	// The Load is the acquire that pairs with the producer's Store in
	// publish: the records up to it are complete.
	ir.tailCache = ir.ctl.tail.Load()
	if ir.raceSync != nil {
		ir.raceSync.Load()
	}
	return ir.head == ir.tailCache
}

// mayContinue reports whether a record at pos is visible and looks like
// an eager message with the envelope of the eager record head: gather's
// first test, inlined, so that messages in a row with different envelopes
// (one per fiber, say) do not pay for a call. The caller holds take.
func (ir *inRing) mayContinue(pos uint64, head *[headSize]byte) bool {
	return pos != ir.tailCache && packet.SameEager((*[headSize]byte)(ir.data[pos&ir.mask:]), head)
}

// gather returns the payloads of the records from head on, up to most
// and batchSize, that carry eager messages for the address of the eager
// record whose head is first, with its envelope (packet.SameEager). It
// stops at any other record, at a skip, and at the last tail seen: it
// reads only records peekRing has made visible, and leaves anything
// doubtful to it. The caller holds take; the slices point into the ring.
func (ir *inRing) gather(first *[headSize]byte, most int) [][]byte {
	// The ring's fields in locals: the stores into ir.run would make the
	// compiler load them again for every record.
	data, mask, ringSize, tail := ir.data, ir.mask, ir.size, ir.tailCache
	run := &ir.run
	word1 := le.Uint32(first[offWord1:])
	k := 0
	limit := min(most, len(run))
	for pos := ir.head; k < limit && pos != tail; k++ {
		off := pos & mask
		head := (*[headSize]byte)(data[off:])
		if head[offType] != recPacket || le.Uint32(head[offWord1:]) != word1 || !packet.SameEager(head, first) {
			break
		}
		m := uint64(le.Uint32(head[offPacketLen:]))
		size := uint64(recordSize(int(m)))
		if m > ringSize || size > ringSize-off || pos+size > tail {
			break // peekRing reports it when it gets there
		}
		run[k] = data[off+headSize : off+headSize+m]
		pos += size
	}
	return run[:k]
}

// peekQueue returns the next drained packet record, its payload length
// and destination.
func (ir *inRing) peekQueue() (rec []byte, n int, word1 uint32, ok bool) {
	if ir.qhead == len(ir.queue) {
		return nil, 0, 0, false
	}
	q := ir.queue[ir.qhead:]
	n = int(le.Uint32(q[offPacketLen:]))
	return q[:queuedSize(n)], n, le.Uint32(q[offWord1:]), true
}

// popQueue drops the record peekQueue returned.
func (ir *inRing) popQueue(n int) {
	ir.qhead += queuedSize(n)
	if ir.qhead == len(ir.queue) {
		ir.queue, ir.qhead = ir.queue[:0], 0
	}
	ir.queued.Add(-1)
}

// publishHead Stores head if it moved: the release after which the
// producer may write over the records consumed (they have been copied
// out).
func (ir *inRing) publishHead() {
	if ir.head != ir.published {
		ir.ctl.head.Store(ir.head)
		ir.published = ir.head
	}
}

// pending reports whether the ring or the queue may hold a record. It
// takes no lock (Sleep).
//
// It also loads the first word of the record at the published head and
// drops it. A record that arrives costs its consumer two cache lines from
// the producer's core: the tail's and the record's first. Loaded one
// after the other (the record once the tail says it is there), the two
// misses add up; loaded in the same poll, they overlap. The poll that
// sees the new tail has then brought in the record's line too, or
// brings it in while it waits for the tail, and the record is read from
// the cache (fmpi-osu latency at 8 B: 0.18 → 0.17 µs with the CPUs
// near, 0.49 → 0.42 µs far apart; BENCHMARKS.md, issue 12, session 29).
// Its value means nothing: the record may be being written, or an old
// lap's.
func (ir *inRing) pending() bool {
	if ir.queued.Load() != 0 {
		return true
	}
	h := ir.ctl.head.Load()
	// Safety: a record starts on a 64-byte boundary of data (h is a
	// record's position), so the word is 8-aligned and within data; the
	// mapping stays mapped (as zeros after Close). An atomic Load, so
	// that the compiler keeps it.
	(*atomic.Uint64)(unsafe.Pointer(&ir.data[h&ir.mask])).Load()
	return ir.ctl.tail.Load() != h
}
