//go:build linux

package shm

import (
	"math"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
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
// the producer finds the waiter, bumps seq and calls FUTEX_WAKE. The
// sleeper waits only while seq still holds the value it read before adding
// itself, which the kernel checks atomically with queueing it: a bump
// before the wait makes the wait return at once, a bump after it comes
// with a wake.
func (t *Transport) Sleep(max time.Duration) {
	if max <= 0 || t.closed.Load() {
		return
	}
	h := t.self.hdr
	seq := h.seq.Load()
	h.waiters.Add(1)
	if !t.pending() && !t.closed.Load() {
		ts := unix.NsecToTimespec(int64(max))
		// Safety: &h.seq is a 4-byte aligned word of the mapping, which
		// stays mapped (Close replaces it with private pages, never
		// unmaps it); ts lives on this stack for the call.
		_, _, _ = unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(&h.seq)), futexWait, uintptr(seq),
			uintptr(unsafe.Pointer(&ts)), 0, 0)
	}
	h.waiters.Add(^uint32(0))
}

// pending reports whether this process may have something to do: a
// record in a ring or a queue, or a copied Get to answer.
func (t *Transport) pending() bool {
	for _, ir := range t.in {
		if ir.pending() {
			return true
		}
	}
	return t.gets.serving.Load() != 0
}

// wakeAll wakes every goroutine sleeping on the segment h heads.
func wakeAll(h *segHeader) {
	h.seq.Add(1)
	// Safety: as in Sleep, the word stays mapped.
	_, _, _ = unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(&h.seq)), futexWake, math.MaxInt32, 0, 0, 0)
}
