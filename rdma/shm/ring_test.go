//go:build linux

package shm

import (
	"math/rand/v2"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

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

// send writes a packet record of n payload bytes for address id, the
// payload's first four bytes id and the rest 0xff. It reports false when
// the ring has no room.
func (rp ringPair) send(id uint32, n int) bool {
	size := uint64(recordSize(n))
	off, ok := rp.o.reserve(size)
	if !ok {
		return false
	}
	rec := rp.o.data[off : off+size]
	clear(rec[:headSize])
	for i := headSize; i < len(rec); i++ {
		rec[i] = 0xff
	}
	le.PutUint32(rec[offPacketLen:], uint32(n))
	if n >= 4 {
		le.PutUint32(rec[headSize:], id)
	}
	rp.o.publishPacket(rdma.Addr(id), rec) // commit less the lock and the wake-up: no segment here
	return true
}

// ringModel drives a ringPair from ops (each byte one operation) and
// checks it against a queue of the records sent: every record arrives
// once, in order, with its length, word 1 and payload; the ring is empty
// exactly when the model says so; pending never says false while a record
// waits. It returns the laps the producer made.
func ringModel(t *testing.T, size int, ops []byte) (laps uint64) {
	rp := newRingPair(t, size)
	type sent struct {
		id uint32
		n  int
	}
	var queue []sent
	next := uint32(1)
	take := func(max int) {
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
			want := queue[0]
			queue = queue[1:]
			if typ != recPacket || word1 != want.id || n != want.n {
				t.Fatalf("record type %d word1 %d len %d, want a packet for %d of %d bytes", typ, word1, n, want.id, want.n)
			}
			if n >= 4 && le.Uint32(rec[headSize:]) != want.id {
				t.Fatalf("record %d carries payload of %d", want.id, le.Uint32(rec[headSize:]))
			}
			rp.ir.head += uint64(len(rec))
			handled++
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
		case 2: // take a few, as takeBatch does
			take(int(op/4)%8 + 1)
		case 3: // a drain: take all
			take(len(queue) + 1)
		}
		if len(queue) > 0 && !rp.ir.pending() {
			t.Fatalf("pending false with %d records waiting", len(queue))
		}
	}
	take(len(queue) + 1)
	if rp.ir.pending() {
		t.Fatal("pending true with the ring consumed and its head published")
	}
	return rp.o.tail / rp.o.size
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
		ringModel(t, 4096, ops)
	}
	ops := make([]byte, 60000)
	for i := range ops {
		ops[i] = byte(r.UintN(256))
	}
	if laps := ringModel(t, 2048, ops); laps < 512 {
		t.Errorf("%d laps, want hundreds", laps)
	}
}

// FuzzRing: ringModel over the fuzzer's operations.
func FuzzRing(f *testing.F) {
	f.Add([]byte{0, 4, 8, 2, 3, 255, 254, 253, 2, 1, 5, 9, 3})
	f.Add([]byte("0\xdd\xdd\xdd\xdd\xdd\xdd")) // fills the ring exactly
	f.Fuzz(func(t *testing.T, ops []byte) { _ = ringModel(t, 2048, ops) })
}
