//go:build linux

package shm

import (
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/fibermpi/fibermpi/rdma"
)

// Split Puts. One process_vm_writev moves a large Put at 7.3–8.7 GB/s on
// the development machine, however the host places the two processes;
// the rings go faster (16–19 GB/s) only with the two CPUs close, and lose
// (3.1–4.6 GB/s) with them far apart (pace.go). Two copiers attached at
// once, the sender writing the first half by process_vm_writev while the
// owner reads the second by process_vm_readv, measured 12–16 GB/s with the
// CPUs far apart as with them close (a throwaway two-process program,
// session 20 of BENCHMARKS.md, issue 12). So where the kernel allows
// cross-memory attach, the way pace sets against the rings is this one: a
// started Put of at least paceMin bytes
//
//   - pins its source and writes a recRead record (the registration, the
//     offset and length of the second part, the part's address in the
//     sender) into the owner's ring, and wakes the owner; the second part
//     is the second half, or the last splitOwnerMax bytes of a longer Put;
//   - writes the first part itself, then returns pending;
//   - the owner's Progress, taking the record in ring order, reads the
//     second part into its registration and counts it in the ring's
//     ringCtl.reads (a read that fails sets ringCtl.readFailed first),
//     with its time in ringCtl.readTook for the sender's pace;
//   - the sender's Progress ends the Put (PutDone) once its own part is
//     written and reads has reached the record's number.
//
// The owner takes no part in the endpoint protocol's messages: the Done
// the sender sends from PutDone follows the recRead in the same ring, and
// its read is over by then. A read that failed (the owner may not attach
// to the sender, although the sender may attach to it) makes the sender
// write the rest of that Put and of every later one itself, and split no
// more towards that owner.
//
// An owner that does not run its Progress (a long computation) would hold
// the Put up. So the record has a state word: the owner takes the record
// (fState 0 → 1) before it reads; a sender whose own part has been
// written for attachAfter while the read has not ended cancels the record
// (0 → 2) and writes the rest itself, as a Put through the rings does when
// its ring stays full; the owner skips a cancelled record (and counts
// it). The record stays in the ring until the owner is past it, so the
// sender may touch it until then.
//
// Between two processes that both send large messages to each other at
// once, both CPUs are busy copying already: there the owner's read only
// takes time from its own sends, and bibw at 1 MiB measured 21.1 → 18.9
// GB/s with the CPUs close (session 20). So a Put is not split for
// bothWindow after the owner started a large Put of its own towards this
// process while one of this process's large Puts towards it ran, attached
// or through the rings (ringCtl.bulk counts the owner's large Puts); it
// goes by one process_vm_writev, whatever pace measured (chooseAttach):
// through the rings each CPU would copy every byte twice. Messages that
// only alternate (a ping-pong: each side sends once the other's message
// is in) never overlap so, and stay split, or in the rings.
const bothWindow = 10 * time.Millisecond

// overlapped notes, with o.mu held, that a Put towards o's owner that began
// when the owner had started seen large Puts ends at now: if the owner
// started another meanwhile, the two send large messages both ways at once.
func (o *outRing) overlapped(seen uint64, now time.Time) {
	if o.dead {
		return // the memory is gone
	}
	if o.back.ctl.bulk.Load() != seen {
		o.bothAt = now
	}
}

// noteOverlap is overlapped, now, for a caller that does not hold o.mu.
func (o *outRing) noteOverlap(seen uint64) {
	o.mu.lock()
	o.overlapped(seen, time.Now())
	o.mu.unlock()
}

// bothWays reports, with o.mu held, whether o's owner was seen sending
// large messages to this process at the same time as this process to it,
// within bothWindow before now.
func (o *outRing) bothWays(now time.Time) bool {
	return !o.bothAt.IsZero() && now.Sub(o.bothAt) < bothWindow
}

// bulk counts a Put of n bytes towards o's owner in the ring's control
// block if it is large (the owner's overlapped looks at it).
func (o *outRing) bulk(n int) {
	if n >= paceMin {
		o.ctl.bulk.Add(1)
	}
}

// attachWatched is attachPut, noting whether the owner started a large Put
// towards this process meanwhile.
func (o *outRing) attachWatched(r rdma.Region, off uint64, src []byte, measure bool) error {
	seen := o.back.ctl.bulk.Load()
	err := o.attachPut(r, off, src, measure)
	o.noteOverlap(seen)
	return err
}

// splitPut is a started Put split with its owner, under outRing.mu.
type splitPut struct {
	seq   uint64      // its recRead's number in the ring (outRing.reads)
	r     rdma.Region // the owner's registration
	off   uint64      // where the Put starts in it
	src   []byte      // the whole Put; the owner reads src[at:]
	at    int
	done  rdma.PutDone
	pin   *runtime.Pinner // src, while the owner may read it
	wrote time.Duration   // how long writing it took
	err   error           // of the sender's part
	state *atomic.Uint32  // the record's state word (fState)
	since time.Time       // when the sender's part was written (zero: not yet)
	seen  uint64          // the owner's large Puts when this one began (ringCtl.bulk)
	// measure: pace measures this Put (putPace.choose).
	measure bool
}

// States of a recRead record (its fState word).
const (
	readWaiting   = 0
	readTaken     = 1 // by the owner, who reads
	readCancelled = 2 // by the sender, who writes the rest itself
)

// recState returns the state word of the recRead record rec.
func recState(rec []byte) *atomic.Uint32 {
	// Safety: records start on 64-byte boundaries of a page-aligned
	// mapping, so the word at fState is 4-aligned; it stays mapped while
	// the transport is open, and nobody but the record's sender and owner
	// touches it while the record is in the ring.
	return (*atomic.Uint32)(unsafe.Pointer(&rec[fState]))
}

// splitOwnerMax bounds the owner's part of a split Put. The owner reads
// its part in one process_vm_readv while it takes the record from its
// ring, and the records behind it wait meanwhile: at about 8 GB/s, 4 MiB
// holds them up for half a millisecond.
const splitOwnerMax = 4 << 20

// splitAt is where a split Put of n bytes hands over to the owner: the
// half, on a page, or less where the owner's part would exceed
// splitOwnerMax.
func splitAt(n int) int { return max(n/2&^(pageSize-1), n-splitOwnerMax) }

// startSplit starts a split Put of src at off of r into o's process
// (StartPut, once pace chose the way by attach). With no room in the ring
// for the record, with started Puts through the rings still being written
// (started Puts go in order), once the owner failed a read, or while the
// owner sends large messages to this process at the same time (bothWays),
// it writes the whole Put by one process_vm_writev instead (pending
// false).
func (t *Transport) startSplit(o *outRing, r rdma.Region, off uint64, src []byte, done rdma.PutDone, measure bool) (bool, error) {
	at := splitAt(len(src))
	p := splitPut{r: r, off: off, src: src, at: at, done: done, seen: o.back.ctl.bulk.Load(), measure: measure}
	o.mu.lock()
	if o.dead {
		o.mu.unlock()
		return false, rdma.ErrClosed
	}
	size := uint64(recordSize(stampSize))
	pos, ok := uint64(0), !o.noSplit && len(o.puts) == 0 && !o.bothWays(time.Now())
	if ok {
		pos, ok = o.reserve(size)
	}
	if !ok {
		o.mu.unlock()
		return false, o.attachWatched(r, off, src, measure)
	}
	// Pinned before the record tells the owner where the bytes are.
	p.pin = new(runtime.Pinner)
	p.pin.Pin(&src[0])
	rec := o.data[pos : pos+size]
	le.PutUint64(rec[fRegAddr:], r.Addr)
	le.PutUint64(rec[fRegLen:], r.Len)
	le.PutUint64(rec[fOff:], off+uint64(at))
	le.PutUint64(rec[fN:], uint64(len(src)-at))
	le.PutUint64(rec[fSrc:], bufAddr(src[at:]))
	putHead(rec, recRead, r.Key, stampSize)
	p.state = recState(rec)
	p.state.Store(readWaiting)
	le.PutUint64(rec[headSize:], uint64(monoNow())) // 0 without the clock
	o.publish(size)
	o.reads++
	p.seq = o.reads
	o.splits = append(o.splits, p)
	t.putting.Add(1)
	o.mu.unlock()
	o.wake()

	began := time.Now()
	err := o.vm(unix.ProcessVMWritev, src[:at], r.Addr+off)
	now := time.Now()
	o.mu.lock()
	for i := range o.splits {
		if q := &o.splits[i]; q.seq == p.seq {
			q.wrote, q.err, q.since = now.Sub(began), err, now
			break
		}
	}
	o.mu.unlock()
	return true, nil
}

// endSplits ends, with worker w, the split Puts into o's process whose
// two parts are written, in order, and returns how many it ended.
func (t *Transport) endSplits(w int, o *outRing) int {
	ended := 0
	for {
		o.mu.lock()
		if o.dead || len(o.splits) == 0 || o.splits[0].since.IsZero() {
			o.mu.unlock()
			return ended
		}
		p := o.splits[0]
		cancelled := false
		if o.ctl.reads.Load() < p.seq {
			// The owner has not read its part: cancel the read if it has
			// not taken the record and has let it wait long enough.
			if time.Since(p.since) <= t.splitWait || !p.state.CompareAndSwap(readWaiting, readCancelled) {
				o.mu.unlock()
				return ended
			}
			cancelled = true
		}
		o.splits[0] = splitPut{}
		o.splits = o.splits[1:]
		o.overlapped(p.seen, time.Now())
		failed := !cancelled && o.ctl.readFailed.Load() != 0
		if failed {
			o.noSplit = true
		}
		t.putting.Add(-1)
		o.mu.unlock()
		err := p.err
		switch {
		case err != nil:
		case failed || cancelled:
			// This Put's read may have been the one that failed.
			err = o.vm(unix.ProcessVMWritev, p.src[p.at:], p.r.Addr+p.off+uint64(p.at))
			if cancelled && err == nil && p.measure {
				// What the Put cost: the sender's part, the wait for the
				// owner, and the rest written here.
				o.recordPut(true, len(p.src), p.wrote+time.Since(p.since))
			}
		default:
			// The two copies ran at once: the slower one is the Put's
			// time, the owner's its service time (read), so that its
			// time to notice the record counts. (From the start to the
			// end seen here would count the sender's work between its
			// Progress calls too.) A Put whose slot a later read took
			// over goes unmeasured.
			if took, ok := tookOf(o.ctl.readTook[p.seq%readSlots].Load(), p.seq); ok && p.measure {
				o.recordPut(true, len(p.src), max(p.wrote, took))
			}
		}
		p.pin.Unpin()
		p.done.PutDone(w, err)
		ended++
	}
}

// read carries out a recRead record from ir's producer: it reads n bytes
// at src in the producer's memory into this process's registration r at
// off, then counts the read in the ring (a failed one after setting
// readFailed), with its service time in ringCtl.readTook: from stamp, the
// producer's monoNow when it published the record, or from the end of
// this ring's previous read if that came later, to the read's end. So the
// owner's delay in noticing the record counts, and the reads of the
// records queued before it do not: in a window of split Puts, one stall
// of the owner's counts once, not once for every record it held up. It
// is at least the read's own time, whatever the two processes' clock
// offsets, and that alone where either process could not read
// CLOCK_MONOTONIC. A registration withdrawn meanwhile takes nothing, as
// for recPut; a record its sender cancelled, nothing at all. The caller
// holds ir's take.
func (t *Transport) read(ir *inRing, rec []byte, r rdma.Region, off, n, src uint64, stamp int64) {
	seq := ir.ctl.reads.Load() + 1 // this record's number: only the consumer counts
	defer ir.ctl.reads.Add(1)
	if !recState(rec).CompareAndSwap(readWaiting, readTaken) {
		return
	}
	o := t.out[ir.from]
	ok := o != nil && o.cma && rdma.CheckBounds(r, off, int(n)) == nil
	if ok {
		_ = t.local(r, off, int(n), func(dst []byte) {
			began := time.Now()
			ok = o.vm(unix.ProcessVMReadv, dst, src) == nil
			took := time.Since(began)
			if now := monoNow(); stamp != 0 && now != 0 {
				took = max(took, time.Duration(now-max(stamp, ir.readEnd)))
				ir.readEnd = now
			}
			ir.ctl.readTook[seq%readSlots].Store(packTook(seq, took))
		})
	}
	if !ok {
		ir.ctl.readFailed.Store(1)
	}
}

// The layout of ringCtl.readTook: readSlots words, each a read's number
// (its low readSeqBits bits) above its service time in nanoseconds
// (readTookBits bits, up to 18 minutes).
const (
	readSlots    = 8
	readTookBits = 40
	readSeqBits  = 64 - readTookBits
)

// packTook is the readTook word of read seq, whose service time was d.
func packTook(seq uint64, d time.Duration) uint64 {
	return seq<<readTookBits | min(uint64(max(d, 0)), 1<<readTookBits-1)
}

// tookOf returns the service time in the readTook word w, if w is read
// seq's.
func tookOf(w, seq uint64) (time.Duration, bool) {
	if w>>readTookBits != seq&(1<<readSeqBits-1) {
		return 0, false
	}
	return time.Duration(w & (1<<readTookBits - 1)), true
}

// stampSize is the data of a recRead record: the producer's monoNow when
// it published the record, so that the owner's time counts from there.
const stampSize = 8

// monoBase and monoAt tie this process's monotonic clock (time.Now's
// reading, relative to the process) to CLOCK_MONOTONIC, which every
// process of the node shares: monoNow is CLOCK_MONOTONIC at monoBase plus
// the time since, with no system call per reading.
var monoBase, monoAt = monoOrigin()

// monoOrigin reads CLOCK_MONOTONIC between two readings of time.Now and
// returns their middle and it: the error is at most half the system
// call's time (well under a microsecond; a split Put takes tens).
func monoOrigin() (time.Time, int64) {
	before := time.Now()
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) != nil {
		return before, 0 // monoNow is then 0: read times the copy alone
	}
	after := time.Now()
	return before.Add(after.Sub(before) / 2), ts.Nano()
}

// monoNow returns CLOCK_MONOTONIC in nanoseconds, as the processes of
// this node can compare it (monoBase), or 0 if this process could not
// read that clock.
func monoNow() int64 {
	if monoAt == 0 {
		return 0
	}
	return monoAt + int64(time.Since(monoBase))
}
