//go:build linux

package fiber

import (
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Futex operations on a word private to this process (linux/futex.h).
const (
	futexWaitPrivate = 0 | 128 // FUTEX_WAIT | FUTEX_PRIVATE_FLAG
	futexWakePrivate = 1 | 128 // FUTEX_WAKE | FUTEX_PRIVATE_FLAG
)

// useFutex makes new workers sleep on a futex (true) or on a channel, the
// portable way; a variable so that tests run both on Linux.
var useFutex = true

// futexSleep blocks the calling OS thread while word holds 0, for at most d
// if d > 0. It may return early (a signal, a spurious wake-up): callers
// re-check their condition. The thread blocks in the kernel through
// syscall.Syscall, so the Go runtime sees a blocking system call and may
// hand the thread's P to other goroutines meanwhile.
func futexSleep(word *atomic.Uint32, d time.Duration) {
	var ts *unix.Timespec
	if d > 0 {
		t := unix.NsecToTimespec(d.Nanoseconds())
		ts = &t
	}
	// Safety: word is a field of a heap-allocated worker, which does not
	// move and outlives the call; the kernel only reads it (and ts).
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(word)), futexWaitPrivate, 0,
		uintptr(unsafe.Pointer(ts)), 0, 0)
}

// futexWake wakes the thread sleeping on word, if any. FUTEX_WAKE never
// blocks, so it is a raw system call, without telling the Go scheduler (as
// the runtime's own futexwakeup does).
func futexWake(word *atomic.Uint32) {
	// Safety: as in futexSleep; FUTEX_WAKE only uses the address as a key.
	unix.RawSyscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(word)), futexWakePrivate, 1, 0, 0, 0)
}

// pause is an idle worker's wait between two looks at its run queue once it
// has spun hot for a while: sched_yield, which returns at once if nothing
// else wants the CPU and otherwise lets that run first. When a machine has
// more runnable threads than cores, the thread a worker waits for may be
// queued behind it on the same CPU; a busy wait would hold the CPU until
// the end of its time slice, milliseconds, while a yield hands it over.
// The Go scheduler is not involved: the worker keeps its P.
func pause(int) {
	unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
}
