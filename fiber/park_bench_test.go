package fiber

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// forParkers runs f with workers that sleep on a futex (where there are
// futexes) and on a channel.
func forParkers(b *testing.B, f func(b *testing.B)) {
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
		b.Run(name, f)
	}
}

// BenchmarkWakeAsleep measures how long a sleeping worker takes to run a
// fiber that a fiber of another worker wakes: one op is one Signal to a
// worker found asleep, ended when the woken fiber has run. wake-µs is the
// mean time from the Signal to the woken fiber's first instruction.
func BenchmarkWakeAsleep(b *testing.B) {
	if runtime.GOMAXPROCS(0) < 2 {
		b.Skip("needs two workers running at once")
	}
	forParkers(b, func(b *testing.B) {
		s, err := New(Config{Workers: 2, SleepAfter: time.Microsecond})
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		var ev Event
		var ran atomic.Uint64
		var at atomic.Int64 // when the woken fiber ran (ns since start)
		var stop atomic.Bool
		start := time.Now()
		_ = s.SpawnOn(1, func(f *Fiber) {
			for {
				f.Wait(&ev)
				at.Store(int64(time.Since(start)))
				ev.Reset()
				ran.Add(1)
				if stop.Load() {
					return
				}
			}
		})
		var total time.Duration
		_ = s.SpawnOn(0, func(*Fiber) {
			sleeper := s.workers[1]
			var n uint64
			for b.Loop() {
				n++
				for !sleeper.sleeping.Load() {
				}
				t0 := time.Since(start)
				ev.Signal()
				for ran.Load() != n {
				}
				total += time.Duration(at.Load()) - t0
			}
			stop.Store(true)
			ev.Signal()
		})
		if err := s.Wait(); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(total.Nanoseconds())/float64(b.N)/1e3, "wake-µs")
	})
}
