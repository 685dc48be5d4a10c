//go:build linux

package shm

import (
	"math"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/fibermpi/fibermpi/rdma"
)

// futex(2) operations. Without FUTEX_PRIVATE_FLAG: the word is in memory
// shared between processes, and the kernel keys waiters by the page, not
// by this process's address space.
const (
	futexWait = 0
	futexWake = 1
)

// Sleep blocks until an arrival may be pending for this process or max
// has passed (rdma.Sleeper). It parks the calling goroutine's OS thread in
// the kernel: call it from a plain goroutine or from a worker that has
// nothing to run, never from a fiber. It returns at once if a ring already
// holds a record, after Close, and for max <= 0; it may return early
// (a wake-up meant for another sleeper, a signal).
//
// The lost wake-up argument (see also the package documentation): the
// sleeper adds itself to waiters and then looks at its rings; a producer
// publishes its record (tail) and then looks at waiters. Both are
// sequentially consistent atomic operations on shared memory (XCHG / LOCK
// XADD on amd64, full barriers), so at least one of the two sees the
// other's write: either the sleeper finds the record and does not wait, or
// the producer finds the waiter, bumps seq and calls FUTEX_WAKE (for one
// sleeper: see wakeOne). The
// sleeper waits only while seq still holds the value it read before adding
// itself, which the kernel checks atomically with queueing it: a bump
// before the wait makes the wait return at once, a bump after it comes
// with a wake.
func (t *Transport) Sleep(max time.Duration) {
	if max <= 0 {
		return
	}
	word, seq, ok := t.Arm()
	if ok {
		ts := unix.NsecToTimespec(int64(max))
		// Safety: word is a 4-byte aligned word of the mapping, which
		// stays mapped (Close replaces it with private pages, never
		// unmaps it); ts lives on this stack for the call.
		_, _, _ = unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(word)), futexWait, uintptr(seq),
			uintptr(unsafe.Pointer(&ts)), 0, 0)
	}
	t.Disarm()
}

// Arm is the first half of Sleep, for a sleeper that waits on more than
// this transport (rdma.Alarm; a fiber worker also waits on its own futex
// word, with futex_waitv): it reads the futex word, then announces a
// sleeper, then looks at the rings, and returns the word (in shared
// memory: wait on it without FUTEX_PRIVATE_FLAG), the value to wait while
// it holds, and ok false if a record is there already or the transport is
// closed. Call Disarm after the wait, whatever ok is. Neither blocks.
func (t *Transport) Arm() (word *atomic.Uint32, val uint32, ok bool) {
	h := t.self.hdr
	val = h.seq.Load()
	h.waiters.Add(1)
	return &h.seq, val, !t.closed.Load() && !t.pending()
}

// Disarm withdraws the sleeper Arm announced.
func (t *Transport) Disarm() { t.self.hdr.waiters.Add(^uint32(0)) }

// Alarm returns t (rdma.AlarmSource).
func (t *Transport) Alarm() rdma.Alarm { return t }

// pending reports whether this process may have something to do: a
// record in a ring or a queue, a copied Get to answer, or a started Put
// to write (its owner frees room without waking anyone).
func (t *Transport) pending() bool {
	for _, ir := range t.in {
		if ir.pending() {
			return true
		}
	}
	return t.gets.serving.Load() != 0 || t.putting.Load() != 0
}

// wakeOne wakes one thread sleeping on the segment h heads: enough for
// an arrival, which one thread's Progress delivers (a woken fiber worker
// wakes the workers of the fibers it makes runnable by itself). Waking
// them all would make every worker of a large node spin for its idle
// time after each arrival. A sleeper that read seq before the bump and
// has not queued yet does not wait at all.
func wakeOne(h *segHeader) {
	h.seq.Add(1)
	// Safety: as in Sleep, the word stays mapped.
	_, _, _ = unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(&h.seq)), futexWake, 1, 0, 0, 0)
}

// wakeAll wakes every thread sleeping on the segment h heads (Close).
func wakeAll(h *segHeader) {
	h.seq.Add(1)
	// Safety: as in Sleep, the word stays mapped.
	_, _, _ = unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(&h.seq)), futexWake, math.MaxInt32, 0, 0, 0)
}
