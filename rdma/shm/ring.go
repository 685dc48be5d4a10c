package shm

import (
	"encoding/binary"
	"runtime"
	"sync/atomic"
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
// The head's last 8 bytes, from offCommit, are the record's commit word,
// the one word of a record written atomically. Over bytes the packet
// header leaves as zero padding it holds
//
//	offWord1 (uint32)  recPacket: destination address; recPut, recGetReq:
//	                   registration key; recGetData: status
//	offType  (byte)    the record's type; 0: no record (yet)
//
// and for a packet the header's own bytes there (kind and flags). An
// 8-byte message is one 64-byte line. TestHeaderWire checks the facts of
// packet's wire layout this relies on.
//
// Publication. There is no shared tail: the producer writes a record's
// bytes, then Stores its commit word; the consumer Loads the commit word
// at its position and reads the record only if the type is set. Before it
// commits a record, the producer zeroes the commit word of the slot right
// after it (free space: reserve keeps a line of margin), so that when the
// consumer gets there it finds 0 until the next record is committed, never
// a record of the ring's previous lap. The consumer's only shared write is
// head, once per batch, which the producer reads only when its cached copy
// says the ring is full. A message thus moves one cache line from producer
// to consumer (two for a tail-indexed ring: the tail's and the record's).
const (
	recPacket  = 1  // a packet for the address in word 1
	recPut     = 2  // bytes of a copied Put into registration word 1
	recGetReq  = 3  // a copied Get asks for bytes of registration word 1
	recGetData = 4  // bytes answering a copied Get; word 1 is a status
	recSkip    = 15 // nothing up to the end of the ring: continue at its start

	headSize     = packet.HeaderWireSize
	offPacketLen = 12 // the payload length in packet.EncodeHeader's layout
	offCommit    = 48
	offWord1     = 50
	offType      = 55
	recAlign     = 64
)

// commitOf returns the commit word of a record of type typ with word 1
// w1; packet records also carry the header's bytes at offCommit (h).
func commitOf(typ int, w1 uint32, h uint16) uint64 {
	return uint64(typ)<<56 | uint64(w1)<<16 | uint64(h)
}

// commitAt returns the commit word of the record at off of data.
func commitAt(data []byte, off uint64) *atomic.Uint64 {
	// Safety: off is a multiple of recAlign inside data (positions are
	// masked by the ring size, a multiple of recAlign), so the 8 bytes
	// at off+offCommit are in data and 8-byte aligned (data starts on a
	// page). The ring memory holds no Go pointers.
	return (*atomic.Uint64)(unsafe.Pointer(&data[off+offCommit]))
}

// Fields of the heads of recPut, recGetReq and recGetData (byte offsets).
const (
	fRegAddr = 0  // recPut, recGetReq: the Region's Addr
	fRegLen  = 8  // recPut, recGetReq: the Region's Len
	fOff     = 16 // recPut, recGetReq: offset in the region; recGetData: offset in the Get's dst
	fN       = 24 // recGetReq: bytes asked for
	fReqID   = 32 // recGetReq, recGetData: the Get's id
	fLen     = 40 // uint32: the data bytes after the head
)

// Statuses of recGetData.
const (
	getOK       = 0
	getNoRegion = 1
)

var le = binary.LittleEndian

// recordSize returns the ring bytes of a record with n data bytes.
func recordSize(n int) int { return (headSize + n + recAlign - 1) &^ (recAlign - 1) }

// queuedSize returns the bytes a drained packet record with n payload
// bytes takes in a queue.
func queuedSize(n int) int { return (headSize + n + 7) &^ 7 }

// putHead writes the data length of a record other than a packet and
// returns its commit word.
func putHead(rec []byte, typ int, word1 uint32, n int) uint64 {
	le.PutUint32(rec[fLen:], uint32(n))
	return commitOf(typ, word1, 0)
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
		if i%128 == 0 {
			runtime.Gosched()
		}
	}
}

func (l *spinlock) tryLock() bool { return l.v.Load() == 0 && l.v.CompareAndSwap(0, 1) }

func (l *spinlock) unlock() { l.v.Store(0) }

// outRing is this process's producer side of the ring it sends into in
// one process's segment (a peer's, or its own for its own addresses).
// Goroutines of this process that send to that process at once take turns
// with mu: the ring itself has one producer and one consumer, and needs
// no lock between the processes.
type outRing struct {
	mu spinlock
	// Under mu.
	dead      bool   // Close has run: the memory is gone
	tail      uint64 // the producer's position: where the next record goes
	headCache uint64 // the last ctl.head seen: room is known without reading it
	_         cpu.CacheLinePad

	// Read-only after New.
	ctl   *ringCtl
	data  []byte
	size  uint64
	mask  uint64
	seg   *segment // the receiver's segment
	proc  int      // the receiver
	pid   int
	self  bool // the receiver is this process
	cma   bool // Put and Get use process_vm_writev/readv
	chunk int  // the most data bytes in one recPut or recGetData record
	// raceSync is nil except in race builds (race.go).
	raceSync *atomic.Uint64
	// pidfd is a pidfd of the receiver (to notice its exit), or -1:
	// Stored by New and Close, Loaded by the liveness checks.
	pidfd atomic.Int32
}

func newOutRing(seg *segment, ring int, proc, pid int) *outRing {
	ctl, data := seg.ring(ring)
	o := &outRing{ctl: ctl, data: data, size: uint64(len(data)), mask: uint64(len(data) - 1), seg: seg, proc: proc, pid: pid}
	o.pidfd.Store(-1)
	o.chunk = len(data)/4 - headSize
	o.raceSync = raceSyncFor(seg.dev, seg.ino, ring)
	// The ring is new: the consumer is at 0 and every commit word is 0.
	o.headCache = ctl.head.Load()
	o.tail = o.headCache
	return o
}

// reserve finds room for a record of size bytes (a multiple of recAlign)
// and returns its offset in data, committing a skip record first if it
// does not fit before the end. Room includes a line of margin after the
// record, for the commit word commit zeroes. It reports false if the ring
// is too full. The caller holds mu, writes the record and commits it.
func (o *outRing) reserve(size uint64) (uint64, bool) {
	pos := o.tail
	off := pos & o.mask
	need := size + recAlign
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
		o.commit(off, rem, commitOf(recSkip, 0, 0))
		off = 0
	}
	return off, true
}

// commit publishes the record of size bytes at off, whose other bytes are
// written, with its commit word c, and moves the producer past it. It
// first zeroes the commit word of the next slot (free space: nobody reads
// it until a later commit publishes it). The Store is the release that
// the consumer's Load of the commit word pairs with: the record's bytes
// and the zeroed word are written before it.
func (o *outRing) commit(off, size, c uint64) {
	le.PutUint64(o.data[(off+size)&o.mask+offCommit:], 0)
	if o.raceSync != nil {
		o.raceSync.Add(1) // before the Store: a consumer that sees the commit acquires this
	}
	commitAt(o.data, off).Store(c)
	o.tail += size
}

// wake wakes the receiver's sleeping goroutines, if there are any. It
// runs after commit: see Sleep.
func (o *outRing) wake() {
	if o.seg.hdr.waiters.Load() != 0 {
		wakeAll(o.seg.hdr)
	}
}

// writePacket writes and commits pk's record for address to at off.
func (o *outRing) writePacket(off uint64, size int, to rdma.Addr, pk *packet.Packet) {
	rec := o.data[off : off+uint64(size)]
	var h [headSize]byte
	pk.EncodeHeader(h[:])
	copy(rec[:offCommit], h[:offCommit])
	copy(rec[headSize:], pk.Data())
	o.commit(off, uint64(size), commitOf(recPacket, uint32(to), le.Uint16(h[offCommit:])))
}

// inRing is this process's consumer side of one ring of its segment.
//
// Two locks: deliver is held by the one goroutine that delivers this
// ring's packets (Progress takes it with tryLock and keeps it across
// Receive calls, which keeps deliveries in ring order); take is held
// while records are taken out of the ring or the queue, never across a
// call out of the transport. A Put or Get that waits for room drains the
// ring into queue under take alone, even when the goroutine delivering
// the ring is the one waiting (a Receive that Puts): delivery then goes
// on from the queue, which comes before the ring.
type inRing struct {
	deliver spinlock
	_       cpu.CacheLinePad

	take spinlock
	// Under take.
	dead      bool
	head      uint64 // the consumer's position (ctl.head is its published copy)
	published uint64 // the last head Stored
	queue     []byte // packet records drained by a waiting Put or Get, in ring order
	qhead     int
	// queued is the number of records in queue: changed under take,
	// Loaded by Sleep without it.
	queued atomic.Int32

	// Under deliver: the packets of one batch and their Receivers.
	batch [batchSize]*packet.Packet
	recv  [batchSize]rdma.Receiver
	_     cpu.CacheLinePad

	// Read-only after New.
	ctl  *ringCtl
	data []byte
	size uint64
	mask uint64
	from int // the producer
	// raceSync is nil except in race builds (race.go).
	raceSync *atomic.Uint64
}

// batchSize is the most packets a deliverer takes out of a ring at once.
const batchSize = 32

func newInRing(seg *segment, ring, from int) *inRing {
	ctl, data := seg.ring(ring)
	ir := &inRing{ctl: ctl, data: data, size: uint64(len(data)), mask: uint64(len(data) - 1), from: from}
	ir.raceSync = raceSyncFor(seg.dev, seg.ino, ring)
	ir.head = ctl.head.Load()
	ir.published = ir.head
	return ir
}

// peekRing returns the next record of the ring: its bytes (padding
// included), type, data length and word 1. It reports ok false when no
// record is committed there, and corrupt true (with ok false) for bytes
// that are no record. The caller holds take.
func (ir *inRing) peekRing() (rec []byte, typ, n int, word1 uint32, ok, corrupt bool) {
	for {
		off := ir.head & ir.mask
		// The Load is the acquire that pairs with the producer's Store
		// in commit: the record's bytes are written.
		c := commitAt(ir.data, off).Load()
		typ = int(c >> 56)
		if typ == 0 {
			return nil, 0, 0, 0, false, false
		}
		if ir.raceSync != nil {
			ir.raceSync.Load()
		}
		head := ir.data[off : off+headSize]
		switch typ {
		case recSkip:
			ir.head += ir.size - off
			continue
		case recPacket:
			n = int(le.Uint32(head[offPacketLen:]))
		case recPut, recGetReq, recGetData:
			n = int(le.Uint32(head[fLen:]))
		default:
			return nil, 0, 0, 0, false, true
		}
		size := uint64(recordSize(n))
		if size > ir.size-off {
			return nil, 0, 0, 0, false, true
		}
		return ir.data[off : off+size], typ, n, uint32(c >> 16), true, false
	}
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
// takes no lock (Progress, Sleep): it looks at the commit word at the
// published head, which is the next record's, or one already consumed
// while a batch is under way (then it errs towards true).
func (ir *inRing) pending() bool {
	return ir.queued.Load() != 0 || commitAt(ir.data, ir.ctl.head.Load()&ir.mask).Load()>>56 != 0
}
