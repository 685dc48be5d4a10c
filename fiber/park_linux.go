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

// futex_waitv(2) (Linux 5.16): struct futex_waitv and its flags.
type futexWaitv struct {
	val      uint64
	uaddr    uint64
	flags    uint32
	reserved uint32
}

const (
	futex2SizeU32 = 0x02
	futex2Private = 128
)

// haveWaitv is cleared the first time futex_waitv fails for want of the
// call (ENOSYS before Linux 5.16, EPERM under a seccomp filter): workers
// then sleep on their own word alone, and an Alarm only ends the sleep at
// its time limit.
var haveWaitv atomic.Bool

func init() { haveWaitv.Store(true) }

// waitv blocks the calling OS thread while own holds 0 and shared holds
// val, for at most d if d > 0, and reports false if futex_waitv is missing
// (nothing waited). own is private to this process, shared is in memory
// shared with others. It may return early: callers re-check. v is scratch
// space that outlives the call (the worker's parker): the kernel reads the
// array and the time limit through pointers.
func waitv(v *waitvArgs, own *atomic.Uint32, shared *atomic.Uint32, val uint32, d time.Duration) bool {
	// Safety: own and shared are a worker's field and a word of a shared
	// mapping, neither of which moves or goes away during the call; the
	// kernel only reads them (and v, part of the same worker).
	v.w[0] = futexWaitv{val: 0, uaddr: uint64(uintptr(unsafe.Pointer(own))), flags: futex2SizeU32 | futex2Private}
	v.w[1] = futexWaitv{val: uint64(val), uaddr: uint64(uintptr(unsafe.Pointer(shared))), flags: futex2SizeU32}
	var ts uintptr
	if d > 0 {
		if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &v.ts); err != nil {
			return false
		}
		v.ts = unix.NsecToTimespec(v.ts.Nano() + d.Nanoseconds())
		ts = uintptr(unsafe.Pointer(&v.ts))
	}
	_, _, errno := unix.Syscall6(unix.SYS_FUTEX_WAITV, uintptr(unsafe.Pointer(&v.w[0])), 2, 0, ts,
		unix.CLOCK_MONOTONIC, 0)
	switch errno {
	case 0, unix.EAGAIN, unix.ETIMEDOUT, unix.EINTR:
		return true // woken, a word had changed, the limit, a signal
	}
	// ENOSYS (a kernel older than 5.16), or EPERM from a seccomp filter
	// that does not know the call (containers): never again, or every
	// sleep would return at once and the worker would spin.
	haveWaitv.Store(false)
	return false
}

// waitvArgs is the memory futex_waitv reads: the two waits and the limit.
type waitvArgs struct {
	w  [2]futexWaitv
	ts unix.Timespec
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
