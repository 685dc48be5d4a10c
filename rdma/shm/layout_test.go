//go:build linux

package shm

import (
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/cpu"
	"golang.org/x/sys/unix"

	"github.com/fibermpi/fibermpi/packet"
)

const line = uint64(unsafe.Sizeof(cpu.CacheLinePad{}))

// lineOf is the cache line of a field at off in a line-aligned structure.
func lineOf(off uintptr) uint64 { return uint64(off) / line }

// TestRingCtlLines: tail and head are on cache lines of their own, and the
// control block ends before the records start.
func TestRingCtlLines(t *testing.T) {
	var c ringCtl
	tail, head := unsafe.Offsetof(c.tail), unsafe.Offsetof(c.head)
	if lineOf(tail) == lineOf(head) {
		t.Errorf("tail (offset %d) and head (offset %d) share a cache line", tail, head)
	}
	if lineOf(tail) == 0 || lineOf(head) == lineOf(unsafe.Sizeof(c)-1) {
		t.Errorf("ringCtl %d bytes, tail at %d, head at %d: an index shares a line with what precedes or follows", unsafe.Sizeof(c), tail, head)
	}
	if unsafe.Sizeof(c) > ringDataOff {
		t.Errorf("ringCtl is %d bytes, more than the %d before the records", unsafe.Sizeof(c), ringDataOff)
	}
	if ringDataOff%line != 0 {
		t.Errorf("records start at %d, not on a cache line", ringDataOff)
	}
}

// TestHeaderLines: the wake-up words have a cache line of their own, away
// from the read-only layout fields every sender reads.
func TestHeaderLines(t *testing.T) {
	var h segHeader
	w, s := lineOf(unsafe.Offsetof(h.waiters)), lineOf(unsafe.Offsetof(h.seq))
	if w != s {
		t.Errorf("waiters and seq on lines %d and %d: one line is enough", w, s)
	}
	if w == lineOf(unsafe.Offsetof(h.ringStride)) {
		t.Errorf("the wake-up words share a line with the layout fields")
	}
	if unsafe.Sizeof(h) > ringTableOff {
		t.Errorf("segHeader is %d bytes, past the ring table at %d", unsafe.Sizeof(h), ringTableOff)
	}
	if unsafe.Sizeof(regSlot{}) != 32 {
		t.Errorf("regSlot is %d bytes, want 32", unsafe.Sizeof(regSlot{}))
	}
}

// TestProducerConsumerApart: the producer's lock and indices and the
// consumer's are on different cache lines from the fields the other side
// reads.
func TestProducerConsumerApart(t *testing.T) {
	var o outRing
	if lineOf(unsafe.Offsetof(o.headCache)) == lineOf(unsafe.Offsetof(o.ctl)) {
		t.Errorf("outRing: the fields under the lock share a line with the read-only ones")
	}
	var ir inRing
	if lineOf(unsafe.Offsetof(ir.lk)) == lineOf(unsafe.Offsetof(ir.head)) {
		t.Errorf("inRing: the lock word shares a line with the state under it")
	}
}

// TestRecordSize: a record is the head (the packet header) and the
// payload in whole cache lines; an 8-byte message takes one line.
func TestRecordSize(t *testing.T) {
	for _, c := range []struct{ payload, want int }{{0, 64}, {8, 64}, {9, 128}, {64, 128}, {72, 128}, {73, 192}, {8192, 8256}} {
		if got := recordSize(c.payload); got != c.want {
			t.Errorf("recordSize of a %d-byte payload = %d, want %d", c.payload, got, c.want)
		}
	}
}

// TestHeaderWire: the two facts of packet.EncodeHeader's layout a record
// relies on: the payload length is the little-endian uint32 at
// offPacketLen, and the bytes from offWord1 to the end are padding, zero
// whatever the header holds (a record keeps its destination and type
// there).
func TestHeaderWire(t *testing.T) {
	pool, err := packet.New(packet.Config{Workers: 1, PerWorker: 1, Shared: 1, PayloadSize: 1024})
	if err != nil {
		t.Fatal(err)
	}
	pk := pool.Get(packet.NoWorker)
	defer pool.Put(packet.NoWorker, pk)
	pk.Context, pk.Source, pk.Tag, pk.From, pk.Count = ^uint32(0), -1, -1, ^uint32(0), ^uint32(0)
	pk.SendID, pk.RecvID, pk.Size, pk.Kind, pk.Flags = ^uint64(0), ^uint64(0), ^uint64(0), ^packet.Kind(0), 0xff
	pk.SetLen(1000)
	var b [headSize]byte
	pk.EncodeHeader(b[:])
	if got := le.Uint32(b[offPacketLen:]); got != 1000 {
		t.Errorf("the length field at %d holds %d, want 1000", offPacketLen, got)
	}
	for i := offWord1; i < headSize; i++ {
		if b[i] != 0 {
			t.Errorf("header byte %d is %#x: not padding", i, b[i])
		}
	}
	if offWord1+4 > offType || offType >= headSize || fLen+4 > offWord1 {
		t.Errorf("head fields overlap: word1 at %d, type at %d, length at %d", offWord1, offType, fLen)
	}
}

// TestLayoutSections: the sections of a segment are page-aligned, in
// order, and do not overlap.
func TestLayoutSections(t *testing.T) {
	l := layoutFor(5, 1<<16, 1000, 1<<10)
	offs := []uint64{0, l.boundOff, l.regionsOff, l.ringsOff, l.size}
	for i := 1; i < len(offs); i++ {
		if offs[i]%pageSize != 0 || offs[i] < offs[i-1] {
			t.Fatalf("sections at %v: not page-aligned and increasing", offs)
		}
	}
	if l.boundOff < ringTableOff+4*5 || l.regionsOff-l.boundOff < 8*16 || l.ringsOff-l.regionsOff < 32<<10 || l.size-l.ringsOff < 5*(1<<16+ringDataOff) {
		t.Errorf("layout %+v: a section is too small", l)
	}
}

// TestRingLock: the deliverer and a drain exclude each other on take; a
// second deliverer is refused; releases clear only their own bits.
func TestRingLock(t *testing.T) {
	var l ringLock
	if !l.tryDeliver() || l.v.Load() != lkDeliver|lkTake {
		t.Fatalf("tryDeliver on a free lock: state %b", l.v.Load())
	}
	if l.tryDeliver() {
		t.Fatal("a second deliverer got the lock")
	}
	l.unlockTake() // the deliverer calls Receive
	l.lockTake()   // a drain from inside it
	if l.v.Load() != lkDeliver|lkTake {
		t.Fatalf("drain under a deliverer: state %b", l.v.Load())
	}
	l.unlockTake()
	l.unlockDeliver(false)
	if l.v.Load() != 0 {
		t.Fatalf("after both released: state %b", l.v.Load())
	}
	// A deliverer waits for a drain that holds take.
	l.lockTake()
	got := make(chan bool)
	go func() { got <- l.tryDeliver() }()
	select {
	case <-got:
		t.Fatal("tryDeliver returned while a drain held take")
	case <-time.After(10 * time.Millisecond):
	}
	l.unlockTake()
	if !<-got {
		t.Fatal("tryDeliver after the drain: refused")
	}
	l.unlockDeliver(true)
	if l.v.Load() != 0 {
		t.Fatalf("after unlockDeliver(true): state %b", l.v.Load())
	}
}

// TestMonoNow: monoNow reads CLOCK_MONOTONIC, the clock every process of
// the node shares (a split Put's record carries it from the sender to the
// owner): between two readings of that clock by the kernel, in
// nanoseconds, not a clock of this process's own.
func TestMonoNow(t *testing.T) {
	var before, after unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &before); err != nil {
		t.Skipf("CLOCK_MONOTONIC: %v", err)
	}
	now := monoNow()
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &after); err != nil {
		t.Fatal(err)
	}
	// monoOrigin's error is half a system call; a millisecond is far more.
	if slack := int64(time.Millisecond); now < before.Nano()-slack || now > after.Nano()+slack {
		t.Errorf("monoNow %d, CLOCK_MONOTONIC from %d to %d", now, before.Nano(), after.Nano())
	}
}
