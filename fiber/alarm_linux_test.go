//go:build linux

package fiber

import (
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// testAlarm is an Alarm as rdma/shm makes one, over a word of this
// process: ring publishes work (pending), then wakes announced sleepers.
type testAlarm struct {
	word    atomic.Uint32
	armed   atomic.Int32
	arms    atomic.Int64
	pending atomic.Bool
}

func (a *testAlarm) Arm() (*atomic.Uint32, uint32, bool) {
	v := a.word.Load()
	a.armed.Add(1)
	a.arms.Add(1)
	return &a.word, v, !a.pending.Load()
}

func (a *testAlarm) Disarm() { a.armed.Add(-1) }

func (a *testAlarm) ring() {
	a.pending.Store(true)
	if a.armed.Load() != 0 {
		a.word.Add(1)
		// A shared (not private) wake, as a peer process makes: the
		// worker waits on the word without FUTEX2_PRIVATE.
		unix.RawSyscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(&a.word)), 1, 1<<30, 0, 0, 0)
	}
}

// TestAlarmWakesSleepingWorker puts a worker to sleep with a poll interval
// far beyond the test's bounds, so that only a wake-up ends its sleep, and
// wakes it alternately through its Alarm (work for the idle hook) and by a
// Signal (a fiber's event).
func TestAlarmWakesSleepingWorker(t *testing.T) {
	if !haveWaitv.Load() {
		t.Skip("futex_waitv is missing (Linux < 5.16): an Alarm is ignored here")
	}
	a := new(testAlarm)
	var handled atomic.Int64
	hook := func(int) bool {
		if a.pending.CompareAndSwap(true, false) {
			handled.Add(1)
			return true
		}
		return false
	}
	s := newSched(t, Config{Workers: 1, Idle: hook, Alarm: a, SleepAfter: 10 * time.Microsecond, PollInterval: time.Hour})
	w := s.workers[0]
	const rounds = 100
	var ev Event
	var ran atomic.Int64
	mustSpawn(t, s, func(f *Fiber) {
		for range rounds {
			f.Wait(&ev)
			ev.Reset()
			ran.Add(1)
		}
	})
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not after 10s", what)
			}
			time.Sleep(20 * time.Microsecond)
		}
	}
	asleep := func() bool { return w.sleeping.Load() && a.armed.Load() != 0 }
	for k := 1; k <= rounds; k++ {
		waitFor("worker asleep on its alarm", asleep)
		a.ring()
		waitFor("idle hook ran after the alarm", func() bool { return handled.Load() == int64(k) })
		waitFor("worker asleep on its alarm", asleep)
		ev.Signal()
		waitFor("fiber ran after its signal", func() bool { return ran.Load() == int64(k) })
	}
	within(t, 10*time.Second, "Wait", func() { mustWait(t, s) })
	within(t, 10*time.Second, "Close", func() { _ = s.Close() })
	if a.armed.Load() != 0 {
		t.Fatalf("alarm armed %d times more than disarmed after Close", a.armed.Load())
	}
}

// TestAlarmPendingSkipsSleep checks that a worker whose Alarm reports work
// at Arm does not sleep (with an hour's poll interval it would hang) and
// that the hook then finds the work.
func TestAlarmPendingSkipsSleep(t *testing.T) {
	a := new(testAlarm)
	var handled atomic.Int64
	hook := func(int) bool {
		if a.arms.Load() > 0 && a.pending.CompareAndSwap(true, false) {
			handled.Add(1)
			return true
		}
		return false
	}
	a.pending.Store(true) // seen by Arm before the hook takes it
	newSched(t, Config{Workers: 1, Idle: hook, Alarm: a, SleepAfter: 10 * time.Microsecond, PollInterval: time.Hour})
	deadline := time.Now().Add(10 * time.Second)
	for handled.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("idle hook never found the work the alarm reported")
		}
		time.Sleep(50 * time.Microsecond)
	}
}
