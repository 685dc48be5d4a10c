//go:build linux

package shm

import (
	"math/rand/v2"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/fibermpi/fibermpi/packet"
	"github.com/fibermpi/fibermpi/rdma"
)

// ringPair is a ring's producer and consumer sides over an anonymous
// mapping, without a segment: what reserve, publish, peekRing and
// publishHead do between them, in one goroutine.
type ringPair struct {
	o  *outRing
	ir *inRing
}

func newRingPair(t testing.TB, size int) ringPair {
	mem, err := unix.Mmap(-1, 0, ringDataOff+size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Munmap(mem) })
	// Safety: the mapping is page-aligned and longer than ringCtl.
	ctl := (*ringCtl)(unsafe.Pointer(&mem[0]))
	data := mem[ringDataOff:]
	n := uint64(size)
	return ringPair{
		o:  &outRing{ctl: ctl, data: data, size: n, mask: n - 1},
		ir: &inRing{ctl: ctl, data: data, size: n, mask: n - 1},
	}
}

// send writes record id: an eager packet of n payload bytes, the
// payload's first four bytes id and the rest 0xff, whose envelope (its
// context) and address come from ringRun(id), so that records in a row
// share them. It reports false when the ring has no room.
func (rp ringPair) send(id uint32, n int) bool {
	size := uint64(recordSize(n))
	off, ok := rp.o.reserve(size)
	if !ok {
		return false
	}
	rec := rp.o.data[off : off+size]
	env, addr := ringRun(id)
	packet.EncodeEager(rec[:headSize], env, 0, 0, 1, n)
	for i := headSize; i < len(rec); i++ {
		rec[i] = 0xff
	}
	if n >= 4 {
		le.PutUint32(rec[headSize:], id)
	}
	rp.o.publishPacket(addr, rec) // commit less the lock and the wake-up: no segment here
	return true
}

// ringRun is record id's envelope (the context) and address: runs of
// three records share an envelope, and runs of seven an address; both
// come back, so that a stale head in the ring (behind a skip) may look
// like the next record of a run.
func ringRun(id uint32) (uint32, rdma.Addr) { return id / 3 % 5, rdma.Addr(id / 7 % 2) }

// ringModel drives a ringPair from ops (each byte one operation) and
// checks it against a queue of the records sent: every record arrives
// once, in order, with its length, word 1 and payload; the ring is empty
// exactly when the model says so; pending never says false while a record
// waits. It returns the laps the producer made.
func ringModel(t *testing.T, size int, ops []byte) (laps, multi uint64) {
	rp := newRingPair(t, size)
	type sent struct {
		id uint32
		n  int
	}
	var queue []sent
	next := uint32(1)
	check := func(want sent, payload []byte, word1 uint32, head []byte) {
		t.Helper()
		env, addr := ringRun(want.id)
		ctx, _, _, _, _, ok := packet.PeekEager(head)
		if word1 != uint32(addr) || len(payload) != want.n || !ok || ctx != env {
			t.Fatalf("record for %d with envelope %d (%v), %d bytes; want record %d: for %d with envelope %d, %d bytes", word1, ctx, ok, len(payload), want.id, addr, env, want.n)
		}
		if want.n >= 4 && le.Uint32(payload) != want.id {
			t.Fatalf("record %d carries payload of %d", want.id, le.Uint32(payload))
		}
	}
	take := func(max int, runs bool) {
		handled := 0
		for handled < max {
			rec, typ, n, word1, ok, corrupt := rp.ir.peekRing()
			if corrupt {
				t.Fatalf("corrupt record at head %d", rp.ir.head)
			}
			if !ok {
				break
			}
			if len(queue) == 0 {
				t.Fatalf("a record (type %d, word 1 %d) where none was sent", typ, word1)
			}
			if typ != recPacket {
				t.Fatalf("record type %d, want a packet", typ)
			}
			check(queue[0], rec[headSize:headSize+n], word1, rec)
			queue = queue[1:]
			rp.ir.head += uint64(len(rec))
			handled++
			if !runs || handled == max || !rp.ir.mayContinue(rp.ir.head, (*[headSize]byte)(rec)) {
				continue
			}
			// As direct after a first message taken: gather the run
			// behind it, take a part of it.
			run := rp.ir.gather((*[headSize]byte)(rec), max-handled)
			if len(run) > len(queue) {
				t.Fatalf("a run of %d records with %d sent", len(run), len(queue))
			}
			for i, d := range run {
				// Safety: d is a payload in the ring's mapping, headSize
				// bytes after its record's start, which holds its head.
				head := unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(d)), -headSize)), headSize)
				check(queue[i], d, le.Uint32(head[offWord1:]), head)
				if !packet.SameEager((*[headSize]byte)(head), (*[headSize]byte)(rec)) || le.Uint32(head[offWord1:]) != word1 {
					t.Fatalf("record %d, for %d, in a run of records for %d with another envelope or address", queue[i].id, le.Uint32(head[offWord1:]), word1)
				}
			}
			if len(run) > 1 {
				multi++
			}
			k := int(queue[0].id) % (len(run) + 1)
			for _, d := range run[:k] {
				rp.ir.head += uint64(recordSize(len(d)))
			}
			queue = queue[k:]
			handled += k
		}
		if len(queue) > 0 && handled < max {
			t.Fatalf("ring empty with %d records sent and not taken", len(queue))
		}
		rp.ir.publishHead()
	}
	for _, op := range ops {
		switch op % 4 {
		case 0, 1: // send a record of up to 5 lines
			n := int(op/4) * 4
			if rp.send(next, n) {
				queue = append(queue, sent{next, n})
				next++
			}
		case 2: // take a few, as takeBatch does, one by one or by runs
			take(int(op/8)%8+1, op&4 != 0)
		case 3: // a drain: take all
			take(len(queue)+1, false)
		}
		if len(queue) > 0 && !rp.ir.pending() {
			t.Fatalf("pending false with %d records waiting", len(queue))
		}
	}
	take(len(queue)+1, false)
	if rp.ir.pending() {
		t.Fatal("pending true with the ring consumed and its head published")
	}
	return rp.o.tail / rp.o.size, multi
}

// TestRingLaps: many laps of small rings, records of one to five lines
// and skip records, taken in batches of a few and all at once.
func TestRingLaps(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		ops := make([]byte, 5000)
		for i := range ops {
			ops[i] = byte(r.UintN(256))
		}
		if _, multi := ringModel(t, 4096, ops); multi == 0 {
			t.Error("no run of two or more records was gathered")
		}
	}
	ops := make([]byte, 60000)
	for i := range ops {
		ops[i] = byte(r.UintN(256))
	}
	if laps, _ := ringModel(t, 2048, ops); laps < 512 {
		t.Errorf("%d laps, want hundreds", laps)
	}
}

// FuzzRing: ringModel over the fuzzer's operations.
func FuzzRing(f *testing.F) {
	f.Add([]byte{0, 4, 8, 2, 3, 255, 254, 253, 2, 1, 5, 9, 3})
	f.Add([]byte("0\xdd\xdd\xdd\xdd\xdd\xdd")) // fills the ring exactly
	f.Fuzz(func(t *testing.T, ops []byte) { _, _ = ringModel(t, 2048, ops) })
}
