package fiber

import (
	"sync/atomic"
	"testing"
	"time"
)

// fakeCPUs replaces the thread's CPU and its binding with fakes for the
// spreader's unit tests: *cpu is where the calling "thread" is, and binds
// records every bindTo call (−1: unbound), which moves *cpu. The machine
// runs nothing else (runnable: 1).
func fakeCPUs(t *testing.T, cpu *int32, binds *[]int32) {
	t.Helper()
	savedNow, savedBind, savedRunnable := cpuNow, bindThread, runnable
	t.Cleanup(func() { cpuNow, bindThread, runnable = savedNow, savedBind, savedRunnable })
	runnable = func() int { return 1 }
	cpuNow = func() int32 { return *cpu }
	bindThread = func(c int32, _ []int) bool {
		*binds = append(*binds, c)
		if c >= 0 {
			*cpu = c
		}
		return true
	}
}

// spreadPair returns a scheduler shell with two unstarted workers on CPUs
// {0, 1}, each with a spreader.
func spreadPair() (*Scheduler, *worker, *worker) {
	s := &Scheduler{cfg: Config{Workers: 2}.withDefaults()}
	claims := make([]atomic.Int32, 2)
	claims[0].Store(-1)
	claims[1].Store(-1)
	for i := range 2 {
		w := newWorker(s, i, lineSlots, -1)
		w.spr = &spreader{cpus: []int{0, 1}, claims: claims, bound: -1, from: -1, wait: spreadMinWait}
		s.workers = append(s.workers, w)
	}
	return s, s.workers[0], s.workers[1]
}

func TestSpreaderBindsAwayFromSibling(t *testing.T) {
	var cpu int32
	var binds []int32
	fakeCPUs(t, &cpu, &binds)
	_, a, b := spreadPair()
	b.at.Store(0) // the sibling last saw itself on CPU 0, as a does now
	now := time.Now()
	a.spr.crowded(a, now, time.Millisecond)
	if len(binds) != 1 || binds[0] != 1 || a.at.Load() != 1 || a.spr.bound != 1 || a.spr.from != 0 {
		t.Fatalf("binds %v, at %d, bound %d, from %d; want a bind to CPU 1, from 0",
			binds, a.at.Load(), a.spr.bound, a.spr.from)
	}
	// Bound, crowded by its sibling (put there by the kernel): it stays.
	b.at.Store(1)
	a.spr.crowded(a, now.Add(time.Millisecond), time.Millisecond)
	if len(binds) != 1 || a.spr.bound != 1 {
		t.Fatalf("binds %v, bound %d after a sibling crowded it; want no change", binds, a.spr.bound)
	}
}

func TestSpreaderIgnoresOtherPrograms(t *testing.T) {
	var cpu int32
	var binds []int32
	fakeCPUs(t, &cpu, &binds)
	_, a, b := spreadPair()
	b.at.Store(1) // the sibling has CPU 1: whatever crowds a is not a worker
	a.spr.crowded(a, time.Now(), time.Millisecond)
	if len(binds) != 0 || a.spr.bound != -1 || a.at.Load() != 0 {
		t.Fatalf("binds %v, bound %d, at %d; want nothing done", binds, a.spr.bound, a.at.Load())
	}
	// A sleeping sibling does not count either.
	b.at.Store(0)
	b.sleeping.Store(true)
	a.spr.crowded(a, time.Now(), time.Millisecond)
	if len(binds) != 0 {
		t.Fatalf("binds %v with the sibling asleep; want none", binds)
	}
}

func TestSpreaderUnbindsAndBacksOff(t *testing.T) {
	var cpu int32
	var binds []int32
	fakeCPUs(t, &cpu, &binds)
	_, a, b := spreadPair()
	b.at.Store(0)
	t0 := time.Now()
	a.spr.crowded(a, t0, time.Millisecond) // binds to 1
	// Another program's thread crowds CPU 1 soon after: back to 0, unbound,
	// and the wait doubles.
	a.spr.crowded(a, t0.Add(time.Millisecond), time.Millisecond)
	want := []int32{1, 0, -1}
	if len(binds) != len(want) || binds[1] != 0 || binds[2] != -1 {
		t.Fatalf("binds %v, want %v", binds, want)
	}
	if a.spr.bound != -1 || a.at.Load() != 0 || a.spr.wait != 2*spreadMinWait || a.spr.unbinds.Load() != 1 {
		t.Fatalf("bound %d, at %d, wait %v, unbinds %d; want -1, 0, %v, 1",
			a.spr.bound, a.at.Load(), a.spr.wait, a.spr.unbinds.Load(), 2*spreadMinWait)
	}
	// Crowded by the sibling again before the wait is over: no bind.
	a.spr.crowded(a, t0.Add(2*time.Millisecond), time.Millisecond)
	if len(binds) != 3 {
		t.Fatalf("binds %v during the wait; want no new bind", binds)
	}
	// After it: binds again; a binding that lasts resets the wait when it
	// is given up.
	t1 := t0.Add(time.Millisecond + 2*spreadMinWait)
	a.spr.crowded(a, t1, time.Millisecond)
	if a.spr.bound != 1 {
		t.Fatalf("bound %d after the wait; want 1 (binds %v)", a.spr.bound, binds)
	}
	a.spr.crowded(a, t1.Add(2*spreadProbe), time.Millisecond)
	if a.spr.bound != -1 || a.spr.wait != spreadMinWait {
		t.Fatalf("bound %d, wait %v after a binding that held; want -1, %v", a.spr.bound, a.spr.wait, spreadMinWait)
	}
	// Repeated short bindings double the wait up to spreadMaxWait.
	for range 20 {
		now := a.spr.next
		cpu = 0
		a.spr.crowded(a, now, time.Millisecond)
		a.spr.crowded(a, now, time.Millisecond)
	}
	if a.spr.wait != spreadMaxWait {
		t.Fatalf("wait %v after 20 short bindings; want %v", a.spr.wait, spreadMaxWait)
	}
}

func TestNoSpreadersWhenPinnedOrAlone(t *testing.T) {
	for _, cfg := range []Config{{Workers: 2, Pin: true}, {Workers: 1}} {
		if newSpreaders(cfg.withDefaults()) != nil {
			t.Errorf("%v: spreaders made; want none", cfg)
		}
	}
}

func TestSpreaderWaitsOnABusyMachine(t *testing.T) {
	var cpu int32
	var binds []int32
	fakeCPUs(t, &cpu, &binds)
	_, a, b := spreadPair()
	b.at.Store(1)
	t0 := time.Now()
	// Another program crowds a twice in quick succession: the wait doubles.
	a.spr.crowded(a, t0, time.Millisecond)
	a.spr.crowded(a, t0.Add(time.Millisecond), time.Millisecond)
	if a.spr.wait != 2*spreadMinWait || len(binds) != 0 {
		t.Fatalf("wait %v, binds %v; want %v, none", a.spr.wait, binds, 2*spreadMinWait)
	}
	// The sibling comes to a's CPU before the wait is over: no binding.
	b.at.Store(0)
	a.spr.crowded(a, t0.Add(2*time.Millisecond), time.Millisecond)
	if len(binds) != 0 {
		t.Fatalf("binds %v during the wait; want none", binds)
	}
	// After it, a binds.
	a.spr.crowded(a, t0.Add(4*time.Millisecond), time.Millisecond)
	if len(binds) != 1 || binds[0] != 1 {
		t.Fatalf("binds %v after the wait; want [1]", binds)
	}
}

func TestSpreaderIgnoresShortCrowding(t *testing.T) {
	var cpu int32
	var binds []int32
	fakeCPUs(t, &cpu, &binds)
	_, a, b := spreadPair()
	b.at.Store(0)
	t0 := time.Now()
	a.spr.crowded(a, t0, time.Millisecond) // binds to 1
	// A kernel thread takes 50 µs of CPU 1: the binding stays.
	a.spr.crowded(a, t0.Add(time.Millisecond), 50*time.Microsecond)
	if a.spr.bound != 1 || len(binds) != 1 || a.spr.wait != spreadMinWait {
		t.Fatalf("bound %d, binds %v, wait %v; want 1, [1], %v", a.spr.bound, binds, a.spr.wait, spreadMinWait)
	}
}

func TestSpreaderStaysWhenOthersWantCPUs(t *testing.T) {
	var cpu int32
	var binds []int32
	fakeCPUs(t, &cpu, &binds)
	runnable = func() int { return 4 } // two workers and two other threads
	_, a, b := spreadPair()
	b.at.Store(0)
	t0 := time.Now()
	a.spr.crowded(a, t0, time.Millisecond)
	if len(binds) != 0 || a.spr.wait != 2*spreadMinWait {
		t.Fatalf("binds %v, wait %v with 4 runnable threads; want none, %v", binds, a.spr.wait, 2*spreadMinWait)
	}
	runnable = func() int { return 2 }
	a.spr.crowded(a, t0.Add(3*spreadMinWait), time.Millisecond)
	if len(binds) != 1 {
		t.Fatalf("binds %v with only the two workers runnable; want one", binds)
	}
}

func TestSpreaderJudgesTheOtherCPU(t *testing.T) {
	var cpu int32
	var binds []int32
	fakeCPUs(t, &cpu, &binds)
	runnable = func() int { return 99 } // not asked while idle times are known
	var idleNow [2]time.Duration
	saved := idleTimes
	t.Cleanup(func() { idleTimes = saved })
	idleTimes = func(_ []int, idle []time.Duration) bool { copy(idle, idleNow[:]); return true }
	_, a, b := spreadPair()
	b.at.Store(0)
	t0 := time.Now()
	a.spr.idle, a.spr.cur, a.spr.looked = make([]time.Duration, 2), make([]time.Duration, 2), t0
	// Too soon after the first look: nothing yet.
	a.spr.crowded(a, t0.Add(idleWindow/2), time.Millisecond)
	if len(binds) != 0 {
		t.Fatalf("binds %v before idleWindow; want none", binds)
	}
	// CPU 1 idle a fifth of the time: busy, no binding, a longer wait.
	idleNow[1] = idleWindow / 5
	a.spr.crowded(a, t0.Add(idleWindow), time.Millisecond)
	if len(binds) != 0 || a.spr.wait != 2*spreadMinWait {
		t.Fatalf("binds %v, wait %v with CPU 1 mostly busy; want none, %v", binds, a.spr.wait, 2*spreadMinWait)
	}
	// Then idle all the time: binds there.
	t1 := t0.Add(idleWindow + 2*idleWindow)
	idleNow[1] += 2 * idleWindow
	a.spr.crowded(a, t1, time.Millisecond)
	if len(binds) != 1 || binds[0] != 1 {
		t.Fatalf("binds %v with CPU 1 idle; want [1]", binds)
	}
}

func TestSpreaderClaimsTheCPU(t *testing.T) {
	var cpu int32
	var binds []int32
	fakeCPUs(t, &cpu, &binds)
	_, a, b := spreadPair()
	a.at.Store(0)
	b.at.Store(0)
	// Both on CPU 0 decide before either has told where it went: only the
	// first binds to CPU 1.
	b.spr.claims[1].Store(int32(b.id))
	a.spr.crowded(a, time.Now(), time.Millisecond)
	if len(binds) != 0 || a.spr.bound != -1 {
		t.Fatalf("binds %v, bound %d with CPU 1 claimed by the sibling; want none", binds, a.spr.bound)
	}
	b.spr.claims[1].Store(-1)
	a.spr.crowded(a, time.Now(), time.Millisecond)
	if len(binds) != 1 || a.spr.claims[1].Load() != int32(a.id) {
		t.Fatalf("binds %v, claim %d; want [1], %d", binds, a.spr.claims[1].Load(), a.id)
	}
	// Given up for another program: the claim is released.
	b.at.Store(0)
	a.spr.crowded(a, time.Now(), time.Millisecond)
	if a.spr.bound != -1 || a.spr.claims[1].Load() != -1 {
		t.Fatalf("bound %d, claim %d after another program crowded it; want -1, -1", a.spr.bound, a.spr.claims[1].Load())
	}
}
