//go:build linux

package fiber

import (
	"bytes"
	"slices"
	"strconv"
	"sync"
	"time"
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

// statBuf is where cpuIdleTimes reads /proc/stat; it grows as needed and
// is guarded by statMu (every worker of every scheduler may look).
var (
	statMu  sync.Mutex
	statBuf = make([]byte, 8<<10)
)

// cpuIdleTimes stores in idle[i] how long CPU cpus[i] has been idle since
// boot, from /proc/stat (in steps of 10 ms; the kernel counts an idle
// period that is still going on), and reports whether every CPU of cpus
// was found. It is called at most every idleWindow per worker, and only
// while two workers share a CPU.
func cpuIdleTimes(cpus []int, idle []time.Duration) bool {
	statMu.Lock()
	defer statMu.Unlock()
	fd, err := unix.Open("/proc/stat", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	n := 0
	for {
		if n == len(statBuf) {
			statBuf = append(statBuf, make([]byte, len(statBuf))...)
		}
		k, err := unix.Read(fd, statBuf[n:])
		if err != nil {
			unix.Close(fd)
			return false
		}
		if k == 0 {
			break
		}
		n += k
	}
	unix.Close(fd)
	return parseIdle(statBuf[:n], cpus, idle)
}

// parseIdle reads the idle field (the fourth number, in USER_HZ = 100
// ticks a second) of the "cpuN" lines of /proc/stat text for each CPU of
// cpus into idle, and reports whether all were there.
func parseIdle(text []byte, cpus []int, idle []time.Duration) bool {
	found := 0
	for len(text) > 0 {
		line := text
		if j := bytes.IndexByte(text, '\n'); j >= 0 {
			line, text = text[:j], text[j+1:]
		} else {
			text = nil
		}
		if !bytes.HasPrefix(line, []byte("cpu")) || len(line) < 4 || line[3] < '0' || line[3] > '9' {
			continue
		}
		f := bytes.Fields(line[3:])
		if len(f) < 5 {
			continue
		}
		cpu, err1 := strconv.Atoi(string(f[0]))
		ticks, err2 := strconv.ParseInt(string(f[4]), 10, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		if i := slices.Index(cpus, cpu); i >= 0 {
			idle[i] = time.Duration(ticks) * (time.Second / 100)
			found++
		}
	}
	return found == len(cpus)
}
