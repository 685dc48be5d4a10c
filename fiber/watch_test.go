package fiber

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestMark: a mark lasts until the event fires or is armed anew, so an
// observer can tell one long wait from two waits on the same event.
func TestMark(t *testing.T) {
	w := NewGoroutineWaiter()
	other := NewGoroutineWaiter()
	var e Event
	if e.Mark(w) || e.Armed() != nil {
		t.Fatal("an idle event marked or armed")
	}
	e.Rearm(w)
	if e.Armed() != w || e.Mark(other) || !e.Mark(w) || !e.Marked(w) || e.Marked(other) {
		t.Fatal("armed event: Armed, Mark or Marked wrong")
	}
	if !e.Arm(w) || !e.Marked(w) {
		t.Fatal("Arm by the same waiter must keep the mark")
	}
	e.Rearm(w) // a new wait on the same event
	if e.Marked(w) || e.Armed() != w {
		t.Fatal("Rearm kept the mark")
	}
	e.Mark(w)
	if !e.Disarm(w) || e.Armed() != nil {
		t.Fatal("Disarm of a marked event")
	}
	e.Rearm(w)
	e.Mark(w)
	if !e.Signal() || e.Marked(w) || !e.Done() {
		t.Fatal("Signal of a marked event")
	}
	select {
	case <-w.ch: // the marked waiter was woken
	default:
		t.Fatal("Signal did not wake the marked waiter")
	}
}

// TestStuckFiberReported: a fiber blocked on a channel (then a mutex) keeps
// its worker; the monitor reports it once, with its goroutine, its state
// and its stack.
func TestStuckFiberReported(t *testing.T) {
	s := newSched(t, Config{Workers: 1})
	reports := make(chan StuckFiber, 4)
	if err := s.WatchStuck(10*time.Millisecond, func(sf StuckFiber) { reports <- sf }); err != nil {
		t.Fatal(err)
	}
	if err := s.WatchStuck(time.Second, nil); !errors.Is(err, ErrWatching) {
		t.Fatalf("a second WatchStuck: %v", err)
	}
	ch := make(chan int)
	var mu sync.Mutex
	mu.Lock()
	ran := make(chan bool, 1)
	mustSpawn(t, s, func(*Fiber) { stuckOnChannel(ch) })
	mustSpawn(t, s, func(*Fiber) {
		mu.Lock() // blocks the worker: the point of the test
		defer mu.Unlock()
	})
	mustSpawn(t, s, func(*Fiber) { ran <- true })
	check := func(wantState, wantFrame string) {
		t.Helper()
		var sf StuckFiber
		select {
		case sf = <-reports:
		case <-time.After(time.Minute):
			t.Fatalf("no report of the fiber blocked in %s", wantState)
		}
		if sf.Worker != 0 || sf.Goroutine == 0 || sf.State != wantState || !strings.Contains(sf.Stack, wantFrame) || sf.For < 10*time.Millisecond {
			t.Fatalf("report %+v, want worker 0, state %q, a stack through %s", sf, wantState, wantFrame)
		}
		if !strings.Contains(sf.String(), "fiber.Sleep") {
			t.Errorf("the report does not say what to do: %s", sf)
		}
	}
	check("chan receive", "stuckOnChannel")
	ch <- 1
	check("sync.Mutex.Lock", "TestStuckFiberReported")
	mu.Unlock()
	select {
	case <-ran: // the worker runs its other fibers again
	case <-time.After(time.Minute):
		t.Fatal("the worker did not come back")
	}
	mustWait(t, s)
	select {
	case sf := <-reports:
		t.Fatalf("an extra report: %+v", sf)
	default:
	}
}

//go:noinline
func stuckOnChannel(ch chan int) { <-ch }

// TestComputingFiberNotReported: a fiber that computes for many periods
// without yielding is not blocked in Go, and is not reported.
func TestComputingFiberNotReported(t *testing.T) {
	s := newSched(t, Config{Workers: 1})
	reports := make(chan StuckFiber, 1)
	if err := s.WatchStuck(time.Millisecond, func(sf StuckFiber) { reports <- sf }); err != nil {
		t.Fatal(err)
	}
	mustSpawn(t, s, func(*Fiber) {
		// Spin until the monitor has looked for a stuck fiber twice.
		for s.watch.looks.Load() < 2 {
		}
	})
	mustWait(t, s)
	select {
	case sf := <-reports:
		t.Fatalf("a computing fiber reported: %+v", sf)
	default:
	}
}

// TestInC: a traceback in a cgo call (as a transport's poll of MPI shows
// it) is C code running, not a wait; a system call is a wait.
func TestInC(t *testing.T) {
	for _, tc := range []struct {
		state, stack string
		want         bool
	}{
		{"syscall, locked to thread", "goroutine 6 [syscall, locked to thread]:\n" +
			"github.com/fibermpi/fibermpi/internal/mpi._Cfunc_fmpi_poll(0x7f4030008260, 0x7f40300082a0, 0xc, 0x20, 0x0)\n" +
			"\t_cgo_gotypes.go:375 +0x5d\n" +
			"github.com/fibermpi/fibermpi/internal/mpi.(*Ring).Poll(0x149f41c22648, 0x149f41c4c4b8?, 0x0?, 0x0?)\n", true},
		{"syscall", "goroutine 9 [syscall]:\n" +
			"runtime.cgocall(0x4a1b20, 0xc000057e48)\n\t/usr/local/go/src/runtime/cgocall.go:167 +0x4b\n" +
			"main._Cfunc_sleep(0x3c)\n", true},
		{"syscall", "goroutine 7 [syscall]:\n" +
			"syscall.Syscall(0x0, 0x3, 0xc000012345, 0x1)\n\t/usr/local/go/src/syscall/syscall_linux.go:73 +0x25\n" +
			"syscall.read(...)\n", false},
		{"chan receive", "goroutine 8 [chan receive]:\nmain._Cfunc_x()\n", false},
	} {
		if got := inC(tc.state, []byte(tc.stack)); got != tc.want {
			t.Errorf("inC(%q, %q) = %v, want %v", tc.state, tc.stack, got, tc.want)
		}
	}
}

// TestSleepYields: fiber.Sleep lets the worker's other fibers run (with
// time.Sleep they could not: one worker).
func TestSleepYields(t *testing.T) {
	s := newSched(t, Config{Workers: 1})
	done := make(chan struct{})
	turns := 0
	mustSpawn(t, s, func(f *Fiber) {
		Sleep(f.Waiter(), 5*time.Millisecond)
		close(done)
	})
	mustSpawn(t, s, func(f *Fiber) {
		for {
			select {
			case <-done:
				return
			default:
			}
			turns++
			f.Yield()
		}
	})
	mustWait(t, s)
	if turns == 0 {
		t.Fatal("the other fiber never ran while the first slept")
	}
	Sleep(nil, 0) // a goroutine: time.Sleep
}

// TestTimedEventWaits: WaitTimeout and WaitContext from a fiber and a
// goroutine: they time out without the event, return at once with it, and
// leave the event unarmed after a timeout.
func TestTimedEventWaits(t *testing.T) {
	s := newSched(t, Config{Workers: 1})
	check := func(w *Waiter) error {
		var e Event
		if e.WaitTimeout(w, time.Millisecond) || e.Armed() != nil {
			return errors.New("WaitTimeout on an idle event")
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		defer cancel()
		if err := e.WaitContext(w, ctx); !errors.Is(err, context.DeadlineExceeded) || e.Armed() != nil {
			return errors.New("WaitContext on an idle event")
		}
		go e.Signal()
		if !e.WaitTimeout(w, time.Hour) {
			return errors.New("WaitTimeout missed the signal")
		}
		if e.WaitContext(w, ctx) != nil { // done: ctx does not matter
			return errors.New("WaitContext on a fired event")
		}
		return nil
	}
	errs := make(chan error, 2)
	mustSpawn(t, s, func(f *Fiber) { errs <- check(f.Waiter()) })
	errs <- check(NewGoroutineWaiter())
	mustWait(t, s)
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// TestCurrent: Current names the calling fiber, one resumed by another
// (direct handoff) included, and nil for a goroutine.
func TestCurrent(t *testing.T) {
	if _, ok := threadID(); !ok {
		t.Skip("Current cannot tell fibers from goroutines on this system")
	}
	if Current() != nil {
		t.Fatal("Current in a goroutine")
	}
	s := newSched(t, Config{Workers: 1})
	var e Event
	got := make(chan bool, 3)
	// a blocks first; its worker, or a itself by direct handoff, then
	// runs b, which wakes a.
	mustSpawn(t, s, func(a *Fiber) {
		got <- Current() == a
		e.Wait(a.Waiter())
		got <- Current() == a
	})
	mustSpawn(t, s, func(b *Fiber) {
		got <- Current() == b
		e.Signal()
	})
	mustWait(t, s)
	for range 3 {
		if !<-got {
			t.Fatal("Current is not the calling fiber")
		}
	}
}
