package fiber

import (
	"sync/atomic"
	"testing"
	"time"
)

// forEachParker runs f with workers that sleep on a futex (where there are
// futexes) and on a channel.
func forEachParker(t *testing.T, f func(t *testing.T)) {
	saved := useFutex
	defer func() { useFutex = saved }()
	for _, futex := range []bool{true, false} {
		if futex && !saved {
			continue
		}
		useFutex = futex
		name := "chan"
		if futex {
			name = "futex"
		}
		t.Run(name, f)
	}
}

// within fails t if fn does not return within d.
func within(t *testing.T, d time.Duration, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s: still blocked after %v", what, d)
	}
}

// TestParker checks the parker alone: a wake after prepare ends the sleep
// (before or during it), and a sleep with a limit ends without a wake.
func TestParker(t *testing.T) {
	forEachParker(t, func(t *testing.T) {
		var p parker
		p.init()
		p.prepare()
		p.wake()
		within(t, 10*time.Second, "sleep after wake", func() { p.sleep(0) })
		for range 100 {
			p.prepare()
			go p.wake()
			within(t, 10*time.Second, "sleep until wake", func() { p.sleep(0) })
		}
		p.prepare()
		within(t, 10*time.Second, "sleep with a limit", func() { p.sleep(time.Millisecond) })
		p.wake()
		p.wake() // twice is once
	})
}

// TestSleepWakeRounds puts a worker to sleep many times and wakes it each
// time from a fiber of another worker and from a goroutine, alternately.
func TestSleepWakeRounds(t *testing.T) {
	forEachParker(t, func(t *testing.T) {
		s := newSched(t, Config{Workers: 2, SleepAfter: 5 * time.Microsecond})
		sleeper := s.workers[1]
		const rounds = 300
		var ev Event
		var ran atomic.Int64
		if err := s.SpawnOn(1, func(f *Fiber) {
			for range rounds {
				f.Wait(&ev)
				ev.Reset()
				ran.Add(1)
			}
		}); err != nil {
			t.Fatal(err)
		}
		waitFor := func(what string, cond func() bool) {
			deadline := time.Now().Add(10 * time.Second)
			for !cond() {
				if time.Now().After(deadline) {
					t.Errorf("%s: not after 10s", what)
					return
				}
			}
		}
		signal := make(chan struct{})
		go func() {
			defer close(signal)
			for k := 1; k <= rounds; k += 2 {
				waitFor("worker asleep", sleeper.sleeping.Load)
				ev.Signal()
				waitFor("woken fiber ran", func() bool { return ran.Load() >= int64(k) })
				if k+1 > rounds {
					return
				}
				// The next round is signalled by a fiber on worker 0.
				_ = s.SpawnOn(0, func(*Fiber) {
					waitFor("worker asleep", sleeper.sleeping.Load)
					ev.Signal()
				})
				waitFor("woken fiber ran", func() bool { return ran.Load() >= int64(k+1) })
			}
		}()
		within(t, 60*time.Second, "rounds", func() { <-signal })
		within(t, 10*time.Second, "Wait", func() { mustWait(t, s) })
		if ran.Load() != rounds {
			t.Fatalf("fiber woke %d times, want %d", ran.Load(), rounds)
		}
	})
}

// TestIdleHookRunsWhileAsleep checks that a sleeping worker with an idle
// hook wakes by itself (after PollInterval) to call the hook again, so the
// progress engine keeps polling with no fiber to run.
func TestIdleHookRunsWhileAsleep(t *testing.T) {
	forEachParker(t, func(t *testing.T) {
		var calls atomic.Int64
		hook := func(int) bool {
			calls.Add(1)
			return false
		}
		s := newSched(t, Config{Workers: 1, Idle: hook, SleepAfter: 10 * time.Microsecond, PollInterval: 200 * time.Microsecond})
		w := s.workers[0]
		deadline := time.Now().Add(10 * time.Second)
		for !w.sleeping.Load() {
			if time.Now().After(deadline) {
				t.Fatal("worker never went to sleep")
			}
			time.Sleep(50 * time.Microsecond)
		}
		c := calls.Load()
		for calls.Load() <= c+2 {
			if time.Now().After(deadline) {
				t.Fatalf("idle hook called %d times, none after the worker slept", calls.Load())
			}
			time.Sleep(100 * time.Microsecond)
		}
	})
}

// TestIdleWorkerDozes checks that a worker woken by its PollInterval with
// nothing to do looks once and sleeps again, instead of spinning through a
// new idle period: an idle process must not keep a CPU busy. Before the
// fix, each 1 ms wake-up began 1 ms of spinning (freeSpin), hundreds of
// thousands of hook calls in the 200 ms sampled here; dozing makes about
// one call a wake-up. The bound leaves a margin of 25 calls a millisecond:
// a loaded machine only makes the sleeps longer.
func TestIdleWorkerDozes(t *testing.T) {
	forEachParker(t, func(t *testing.T) {
		var calls atomic.Int64
		hook := func(int) bool {
			calls.Add(1)
			return false
		}
		s := newSched(t, Config{Workers: 1, Idle: hook, SleepAfter: 100 * time.Microsecond, PollInterval: time.Millisecond})
		w := s.workers[0]
		within(t, 10*time.Second, "worker asleep", func() {
			for !w.sleeping.Load() {
				time.Sleep(50 * time.Microsecond)
			}
		})
		c := calls.Load()
		time.Sleep(200 * time.Millisecond)
		if n := calls.Load() - c; n > 5000 {
			t.Errorf("idle hook called %d times in 200 ms of an idle worker's dozing, want about one a PollInterval (1 ms)", n)
		}
		// Work still wakes it, and the next idle period spins first again.
		done := make(chan struct{})
		if err := s.SpawnOn(0, func(*Fiber) { close(done) }); err != nil {
			t.Fatal(err)
		}
		within(t, 10*time.Second, "spawned fiber", func() { <-done })
	})
}

// TestSleepDue checks the idle policy's rule: a crowded idle period sleeps
// after SleepAfter, an uncrowded one after freeSpin (or SleepAfter if
// longer), and none before SleepAfter.
func TestSleepDue(t *testing.T) {
	us := time.Microsecond
	for _, c := range []struct {
		idle       time.Duration
		crowded    bool
		sleepAfter time.Duration
		want       bool
	}{
		{19 * us, true, 20 * us, false},
		{20 * us, true, 20 * us, true},
		{20 * us, false, 20 * us, false},
		{freeSpin - us, false, 20 * us, false},
		{freeSpin, false, 20 * us, true},
		{freeSpin, true, 2 * freeSpin, false},
		{freeSpin, false, 2 * freeSpin, false},
		{2 * freeSpin, false, 2 * freeSpin, true},
		{2 * freeSpin, true, 2 * freeSpin, true},
		{0, false, 0, false},
	} {
		if got := sleepDue(c.idle, c.crowded, c.sleepAfter); got != c.want {
			t.Errorf("sleepDue(%v, crowded %v, sleepAfter %v) = %v, want %v", c.idle, c.crowded, c.sleepAfter, got, c.want)
		}
	}
}
