package fiber

import (
	"errors"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fibermpi/fibermpi/internal/testenv"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// newSched starts a scheduler and closes it at the end of the test, failing
// the test on any error Close returns.
func newSched(t testing.TB, cfg Config) *Scheduler {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatalf("New(%v): %v", cfg, err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func mustSpawn(t testing.TB, s *Scheduler, fn func(*Fiber)) {
	t.Helper()
	if err := s.Spawn(fn); err != nil {
		t.Fatalf("Spawn: %v", err)
	}
}

func mustWait(t testing.TB, s *Scheduler) {
	t.Helper()
	if err := s.Wait(); err != nil {
		t.Fatalf("Wait: %v", err)
	}
}

func TestSpawnRunsEveryFiber(t *testing.T) {
	s := newSched(t, Config{Workers: 2})
	const n = 1000
	var ran [n]atomic.Int32
	for i := range n {
		mustSpawn(t, s, func(*Fiber) { ran[i].Add(1) })
	}
	mustWait(t, s)
	for i := range n {
		if got := ran[i].Load(); got != 1 {
			t.Fatalf("fiber %d ran %d times, want 1", i, got)
		}
	}
	if s.Live() != 0 {
		t.Fatalf("Live() = %d after Wait", s.Live())
	}
}

// TestPingPongAcrossWorkers passes a counter between fibers on different
// workers through events: every handoff is a cross-worker Signal.
func TestPingPongAcrossWorkers(t *testing.T) {
	s := newSched(t, Config{Workers: 2})
	const pairs, rounds = 8, 500
	for p := range pairs {
		var evA, evB Event
		var turn int // written by whoever holds the turn
		var errA, errB error
		mustErr := func(got, want int) error {
			if got != want {
				return errors.New("turn out of order")
			}
			return nil
		}
		if err := s.SpawnOn(0, func(f *Fiber) {
			for r := range rounds {
				if err := mustErr(turn, 2*r); err != nil && errA == nil {
					errA = err
				}
				turn++
				evB.Signal()
				f.Wait(&evA)
				evA.Reset()
			}
		}); err != nil {
			t.Fatal(err)
		}
		if err := s.SpawnOn(1, func(f *Fiber) {
			for r := range rounds {
				f.Wait(&evB)
				evB.Reset()
				if err := mustErr(turn, 2*r+1); err != nil && errB == nil {
					errB = err
				}
				turn++
				evA.Signal()
			}
		}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if errA != nil || errB != nil {
				t.Errorf("pair %d: %v %v", p, errA, errB)
			}
			if turn != 2*rounds {
				t.Errorf("pair %d: turn = %d, want %d", p, turn, 2*rounds)
			}
		})
	}
	mustWait(t, s)
}

func TestSignalBeforeWait(t *testing.T) {
	s := newSched(t, Config{Workers: 1})
	var ev Event
	if !ev.Signal() {
		t.Fatal("first Signal reported false")
	}
	if ev.Signal() {
		t.Fatal("second Signal reported true")
	}
	var returned atomic.Bool
	mustSpawn(t, s, func(f *Fiber) {
		f.Wait(&ev) // must not block: the event fired already
		returned.Store(true)
	})
	mustWait(t, s)
	if !returned.Load() {
		t.Fatal("fiber did not return from Wait on a fired event")
	}
	// A goroutine waiter sees the same.
	ev.Wait(NewGoroutineWaiter())
}

// TestExactlyOnce fires one event from many goroutines at once while a fiber
// waits on it: exactly one Signal fires it and the fiber wakes once.
func TestExactlyOnce(t *testing.T) {
	s := newSched(t, Config{Workers: 1})
	const trials, signallers = 200, 4
	for range trials {
		var ev, armed Event
		var wakes atomic.Int32
		mustSpawn(t, s, func(f *Fiber) {
			armed.Signal()
			f.Wait(&ev)
			wakes.Add(1)
		})
		armed.Wait(NewGoroutineWaiter())
		var fired atomic.Int32
		var wg sync.WaitGroup
		for range signallers {
			wg.Go(func() {
				if ev.Signal() {
					fired.Add(1)
				}
			})
		}
		wg.Wait()
		mustWait(t, s)
		if fired.Load() != 1 || wakes.Load() != 1 {
			t.Fatalf("fired %d times, woke %d times; want 1 and 1", fired.Load(), wakes.Load())
		}
	}
}

func TestSlotReuseAndPendingSpawns(t *testing.T) {
	s := newSched(t, Config{Workers: 1, MaxFibersPerWorker: 1}) // rounds up to 512
	if got := s.Config().MaxFibersPerWorker; got != 512 {
		t.Fatalf("MaxFibersPerWorker = %d, want 512", got)
	}
	// Three times the slots at once: two thirds wait in the pending queue
	// and take slots as earlier fibers end.
	const n = 3 * 512
	var running, peak, done atomic.Int64
	for range n {
		mustSpawn(t, s, func(f *Fiber) {
			c := running.Add(1)
			for {
				p := peak.Load()
				if c <= p || peak.CompareAndSwap(p, c) {
					break
				}
			}
			f.Yield()
			f.Yield()
			running.Add(-1)
			done.Add(1)
		})
	}
	mustWait(t, s)
	if done.Load() != n {
		t.Fatalf("%d fibers finished, want %d", done.Load(), n)
	}
	if peak.Load() > 512 {
		t.Fatalf("%d fibers alive at once on 512 slots", peak.Load())
	}
	w := s.workers[0]
	if len(w.fibers) > 512 {
		t.Fatalf("slot table grew to %d", len(w.fibers))
	}
}

func TestManyParkedFibers(t *testing.T) {
	n := min(100_000, testenv.MaxGoroutines())
	if testing.Short() {
		n = min(n, 10_000)
	}
	s := newSched(t, Config{Workers: 2})
	evs := make([]Event, n)
	var woke atomic.Int64
	for i := range n {
		mustSpawn(t, s, func(f *Fiber) {
			f.Wait(&evs[i])
			woke.Add(1)
		})
	}
	for i := range n {
		evs[i].Signal()
	}
	mustWait(t, s)
	if woke.Load() != int64(n) {
		t.Fatalf("%d of %d fibers woke", woke.Load(), n)
	}
}

func TestSpawnFromFibersAndGoroutines(t *testing.T) {
	s := newSched(t, Config{Workers: 2})
	// A binary tree of fibers of depth 10, each spawning its children.
	var nodes atomic.Int64
	var grow func(depth int) func(*Fiber)
	grow = func(depth int) func(*Fiber) {
		return func(f *Fiber) {
			nodes.Add(1)
			if depth == 0 {
				return
			}
			for range 2 {
				if err := f.Scheduler().Spawn(grow(depth - 1)); err != nil {
					panic(err)
				}
			}
		}
	}
	mustSpawn(t, s, grow(10))
	// Meanwhile, goroutines spawn too.
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				if err := s.Spawn(func(*Fiber) { nodes.Add(1) }); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	mustWait(t, s)
	if want := int64(1<<11 - 1 + 800); nodes.Load() != want {
		t.Fatalf("%d fibers ran, want %d", nodes.Load(), want)
	}
}

func TestPanicIsReported(t *testing.T) {
	s := newSched(t, Config{Workers: 2})
	boom := errors.New("boom")
	var others atomic.Int32
	mustSpawn(t, s, func(*Fiber) { panic(boom) })
	for range 10 {
		mustSpawn(t, s, func(f *Fiber) { f.Yield(); others.Add(1) })
	}
	err := s.Wait()
	var pe *PanicError
	if !errors.As(err, &pe) || !errors.Is(err, boom) {
		t.Fatalf("Wait = %v, want a *PanicError wrapping boom", err)
	}
	if !strings.Contains(string(pe.Stack), "TestPanicIsReported") {
		t.Errorf("panic stack does not show the panicking function:\n%s", pe.Stack)
	}
	if others.Load() != 10 {
		t.Fatalf("%d other fibers finished, want 10", others.Load())
	}
	// Reported once: the next Wait is clean, and the scheduler still works.
	mustSpawn(t, s, func(*Fiber) {})
	mustWait(t, s)
}

func TestCloseCancelsBlockedFibers(t *testing.T) {
	s, err := New(Config{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	const n = 100
	never := make([]Event, n) // one waiter an event
	var started, deferred atomic.Int32
	for i := range n {
		mustSpawn(t, s, func(f *Fiber) {
			defer deferred.Add(1)
			started.Add(1)
			f.Wait(&never[i])
			t.Error("Wait returned on an event that never fired")
		})
	}
	for started.Load() != n {
		runtime.Gosched()
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if deferred.Load() != n {
		t.Fatalf("%d deferred calls ran, want %d", deferred.Load(), n)
	}
	if err := s.Spawn(func(*Fiber) {}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Spawn after Close = %v, want ErrClosed", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close = %v", err)
	}
	if s.Live() != 0 {
		t.Fatalf("Live() = %d after Close", s.Live())
	}
}

func TestBadInput(t *testing.T) {
	s := newSched(t, Config{Workers: 1})
	if err := s.Spawn(nil); !errors.Is(err, ErrNilFunc) {
		t.Errorf("Spawn(nil) = %v, want ErrNilFunc", err)
	}
	for _, i := range []int{-1, 1, 100} {
		if err := s.SpawnOn(i, func(*Fiber) {}); !errors.Is(err, ErrNoWorker) {
			t.Errorf("SpawnOn(%d) = %v, want ErrNoWorker", i, err)
		}
	}
	bad := []Config{
		{Workers: -1},
		{MaxFibersPerWorker: -5},
		{MaxFibersPerWorker: maxSlots + 1},
		{SleepAfter: -time.Second},
		{CPUs: []int{0}},
		{Pin: true, CPUs: []int{-2}},
	}
	for _, c := range bad {
		if _, err := New(c); !errors.Is(err, ErrBadConfig) {
			t.Errorf("New(%+v) = %v, want ErrBadConfig", c, err)
		}
	}
	if _, err := New(Config{Workers: 1, Pin: true, CPUs: []int{1 << 20}}); !errors.Is(err, ErrBadConfig) {
		t.Errorf("pinning to a CPU outside the affinity set = %v, want ErrBadConfig", err)
	}
}

func TestConfigString(t *testing.T) {
	got := Config{Workers: 3, MaxFibersPerWorker: 1000}.String()
	for _, want := range []string{"workers=3", "maxFibers/worker=1024", "sleepAfter=1ms", "unpinned"} {
		if !strings.Contains(got, want) {
			t.Errorf("String() = %q, missing %q", got, want)
		}
	}
	if d := (Config{}).withDefaults(); d.Workers < 1 || d.MaxFibersPerWorker != 262144 {
		t.Errorf("zero Config defaults to %+v", d)
	}
}

func TestPinnedWorkers(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("pinning is Linux only")
	}
	s := newSched(t, Config{Workers: 2, Pin: true})
	var ran atomic.Int32
	for range 10 {
		mustSpawn(t, s, func(*Fiber) { ran.Add(1) })
	}
	mustWait(t, s)
	if ran.Load() != 10 {
		t.Fatalf("ran %d fibers, want 10", ran.Load())
	}
}

// TestGoroutineAndFiberWaiters crosses the two kinds of waiter: a goroutine
// waits for a fiber and a fiber waits for a goroutine.
func TestGoroutineAndFiberWaiters(t *testing.T) {
	s := newSched(t, Config{Workers: 1})
	gw := NewGoroutineWaiter()
	if gw.Fiber() != nil {
		t.Fatal("goroutine waiter claims a fiber")
	}
	for range 100 {
		var toFiber, toGoroutine Event
		mustSpawn(t, s, func(f *Fiber) {
			if f.Waiter().Fiber() != f {
				t.Error("fiber waiter does not point back to its fiber")
			}
			f.Wait(&toFiber)
			toGoroutine.Signal()
		})
		go toFiber.Signal()
		toGoroutine.Wait(gw)
	}
	mustWait(t, s)
}

// TestArmDisarmWaitAny waits on several events with one waiter and wakes on
// whichever fires, the way WaitAny is built.
func TestArmDisarmWaitAny(t *testing.T) {
	s := newSched(t, Config{Workers: 2})
	var evs [4]Event
	var got atomic.Int32
	got.Store(-1)
	mustSpawn(t, s, func(f *Fiber) {
		w := f.Waiter()
		for {
			for i := range evs {
				if !evs[i].Arm(w) {
					got.Store(int32(i))
				}
			}
			if got.Load() >= 0 {
				break
			}
			w.Block()
		}
		for i := range evs {
			evs[i].Disarm(w)
		}
	})
	time.Sleep(time.Millisecond) // let it arm; the test holds either way
	evs[2].Signal()
	mustWait(t, s)
	if got.Load() != 2 {
		t.Fatalf("WaitAny woke for %d, want 2", got.Load())
	}
	for i := range evs {
		if i != 2 && evs[i].Done() {
			t.Fatalf("event %d fired", i)
		}
		if i != 2 && evs[i].state.Load() != evIdle {
			t.Fatalf("event %d still armed after Disarm", i)
		}
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("arming a second waiter did not panic")
			}
		}()
		var ev Event
		ev.Arm(NewGoroutineWaiter())
		ev.Arm(NewGoroutineWaiter())
	}()
}

// TestYieldInterleaves runs two fibers on one worker that yield in a loop:
// once both are runnable they must alternate, neither running twice in a row.
func TestYieldInterleaves(t *testing.T) {
	s := newSched(t, Config{Workers: 1})
	var mu sync.Mutex
	var order []byte
	var started atomic.Int32
	for _, c := range []byte("ab") {
		mustSpawn(t, s, func(f *Fiber) {
			started.Add(1)
			for started.Load() < 2 {
				f.Yield()
			}
			for range 50 {
				mu.Lock()
				order = append(order, c)
				mu.Unlock()
				f.Yield()
			}
		})
	}
	mustWait(t, s)
	for i := 1; i < len(order); i++ {
		if order[i] == order[i-1] && i < len(order)-1 {
			t.Fatalf("order %q: %c ran twice in a row at %d", order, order[i], i)
		}
	}
}

// TestIdleHookDrivesProgress plays the progress engine: the idle hook, not
// any goroutine, fires the events the fibers wait for.
func TestIdleHookDrivesProgress(t *testing.T) {
	var mu sync.Mutex
	var queue []*Event
	var calls atomic.Int64
	hook := func(int) bool {
		calls.Add(1)
		mu.Lock()
		defer mu.Unlock()
		if len(queue) == 0 {
			return false
		}
		for _, ev := range queue {
			ev.Signal()
		}
		queue = queue[:0]
		return true
	}
	s := newSched(t, Config{Workers: 2, Idle: hook, SleepAfter: 50 * time.Microsecond, PollInterval: 100 * time.Microsecond})
	const n = 200
	var done atomic.Int32
	for range n {
		mustSpawn(t, s, func(f *Fiber) {
			ev := new(Event)
			mu.Lock()
			queue = append(queue, ev)
			mu.Unlock()
			f.Wait(ev)
			done.Add(1)
		})
	}
	mustWait(t, s)
	if done.Load() != n || calls.Load() == 0 {
		t.Fatalf("done %d of %d, hook called %d times", done.Load(), n, calls.Load())
	}
}

// TestSleepingWorkerWakes lets a worker fall asleep and checks that Spawn and
// Signal wake it.
func TestSleepingWorkerWakes(t *testing.T) {
	s := newSched(t, Config{Workers: 1, SleepAfter: 20 * time.Microsecond})
	w := s.workers[0]
	waitAsleep := func() {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !w.sleeping.Load() {
			if time.Now().After(deadline) {
				t.Fatal("worker never went to sleep")
			}
			time.Sleep(100 * time.Microsecond)
		}
	}
	var ev Event
	var stage atomic.Int32
	waitAsleep()
	mustSpawn(t, s, func(f *Fiber) {
		stage.Store(1)
		f.Wait(&ev)
		stage.Store(2)
	})
	for stage.Load() != 1 {
		runtime.Gosched()
	}
	waitAsleep()
	ev.Signal()
	mustWait(t, s)
	if stage.Load() != 2 {
		t.Fatalf("stage %d, want 2", stage.Load())
	}
}

func TestGoexitEndsOnlyItsWorker(t *testing.T) {
	s := newSched(t, Config{Workers: 2})
	if err := s.SpawnOn(0, func(*Fiber) { runtime.Goexit() }); err != nil {
		t.Fatal(err)
	}
	err := s.Wait()
	if !errors.Is(err, ErrGoexit) {
		t.Fatalf("Wait = %v, want ErrGoexit", err)
	}
	if err := s.SpawnOn(0, func(*Fiber) {}); !errors.Is(err, ErrWorkerDead) {
		t.Fatalf("SpawnOn(dead worker) = %v, want ErrWorkerDead", err)
	}
	var ran atomic.Int32
	for range 4 {
		mustSpawn(t, s, func(*Fiber) { ran.Add(1) }) // round-robin skips the dead worker
	}
	mustWait(t, s)
	if ran.Load() != 4 {
		t.Fatalf("ran %d, want 4", ran.Load())
	}
}

func TestRearm(t *testing.T) {
	s := newSched(t, Config{Workers: 1})
	var ev Event
	var got atomic.Int32
	mustSpawn(t, s, func(f *Fiber) {
		for range 3 {
			ev.Rearm(f.Waiter())
			if ev.Done() {
				t.Error("Rearm left the event fired")
			}
			got.Add(1)
			f.Wait(&ev) // woken by the goroutine below
		}
	})
	for i := range int32(3) {
		for got.Load() != i+1 {
			runtime.Gosched()
		}
		for !ev.Signal() { // fire it once it is re-armed
			runtime.Gosched()
		}
	}
	mustWait(t, s)
}

// TestEventReusedByAnotherWaiter passes one Event around three waiters (two
// fibers and a goroutine), resetting it between rounds, while a goroutine
// signals each round: a Signal still finishing its wake-up when the next
// waiter re-arms the event must neither race (under -race) nor lose or
// double a round.
func TestEventReusedByAnotherWaiter(t *testing.T) {
	const rounds = 3000
	s := newSched(t, Config{Workers: 1})
	var (
		ev    Event
		turn  [3]Event     // waiter k's turn to arm ev
		armed atomic.Int64 // the last round whose waiter re-armed ev
		done  atomic.Int64 // rounds whose Wait returned
	)
	armed.Store(-1)
	waiter := func(k int, w *Waiter) {
		for i := k; i < rounds; i += 3 {
			turn[k].Wait(w)
			turn[k].Reset()
			ev.Reset()
			armed.Store(int64(i))
			ev.Wait(w)
			done.Add(1)
			turn[(k+1)%3].Signal()
		}
	}
	for k := range 2 {
		mustSpawn(t, s, func(f *Fiber) { waiter(k, f.Waiter()) })
	}
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		waiter(2, NewGoroutineWaiter())
	}()
	turn[0].Signal()
	for i := range int64(rounds) {
		for armed.Load() != i {
			runtime.Gosched()
		}
		if !ev.Signal() {
			t.Fatalf("round %d: Signal found the event fired already", i)
		}
	}
	<-finished
	mustWait(t, s)
	if got := done.Load(); got != rounds {
		t.Fatalf("%d rounds completed, want %d", got, rounds)
	}
}

// TestWorkerAlone: a fiber alone on its worker is alone; a second fiber
// on it, even blocked, or a spawn queued on it, makes it not alone; once
// the second fiber has ended it is alone again.
func TestWorkerAlone(t *testing.T) {
	s := newSched(t, Config{Workers: 1})
	mustSpawn(t, s, func(f *Fiber) {
		if !f.WorkerAlone() || !f.WorkerIdle() {
			t.Error("WorkerAlone or WorkerIdle false for the only fiber")
		}
		var ev Event
		started, ended := make(chan struct{}), make(chan struct{})
		if err := s.SpawnOn(f.Worker(), func(g *Fiber) {
			close(started)
			ev.Wait(g.Waiter())
			close(ended)
		}); err != nil {
			t.Error(err)
			return
		}
		if f.WorkerAlone() {
			t.Error("WorkerAlone true with a spawn queued")
		}
		yieldUntil(f, started)
		if f.WorkerAlone() {
			t.Error("WorkerAlone true with a blocked neighbour")
		}
		if !f.WorkerIdle() {
			t.Error("WorkerIdle false with the only other fiber blocked")
		}
		ev.Signal()
		yieldUntil(f, ended)
		for range 100 { // the neighbour's slot is freed after its body returns
			if f.WorkerAlone() {
				return
			}
			f.Yield()
		}
		t.Error("WorkerAlone false after the neighbour ended")
	})
	mustWait(t, s)
}

// yieldUntil yields f until c is closed.
func yieldUntil(f *Fiber, c <-chan struct{}) {
	for {
		select {
		case <-c:
			return
		default:
			f.Yield()
		}
	}
}

// TestWorkerIdle: a fiber alone on its worker sees it idle; a neighbour it
// made runnable, or a spawn queued on the worker, makes it busy; once the
// neighbour has run and blocked again it is idle again.
func TestWorkerIdle(t *testing.T) {
	s := newSched(t, Config{Workers: 1})
	var ev Event
	var other atomic.Pointer[Waiter]
	mustSpawn(t, s, func(f *Fiber) {
		other.Store(f.Waiter())
		ev.Wait(f.Waiter())
	})
	mustSpawn(t, s, func(f *Fiber) {
		for other.Load() == nil {
			f.Yield()
		}
		f.Yield() // the first fiber has blocked in its Wait
		if !f.WorkerIdle() {
			t.Error("WorkerIdle false with the only other fiber blocked")
		}
		other.Load().Wake() // runnable, though its event has not fired: it blocks again
		if f.WorkerIdle() {
			t.Error("WorkerIdle true with a runnable neighbour")
		}
		f.Yield() // the neighbour runs and blocks again
		if !f.WorkerIdle() {
			t.Error("WorkerIdle false after the neighbour blocked again")
		}
		done := make(chan struct{})
		if err := s.SpawnOn(f.Worker(), func(*Fiber) { close(done) }); err != nil {
			t.Error(err)
			return
		}
		if f.WorkerIdle() {
			t.Error("WorkerIdle true with a spawn queued")
		}
		for {
			select {
			case <-done:
				ev.Signal()
				return
			default:
				f.Yield()
			}
		}
	})
	mustWait(t, s)
}
