//go:build linux

package packet

import "golang.org/x/sys/unix"

// threadCPUTime returns the CPU time the calling OS thread has used, in
// nanoseconds, and true; the caller must be locked to its thread.
func threadCPUTime() (int64, bool) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0, false
	}
	return ts.Nano(), true
}
