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

// runnableThreads returns how many threads of the whole machine are running
// or waiting for a CPU now (the fourth field of /proc/loadavg, before the
// slash), or -1 if it cannot be read. It allocates nothing.
func runnableThreads() int {
	fd, err := unix.Open("/proc/loadavg", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1
	}
	var buf [128]byte
	n, err := unix.Read(fd, buf[:])
	unix.Close(fd)
	if err != nil || n <= 0 {
		return -1
	}
	// "0.52 1.40 1.88 2/187 12345"
	fields, v, in := 0, -1, false
	for _, c := range buf[:n] {
		switch {
		case c == ' ':
			if in {
				fields++
				in = false
			}
		case fields == 3 && c >= '0' && c <= '9':
			in = true
			v = max(v, 0)*10 + int(c-'0')
		case fields == 3 && c == '/':
			return v
		default:
			in = true
		}
	}
	return -1
}
