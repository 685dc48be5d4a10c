package fiber

import (
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"testing"
)

// A handoff contender runs two parties, A and B, that take turns. On its
// turn a party calls next; if next reports true it hands the turn to the
// other party and waits for it back, and if false it tells the other party to
// stop and returns. One benchmark op is one handoff: a party's Wait that ends
// with the other party resumed. Both parties call next (b.Loop) in turn; only
// the party holding the turn touches b, and the handoff orders the accesses.
type handoff interface {
	run(b *testing.B, next func() bool)
}

// fiberHandoff: two fibers, on one worker or on two, events for the turns.
type fiberHandoff struct{ workers int }

func (h fiberHandoff) run(b *testing.B, next func() bool) {
	s, err := New(Config{Workers: h.workers})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	var turn [2]Event
	var stop atomic.Bool
	party := func(me int) func(*Fiber) {
		return func(f *Fiber) {
			if me == 1 {
				f.Wait(&turn[1])
				turn[1].Reset()
			}
			for !stop.Load() {
				if !next() {
					stop.Store(true)
				}
				turn[1-me].Signal()
				if stop.Load() {
					return
				}
				f.Wait(&turn[me])
				turn[me].Reset()
			}
		}
	}
	_ = s.SpawnOn(0, party(0))
	_ = s.SpawnOn(h.workers-1, party(1))
	if err := s.Wait(); err != nil {
		b.Fatal(err)
	}
}

// waiterHandoff: two fibers on one worker using the scheduler's primitives
// directly, Dang et al. 2016b Alg. 4: ThreadSignal is Waiter.Wake (an OR into the run
// bit-vector), ThreadWait is Waiter.Block; a turn variable, written before
// the Wake and read after the Block, says whose turn it is (Block may return
// spuriously).
type waiterHandoff struct{}

func (waiterHandoff) run(b *testing.B, next func() bool) {
	s, err := New(Config{Workers: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	var waiters [2]*Waiter
	var turn int // whose turn; written only by the party holding it
	stop := false
	ready := make(chan struct{})
	party := func(me int) func(*Fiber) {
		return func(f *Fiber) {
			w := f.Waiter()
			if me == 1 {
				waiters[1] = w
				close(ready) // once, before the first Block: never blocks
				for turn != 1 {
					w.Block()
				}
			}
			for !stop {
				if !next() {
					stop = true
				}
				turn = 1 - me
				waiters[1-me].Wake()
				if stop {
					return
				}
				for turn != me {
					w.Block()
				}
			}
		}
	}
	_ = s.SpawnOn(0, party(1))
	<-ready
	_ = s.SpawnOn(0, func(f *Fiber) {
		waiters[0] = f.Waiter()
		party(0)(f)
	})
	if err := s.Wait(); err != nil {
		b.Fatal(err)
	}
}

// chanHandoff: two goroutines, one channel each, of capacity size.
type chanHandoff struct{ size int }

func (h chanHandoff) run(b *testing.B, next func() bool) {
	turn := [2]chan bool{make(chan bool, h.size), make(chan bool, h.size)}
	var wg sync.WaitGroup
	party := func(me int) {
		defer wg.Done()
		if me == 1 && !<-turn[1] {
			return
		}
		for {
			more := next()
			turn[1-me] <- more
			if !more || !<-turn[me] {
				return
			}
		}
	}
	wg.Add(2)
	go party(1)
	go party(0)
	wg.Wait()
}

// condHandoff: two goroutines, a turn variable under a mutex, one sync.Cond.
type condHandoff struct{}

func (condHandoff) run(b *testing.B, next func() bool) {
	var mu sync.Mutex
	cond := sync.NewCond(&mu)
	turn, stop := 0, false
	var wg sync.WaitGroup
	party := func(me int) {
		defer wg.Done()
		mu.Lock()
		defer mu.Unlock()
		for {
			for turn != me && !stop {
				cond.Wait()
			}
			if stop {
				return
			}
			if !next() {
				stop = true
			}
			turn = 1 - me
			cond.Signal()
		}
	}
	wg.Add(2)
	go party(1)
	go party(0)
	wg.Wait()
}

// BenchmarkHandoff compares one Wait→resume handoff between two parties.
// fiber uses Event (one-shot, Signal before Wait allowed, re-armed each
// time); fiber-waiter uses the scheduler's Wake/Block with a turn variable.
func BenchmarkHandoff(b *testing.B) {
	for _, c := range []struct {
		name string
		h    handoff
	}{
		{"fiber", fiberHandoff{workers: 1}},
		{"fiber-waiter", waiterHandoff{}},
		{"fiber2w", fiberHandoff{workers: 2}},
		{"chan", chanHandoff{size: 0}},
		{"chan1", chanHandoff{size: 1}},
		{"cond", condHandoff{}},
	} {
		b.Run(c.name, func(b *testing.B) { c.h.run(b, b.Loop) })
	}
}

// BenchmarkSignal measures an uncontended Signal: the worker is not running,
// so nothing else touches its bit-vector. wake is Waiter.Wake on a fiber (the
// bit-vector OR); event is Event.Signal waking an armed fiber (re-armed each
// op with a plain store).
func BenchmarkSignal(b *testing.B) {
	s := &Scheduler{cfg: Config{}.withDefaults()}
	w := newWorker(s, 0, seedSlots, -1)
	f := &Fiber{w: w, slot: 12345}
	f.waiter.f = f
	b.Run("wake", func(b *testing.B) {
		for b.Loop() {
			f.waiter.Wake()
		}
	})
	b.Run("event", func(b *testing.B) {
		var ev Event
		for b.Loop() {
			ev.Rearm(&f.waiter)
			ev.Signal()
		}
	})
}

// BenchmarkSignalRemote measures a Signal from a fiber on one worker until
// the signalled fiber runs on another worker. One op: A signals B's event,
// then spins until B has run and re-armed.
func BenchmarkSignalRemote(b *testing.B) {
	if runtime.GOMAXPROCS(0) < 2 {
		b.Skip("needs two workers running at once")
	}
	s, err := New(Config{Workers: 2})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	var ev Event
	var ran atomic.Uint64
	var stop atomic.Bool
	_ = s.SpawnOn(1, func(f *Fiber) {
		for {
			f.Wait(&ev)
			ev.Reset()
			ran.Add(1)
			if stop.Load() {
				return
			}
		}
	})
	_ = s.SpawnOn(0, func(*Fiber) {
		var n uint64
		for b.Loop() {
			n++
			ev.Signal()
			for ran.Load() != n {
			}
		}
		stop.Store(true)
		ev.Signal()
	})
	if err := s.Wait(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkMillion parks a million fibers on two workers, each on its own
// Event, then signals each once and waits for all to end. One op is the whole
// cycle; ns/fiber and bytes/fiber (heap and stack in use while all are
// parked, per fiber) are reported. The benchmark goroutine spawns and
// signals, so GOMAXPROCS is raised to 3 to give it a P beside the two
// spinning workers, and GC is relaxed as for any 10^6-fiber program.
func BenchmarkMillion(b *testing.B) {
	const n = 1_000_000
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(3))
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	s, err := New(Config{Workers: 2, MaxFibersPerWorker: n / 2})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	evs := make([]Event, n)
	var parked atomic.Int64
	var bytesPerFiber float64
	for b.Loop() {
		b.StopTimer()
		runtime.GC()
		before := inUse()
		b.StartTimer()
		parked.Store(0)
		var allParked Event
		for i := range evs {
			evs[i].Reset()
			_ = s.Spawn(func(f *Fiber) {
				if parked.Add(1) == n {
					allParked.Signal()
				}
				f.Wait(&evs[i])
			})
		}
		allParked.Wait(NewGoroutineWaiter())
		b.StopTimer()
		bytesPerFiber = float64(inUse()-before) / n
		b.StartTimer()
		for i := range evs {
			evs[i].Signal()
		}
		if err := s.Wait(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/fiber")
	b.ReportMetric(bytesPerFiber, "B/fiber")
}

// inUse is the memory the Go runtime has in use for heap objects and
// goroutine stacks.
func inUse() int64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse + m.StackInuse)
}
