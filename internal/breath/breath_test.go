package breath

import (
	"runtime"
	"testing"
	"time"
)

// TestBreathsAreSpaced turns a clock as fast as a loop can for a while: it
// breathes at the first look and then at most once a Period, on a locked
// goroutine (a worker's) as on any.
func TestBreathsAreSpaced(t *testing.T) {
	for _, locked := range []bool{false, true} {
		done := make(chan [2]uint64)
		go func() {
			if locked {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
			}
			var c Clock
			start := time.Now()
			// Until four breaths, bounded: a breath needs Period to pass,
			// and no more than that.
			for c.Breaths() < 4 && time.Since(start) < 10*time.Second {
				c.Turn()
			}
			elapsed := time.Since(start)
			done <- [2]uint64{c.Breaths(), uint64(elapsed / Period)}
		}()
		got := <-done
		breaths, periods := got[0], got[1]
		if breaths < 4 {
			t.Fatalf("locked %v: %d breaths in 10 s of turning", locked, breaths)
		}
		if breaths > periods+1 {
			t.Fatalf("locked %v: %d breaths in %d periods: more than one a period", locked, breaths, periods)
		}
	}
}

// TestFirstLookBreathes: a new clock breathes at its Turns-th turn, not
// before, and not again at once.
func TestFirstLookBreathes(t *testing.T) {
	var c Clock
	for i := 1; i < Turns; i++ {
		c.Turn()
	}
	if c.Breaths() != 0 {
		t.Fatalf("%d breaths before the first look", c.Breaths())
	}
	c.Turn()
	if c.Breaths() != 1 {
		t.Fatalf("%d breaths at the first look, want 1", c.Breaths())
	}
	start := time.Now()
	for i := 0; i < Turns; i++ {
		c.Turn()
	}
	if time.Since(start) < Period && c.Breaths() != 1 {
		t.Fatalf("%d breaths within one period, want 1", c.Breaths())
	}
}
