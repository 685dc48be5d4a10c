//go:build linux

package fiber

import (
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestSpreadSeparatesWorkersOnOneCPU binds both workers' threads to one CPU
// (as a packing kernel may leave them) and lets two fibers meet after short
// compute phases, as a bulk-synchronous program does: a worker must notice
// that its sibling shares its CPU and bind itself to another one. (Whether
// it then stays there depends on what else the machine runs: a worker
// crowded there by another program goes back, by design.)
func TestSpreadSeparatesWorkersOnOneCPU(t *testing.T) {
	cpus, err := allowedCPUs()
	if err != nil || len(cpus) < 2 {
		t.Skipf("needs 2 CPUs to run on (have %v, %v)", cpus, err)
	}
	// Whatever else the machine runs: this tests the binding, not when
	// it is worth it.
	saved, savedIdle := runnable, idleTimes
	runnable = func() int { return 0 }
	idleTimes = func([]int, []time.Duration) bool { return false }
	t.Cleanup(func() { runnable, idleTimes = saved, savedIdle })
	s := newSched(t, Config{Workers: 2, SleepAfter: time.Hour})
	binds := func() int32 { return s.workers[0].spr.binds.Load() + s.workers[1].spr.binds.Load() }
	var (
		done  [2]atomic.Int64
		ws    [2]atomic.Pointer[Waiter]
		stop  atomic.Bool
		start sync2
	)
	work := calibrate(50 * time.Microsecond)
	deadline := time.Now().Add(30 * time.Second)
	for me := range 2 {
		err := s.SpawnOn(me, func(f *Fiber) {
			var one unix.CPUSet
			one.Set(cpus[0])
			if err := unix.SchedSetaffinity(0, &one); err != nil {
				t.Errorf("binding worker %d to CPU %d: %v", me, cpus[0], err)
				stop.Store(true)
			}
			w := f.Waiter()
			ws[me].Store(w)
			start.arrive(w)
			other := 1 - me
			for k := int64(1); ; k++ {
				spinSink.Store(spin(work))
				if binds() > 0 || time.Now().After(deadline) {
					stop.Store(true)
				}
				done[me].Store(k)
				ws[other].Load().Wake()
				for done[other].Load() < k {
					w.Block()
				}
				if stop.Load() {
					return
				}
			}
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	mustWait(t, s)
	if binds() == 0 {
		t.Fatalf("neither worker bound itself to another CPU in %v with both on CPU %d", 30*time.Second, cpus[0])
	}
}

func TestRunnableThreads(t *testing.T) {
	n := runnableThreads()
	// This test's own thread is running.
	if n < 1 {
		t.Fatalf("runnableThreads() = %d; want at least 1", n)
	}
}

func TestParseIdle(t *testing.T) {
	text := []byte("cpu  2878826 58803 689093 962706 4672 0 4224 1840 0 0\n" +
		"cpu0 1439363 28404 341740 485865 1266 0 1367 907 0 0\n" +
		"cpu1 1439462 30399 347352 476840 3406 0 2856 933 0 0\n" +
		"intr 123 4 5\nctxt 99\n")
	idle := make([]time.Duration, 2)
	if !parseIdle(text, []int{1, 0}, idle) {
		t.Fatal("parseIdle found not every CPU")
	}
	if idle[0] != 4768400*time.Millisecond || idle[1] != 4858650*time.Millisecond {
		t.Fatalf("idle %v, want [4768.4s 4858.65s]", idle)
	}
	if parseIdle(text, []int{0, 2}, idle) {
		t.Fatal("parseIdle found CPU 2, which the text lacks")
	}
	got := make([]time.Duration, 1)
	if !cpuIdleTimes([]int{0}, got) {
		t.Skip("no /proc/stat here")
	}
}
