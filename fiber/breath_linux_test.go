//go:build linux

package fiber

import (
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestWorkerBreathes: a worker kept busy by one fiber that yields goes
// through the Go scheduler again and again (internal/breath), since its
// fiber switches do not, and stays locked to its thread meanwhile.
func TestWorkerBreathes(t *testing.T) {
	s := newSched(t, Config{Workers: 1})
	w := s.workers[0]
	var stop atomic.Bool
	threads := make(map[int]bool)
	mustSpawn(t, s, func(f *Fiber) {
		for !stop.Load() {
			threads[unix.Gettid()] = true
			f.Yield()
		}
	})
	// Bounded: a breath comes every breath.Period.
	for deadline := time.Now().Add(10 * time.Second); w.breath.Breaths() < 3 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	stop.Store(true)
	mustWait(t, s)
	if n := w.breath.Breaths(); n < 3 {
		t.Fatalf("the worker breathed %d times in 10 s", n)
	}
	if len(threads) != 1 {
		t.Fatalf("the fiber ran on %d threads, want 1", len(threads))
	}
}
