//go:build linux

package shm

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/cpu"
	"golang.org/x/sys/unix"

	"github.com/fibermpi/fibermpi/rdma"
)

// A segment is one process's inbound memory, a file in Config.Dir mapped
// by its owner and by every peer on the node:
//
//	offset 0          segHeader (layout, pid, the wake-up words), then the
//	                  table of ring senders (one uint32 rank per ring)
//	boundOff          bitmap of the owner's bound addresses (MaxAddrs bits)
//	regionsOff        table of the owner's registrations (MaxRegions slots)
//	ringsOff          ring 0 (the owner's own), ring 1 … (one per peer),
//	                  each a ringCtl then RingSize bytes of records
//
// Every section starts on a page. The owner writes the header, the ring
// table and the zeroed rings before the first fence; peers read them only
// after it, and write only the rings they produce into (records and tail).
const (
	segMagic   = 0x3168_6d73_6970_6d66 // "fmpishm1", little-endian
	segVersion = 4                     // 4: ringCtl.readTook, a service time per read
	pageSize   = 4096
	// ringTableOff is where the table of ring senders starts.
	ringTableOff = 1024
	// ringDataOff is where a ring's records start, after its ringCtl.
	ringDataOff = 512
)

// segHeader is the start of every segment.
type segHeader struct {
	magic      uint64
	version    uint32
	rank       uint32
	pid        uint64
	size       uint64
	payload    uint64
	ringSize   uint64
	nrings     uint64
	maxAddrs   uint64
	maxRegions uint64
	boundOff   uint64
	regionsOff uint64
	ringsOff   uint64
	ringStride uint64

	_ cpu.CacheLinePad
	// waiters counts the owner's goroutines in Sleep (Add by the sleeper
	// before it re-checks its rings, Load by a producer after it
	// publishes a record: see doc.go, "Sleeping").
	waiters atomic.Uint32
	// seq is the futex word: a producer that saw waiters != 0 adds one
	// and wakes a waiter (Close wakes them all); a sleeper waits while it
	// holds the value it read before announcing itself.
	seq atomic.Uint32
	_   cpu.CacheLinePad
}

// ringCtl holds the two indices of one ring, each on its own cache line:
// positions in bytes since the ring was made, never wrapped (a record is
// at position % RingSize); and, on a third line, what the two tell each
// other about large Puts (split.go): the split Puts the consumer carried
// out, and the producer's count of its large Puts.
type ringCtl struct {
	_ cpu.CacheLinePad
	// tail is the end of the published records: Stored by the producer
	// (under its send lock) after it wrote them, Loaded by the consumer
	// before it reads them.
	tail atomic.Uint64
	_    cpu.CacheLinePad
	// head is the end of the records consumed: Stored by the consumer
	// after it copied them out, Loaded by the producer before it writes
	// over them.
	head atomic.Uint64
	_    cpu.CacheLinePad
	// reads counts the recRead records the consumer has carried out
	// (read its part of a split Put, or failed to, or skipped it as
	// cancelled): Added by the consumer after the read, Loaded by the
	// producer, which then may reuse the bytes read.
	reads atomic.Uint64
	// readFailed is set (1) by the consumer before it counts a read that
	// failed, and never cleared: the producer then writes the rest of
	// every split Put it sees end itself, and splits no more.
	readFailed atomic.Uint32
	// readTook holds, for the read of recRead record seq (counted from 1
	// as reads counts them), at readTook[seq%readSlots], the owner's
	// service time of that read (split.go, read): seq's low readSeqBits
	// bits above readTookBits bits of nanoseconds. Stored by the consumer
	// before it counts the read in reads; Loaded by the producer once
	// reads has reached seq. A slot overwritten meanwhile by a later
	// read holds another seq, and that Put goes unmeasured.
	readTook [readSlots]atomic.Uint64
	// bulk counts the producer's Puts of at least paceMin towards the
	// consumer: Added by the producer as each starts, Loaded by the
	// consumer around its own Puts towards the producer (split.go,
	// bothWays).
	bulk atomic.Uint64
	_    cpu.CacheLinePad
}

// regSlot describes one registration to peers. The owner stores addr and
// len of a free slot (key 0) before it Stores the key; it Stores key 0
// before it reuses the slot. A peer Loads key, addr, len, key: equal keys
// mean addr and len belong to that key (a key is not reused; see
// Register).
type regSlot struct {
	key  atomic.Uint32
	_    uint32
	addr atomic.Uint64
	len  atomic.Uint64
	_    uint64
}

// segLayout is the layout of a segment: sizes and section offsets.
type segLayout struct {
	nrings, ringSize, maxAddrs, maxRegions     uint64
	boundOff, regionsOff, ringsOff, ringStride uint64
	size                                       uint64
}

func pageAlign(n uint64) uint64 { return (n + pageSize - 1) &^ (pageSize - 1) }

func layoutFor(nrings, ringSize, maxAddrs, maxRegions uint64) segLayout {
	l := segLayout{nrings: nrings, ringSize: ringSize, maxAddrs: maxAddrs, maxRegions: maxRegions}
	l.boundOff = pageAlign(ringTableOff + 4*nrings)
	l.regionsOff = l.boundOff + pageAlign(8*((maxAddrs+63)/64))
	l.ringsOff = l.regionsOff + pageAlign(maxRegions*uint64(unsafe.Sizeof(regSlot{})))
	l.ringStride = pageAlign(ringDataOff + ringSize)
	l.size = l.ringsOff + nrings*l.ringStride
	return l
}

// segment is a mapped segment: the owner's own or a peer's.
type segment struct {
	mem     []byte
	hdr     *segHeader
	senders []uint32        // rank of the producer of each ring
	bound   []atomic.Uint64 // bit a set: address a is bound
	regions []regSlot
	lay     segLayout
	name    string
	// dev and ino identify the file (race builds key ring words by
	// them: race.go).
	dev, ino uint64
}

// segName is the file name of a process's segment.
func segName(job string, rank int) string { return fmt.Sprintf("fibermpi-%s-%d", job, rank) }

// mmapShared maps size bytes of fd, with their page tables filled in
// (MAP_POPULATE) if populate: otherwise the first lap of every ring pays a
// page fault per page in each of the two processes, which made the first
// 20 000 or so round trips of a job about 1.5 times slower than the later
// ones (fmpi-osu latency with OSU's warm-up: 0.50 against 0.34 µs). It
// costs the creator the allocation of the segment's pages at once. A
// peer's segment is mapped without, and only the ring this process writes
// is filled in (populateRing): filling in all of every peer's segment made
// each process's start cost grow with the square of the node's processes
// (fmpirun -n 32 of examples/hello: 1.4 s, nearly all of it in the kernel).
func mmapShared(fd int, size uint64, populate bool) ([]byte, error) {
	flags := unix.MAP_SHARED
	if populate {
		flags |= unix.MAP_POPULATE
	}
	p, err := unix.MmapPtr(fd, 0, nil, uintptr(size), unix.PROT_READ|unix.PROT_WRITE, flags)
	if err != nil {
		return nil, err
	}
	// Safety: the kernel mapped size bytes at p; they stay mapped (Close
	// replaces them with private pages, never unmaps them), so the slice
	// never points at unmapped memory. The memory is not the Go heap:
	// the slice hides no Go pointer from the GC.
	return unsafe.Slice((*byte)(p), size), nil
}

// createSegment creates, sizes and maps this process's segment; the file
// is new (a stale one from a job with the same id is an error).
func createSegment(dir, name string, lay segLayout) (*segment, error) {
	path := filepath.Join(dir, name)
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o600)
	if err != nil {
		if errors.Is(err, unix.EEXIST) {
			return nil, fmt.Errorf("shm: segment %s exists already (a job with the same id still running, or one that left it behind): %w", path, err)
		}
		return nil, fmt.Errorf("shm: creating segment %s: %w", path, err)
	}
	defer unix.Close(fd)
	if err := unix.Ftruncate(fd, int64(lay.size)); err != nil {
		_ = unix.Unlink(path)
		return nil, fmt.Errorf("shm: sizing segment %s to %d bytes: %w", path, lay.size, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		_ = unix.Unlink(path)
		return nil, fmt.Errorf("shm: stat of %s: %w", path, err)
	}
	mem, err := mmapShared(fd, lay.size, true)
	if err != nil {
		_ = unix.Unlink(path)
		return nil, fmt.Errorf("shm: mapping segment %s: %w", path, err)
	}
	s := &segment{mem: mem, lay: lay, name: path, dev: uint64(st.Dev), ino: uint64(st.Ino)}
	s.views()
	return s, nil
}

// openSegment maps a peer's segment and checks its header.
func openSegment(dir, name string, rank int, pid uint64) (*segment, error) {
	path := filepath.Join(dir, name)
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil, fmt.Errorf("shm: process %d's segment %s does not exist: is the process on this node? %w", rank, path, err)
		}
		return nil, fmt.Errorf("shm: opening process %d's segment %s: %w", rank, path, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("shm: stat of %s: %w", path, err)
	}
	if st.Size < int64(unsafe.Sizeof(segHeader{})) {
		return nil, fmt.Errorf("shm: segment %s has %d bytes: not a segment", path, st.Size)
	}
	mem, err := mmapShared(fd, uint64(st.Size), false)
	if err != nil {
		return nil, fmt.Errorf("shm: mapping %s: %w", path, err)
	}
	s := &segment{mem: mem, name: path, dev: uint64(st.Dev), ino: uint64(st.Ino)}
	// Safety: mem is at least a header long (checked above) and mapped
	// at a page boundary, so the header's words are aligned.
	h := (*segHeader)(unsafe.Pointer(&mem[0]))
	switch {
	case h.magic != segMagic || h.version != segVersion:
		err = fmt.Errorf("shm: %s is not a version %d segment", path, segVersion)
	case h.rank != uint32(rank) || h.pid != pid:
		err = fmt.Errorf("shm: %s belongs to rank %d pid %d, want rank %d pid %d", path, h.rank, h.pid, rank, pid)
	case h.size != uint64(st.Size):
		err = fmt.Errorf("shm: %s has %d bytes, its header says %d", path, st.Size, h.size)
	}
	if err == nil {
		s.lay = layoutFor(h.nrings, h.ringSize, h.maxAddrs, h.maxRegions)
		if s.lay != (segLayout{h.nrings, h.ringSize, h.maxAddrs, h.maxRegions, h.boundOff, h.regionsOff, h.ringsOff, h.ringStride, h.size}) {
			err = fmt.Errorf("shm: %s has a layout this version does not make", path)
		}
	}
	if err != nil {
		s.release()
		return nil, err
	}
	s.views()
	return s, nil
}

// views sets the typed views of the sections.
func (s *segment) views() {
	l := s.lay
	// Safety: every section lies inside mem (layoutFor computed size as
	// their sum) and starts on a page boundary of a page-aligned mapping,
	// so each typed view is aligned and in bounds. None of the types holds
	// Go pointers.
	s.hdr = (*segHeader)(unsafe.Pointer(&s.mem[0]))
	s.senders = unsafe.Slice((*uint32)(unsafe.Pointer(&s.mem[ringTableOff])), l.nrings)
	s.bound = unsafe.Slice((*atomic.Uint64)(unsafe.Pointer(&s.mem[l.boundOff])), (l.maxAddrs+63)/64)
	s.regions = unsafe.Slice((*regSlot)(unsafe.Pointer(&s.mem[l.regionsOff])), l.maxRegions)
}

// ring returns the control words and the record bytes of ring i.
func (s *segment) ring(i int) (*ringCtl, []byte) {
	off := s.lay.ringsOff + uint64(i)*s.lay.ringStride
	// Safety: ring i's control block is inside mem, page-aligned.
	ctl := (*ringCtl)(unsafe.Pointer(&s.mem[off]))
	return ctl, s.mem[off+ringDataOff : off+ringDataOff+s.lay.ringSize : off+ringDataOff+s.lay.ringSize]
}

// populateRing fills in the page tables of ring i, its control words and
// its records (MADV_POPULATE_WRITE, Linux 5.14), for the producer that
// mapped a peer's segment without (mmapShared). Where the kernel refuses,
// the ring's first lap faults its pages in instead.
func (s *segment) populateRing(i int) {
	off := s.lay.ringsOff + uint64(i)*s.lay.ringStride
	_ = unix.Madvise(s.mem[off:off+s.lay.ringStride], unix.MADV_POPULATE_WRITE)
}

// ringOf returns the index of the ring process rank produces into, or -1.
func (s *segment) ringOf(rank int) int {
	for i, r := range s.senders {
		if r == uint32(rank) {
			return i
		}
	}
	return -1
}

// isBound reports whether the owner has bound a.
func (s *segment) isBound(a rdma.Addr) bool {
	i := uint64(a) / 64
	return i < uint64(len(s.bound)) && s.bound[i].Load()&(1<<(a%64)) != 0
}

// setBound sets or clears a's bit (owner only).
func (s *segment) setBound(a rdma.Addr, on bool) {
	w, bit := &s.bound[a/64], uint64(1)<<(a%64)
	if on {
		w.Or(bit)
	} else {
		w.And(^bit)
	}
}

// region reports whether the owner's table holds a registration matching
// r: the same key, base and length.
func (s *segment) region(r rdma.Region) bool {
	if r.Key == 0 {
		return false
	}
	slot := &s.regions[uint64(r.Key)&(s.lay.maxRegions-1)]
	if slot.key.Load() != r.Key {
		return false
	}
	addr, n := slot.addr.Load(), slot.len.Load()
	return slot.key.Load() == r.Key && addr == r.Addr && n == r.Len
}

// release replaces the mapping with private zero pages: calls that race
// with Close read zeros and write into memory nobody reads, and never
// fault; the shared pages go back to the system once no process maps
// them. The address range stays reserved.
func (s *segment) release() {
	if len(s.mem) == 0 {
		return
	}
	// Safety: the range is the mapping made in mmapShared; MAP_FIXED
	// replaces exactly it.
	_, _ = unix.MmapPtr(-1, 0, unsafe.Pointer(&s.mem[0]), uintptr(len(s.mem)),
		unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_FIXED|unix.MAP_NORESERVE)
}

// unlink removes the segment's file; the mappings stay.
func unlink(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("shm: removing %s: %w", path, err)
	}
	return nil
}
