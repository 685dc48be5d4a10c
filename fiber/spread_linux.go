//go:build linux

package fiber

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// canBind is true: a thread can bind itself to a CPU here.
const canBind = true

// getcpu returns the CPU the calling thread runs on.
func getcpu() int32 {
	var c uint32
	// Safety: the kernel writes the CPU number into c, which lives
	// through the call; the other two arguments are unused (nil).
	unix.RawSyscall(unix.SYS_GETCPU, uintptr(unsafe.Pointer(&c)), 0, 0)
	return int32(c)
}

// bindTo binds the calling thread (a locked worker) to cpu, which moves it
// there before the call returns, or, with cpu −1, lets it run on any of
// cpus again. It reports whether that was done.
func bindTo(cpu int32, cpus []int) bool {
	var set unix.CPUSet
	if cpu >= 0 {
		set.Set(int(cpu))
	} else {
		for _, c := range cpus {
			set.Set(c)
		}
	}
	return unix.SchedSetaffinity(0, &set) == nil
}
