package fiber

import (
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSyscallFiberReported: a fiber blocked in a system call (a read of a
// blocking pipe, which Go does not hand to its poller) is reported, as a
// wait in the kernel: inC leaves it to the report.
func TestSyscallFiberReported(t *testing.T) {
	var fds [2]int
	if err := syscall.Pipe(fds[:]); err != nil {
		t.Skipf("no pipe: %v", err)
	}
	defer syscall.Close(fds[0])
	defer syscall.Close(fds[1])
	s := newSched(t, Config{Workers: 1})
	reports := make(chan StuckFiber, 1)
	if err := s.WatchStuck(10*time.Millisecond, func(sf StuckFiber) { reports <- sf }); err != nil {
		t.Fatal(err)
	}
	mustSpawn(t, s, func(*Fiber) {
		var b [1]byte
		syscall.Read(fds[0], b[:])
	})
	select {
	case sf := <-reports:
		if !strings.HasPrefix(sf.State, "syscall") {
			t.Errorf("state %q, want syscall", sf.State)
		}
	case <-time.After(time.Minute):
		t.Error("a fiber blocked in read(2) for a minute was not reported")
	}
	if _, err := syscall.Write(fds[1], []byte{1}); err != nil {
		t.Fatal(err)
	}
	mustWait(t, s)
}
