package fiber

import (
	"sync"
	"testing"
	"time"
)

// TestMutexYields: fibers of one worker take turns in a critical section
// that yields inside (Sleep): a Mutex that blocked the worker would hang,
// and one that let two in would lose increments. Goroutines join in.
func TestMutexYields(t *testing.T) {
	s, err := New(Config{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var m Mutex
	var wg WaitGroup
	counter, inside := 0, 0
	const fibers, goroutines, rounds = 20, 3, 20
	body := func(w *Waiter) {
		for range rounds {
			m.Lock(w)
			inside++
			if inside != 1 {
				t.Errorf("%d callers inside the Mutex", inside)
			}
			c := counter
			Sleep(w, time.Microsecond) // yields a fiber, with the lock held
			counter = c + 1
			inside--
			m.Unlock()
		}
	}
	for range fibers {
		if err := wg.Go(s, func(f *Fiber) { body(f.Waiter()) }); err != nil {
			t.Fatal(err)
		}
	}
	var plain sync.WaitGroup
	for range goroutines {
		wg.Add(1)
		plain.Go(func() {
			defer wg.Done()
			body(NewGoroutineWaiter())
		})
	}
	wg.Wait(NewGoroutineWaiter())
	plain.Wait()
	if want := (fibers + goroutines) * rounds; counter != want {
		t.Fatalf("counter = %d, want %d", counter, want)
	}
	if !m.TryLock() {
		t.Fatal("TryLock of the free Mutex failed")
	}
	if m.TryLock() {
		t.Fatal("TryLock of a locked Mutex succeeded")
	}
	m.Unlock()
}

// TestWaitGroupManyWaiters: several fibers (on one worker) and goroutines
// wait on one WaitGroup at once — an Event panics on a second waiter — and
// all wake when the last task is done.
func TestWaitGroupManyWaiters(t *testing.T) {
	s, err := New(Config{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var work, waiters WaitGroup
	work.Add(3)
	var woke sync.WaitGroup
	woken := make(chan int, 10)
	for i := range 5 {
		waiters.Go(s, func(f *Fiber) {
			work.Wait(f.Waiter())
			woken <- i
		})
	}
	for i := range 2 {
		woke.Go(func() {
			work.Wait(NewGoroutineWaiter())
			woken <- 100 + i
		})
	}
	for range 3 {
		s.Spawn(func(f *Fiber) {
			Sleep(f.Waiter(), time.Millisecond)
			if len(woken) != 0 {
				t.Error("a waiter woke before the work was done")
			}
			work.Done()
		})
	}
	waiters.Wait(NewGoroutineWaiter())
	woke.Wait()
	if len(woken) != 7 {
		t.Fatalf("%d waiters woke, want 7", len(woken))
	}
	defer func() {
		if recover() == nil {
			t.Error("a negative counter did not panic")
		}
	}()
	work.Done()
}

func TestMutexUnlockUnlockedPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Unlock of an unlocked Mutex did not panic")
		}
	}()
	var m Mutex
	m.Unlock()
}
