//go:build linux

package endpoint

import (
	"runtime"
	"testing"
)

// TestPickMonitor: the monitor is the thread found alone in nanosleep in
// monitorLooks looks; any other thread seen there ends the search without
// one, and looks that found nobody do not count.
func TestPickMonitor(t *testing.T) {
	for _, tc := range []struct {
		name  string
		looks [][]int
		tid   int
		done  bool
	}{
		{"none yet", nil, -1, false},
		{"too few", [][]int{{7}, {7}}, -1, false},
		{"three", [][]int{{7}, {7}, {7}}, 7, true},
		{"empty looks skipped", [][]int{{7}, {}, {7}, {}, {7}}, 7, true},
		{"two at once", [][]int{{7}, {7, 9}}, -1, true},
		{"another later", [][]int{{7}, {7}, {9}}, -1, true},
		{"only empty", [][]int{{}, {}, {}, {}}, -1, false},
	} {
		tid, done := pickMonitor(tc.looks)
		if tid != tc.tid || done != tc.done {
			t.Errorf("%s: pickMonitor(%v) = %d, %v; want %d, %v", tc.name, tc.looks, tid, done, tc.tid, tc.done)
		}
	}
}

// TestSleepingThreads: a Go program's monitor thread is found in
// nanosleep while this goroutine runs, and this thread never is.
func TestSleepingThreads(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for range 1000 {
		tids, err := sleepingThreads(0)
		if err != nil {
			t.Skipf("/proc/self/task: %v", err)
		}
		if len(tids) > 0 {
			return
		}
	}
	t.Fatal("no thread of this process was ever seen in nanosleep in 1000 looks: the runtime's monitor sleeps there between its looks")
}
