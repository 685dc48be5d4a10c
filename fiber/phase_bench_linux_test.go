package fiber

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// BenchmarkPhases is the shape of a bulk-synchronous program with short
// compute phases (a red-black sweep on a small grid): two fibers, one on
// each of two workers, each computes for about the phase's length, then
// hands its neighbour the go-ahead and waits for the neighbour's, over and
// over. One op is one phase of both. Ideal is the phase's length; what
// is above it is the cost of the meetings: spinning, pauses, sleeps and
// wake-ups, and the time the two workers spend on one CPU.
//
// same-cpu-% is the share of phases that both fibers began on the same CPU
// (the kernel put both workers there): they then run one after the other,
// at half speed. cpu-ns/op is the process's CPU time per phase.
//
//	go test -run '^$' -bench 'BenchmarkPhases' -count 6 ./fiber
func BenchmarkPhases(b *testing.B) {
	if runtime.GOMAXPROCS(0) < 2 || runtime.NumCPU() < 2 {
		b.Skip("needs two workers on two CPUs")
	}
	for _, phase := range []time.Duration{20 * time.Microsecond, 80 * time.Microsecond} {
		for _, sleepAfter := range []time.Duration{20 * time.Microsecond, time.Millisecond} {
			b.Run(fmt.Sprintf("phase=%v/sleepAfter=%v", phase, sleepAfter), func(b *testing.B) {
				benchPhases(b, phase, sleepAfter)
			})
		}
	}
}

func benchPhases(b *testing.B, phase, sleepAfter time.Duration) {
	// A fresh scheduler per run of the benchmark function, as a program
	// starts its workers: where the kernel first puts them matters.
	s, err := New(Config{Workers: 2, SleepAfter: sleepAfter})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	work := calibrate(phase)
	var (
		done  [2]atomic.Int64 // phases finished by each fiber
		ws    [2]atomic.Pointer[Waiter]
		cpus  [2][]int32
		ready sync2
		n     = int64(b.N)
	)
	body := func(me int) func(*Fiber) {
		return func(f *Fiber) {
			w := f.Waiter()
			ws[me].Store(w)
			ready.arrive(w)
			other := 1 - me
			log := make([]int32, 0, n)
			var sink uint64
			for k := int64(1); k <= n; k++ {
				log = append(log, getcpu())
				sink += spin(work)
				done[me].Store(k)
				ws[other].Load().Wake()
				for done[other].Load() < k {
					w.Block()
				}
			}
			cpus[me] = log
			if sink == 42 {
				b.Log(sink)
			}
		}
	}
	cpu0 := processCPU()
	b.ResetTimer()
	for me := range 2 {
		if err := s.SpawnOn(me, body(me)); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.Wait(); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	cpu := processCPU() - cpu0
	same := 0
	for i := range cpus[0] {
		if cpus[0][i] == cpus[1][i] {
			same++
		}
	}
	b.ReportMetric(100*float64(same)/float64(len(cpus[0])), "same-cpu-%")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
}

// sync2 holds two fibers until both have arrived.
type sync2 struct {
	n  atomic.Int32
	ws [2]atomic.Pointer[Waiter]
}

func (s *sync2) arrive(w *Waiter) {
	i := s.n.Add(1) - 1
	s.ws[i].Store(w)
	if i == 1 {
		s.ws[0].Load().Wake()
		return
	}
	for s.n.Load() < 2 {
		w.Block()
	}
}

// spin does k rounds of arithmetic the compiler cannot drop.
// spinSink keeps spin's results, so that no call of it is dead code.
var spinSink atomic.Uint64

func spin(k int) uint64 {
	x := uint64(k)
	for i := range k {
		x = x*6364136223846793005 + uint64(i)
	}
	return x
}

// calibrate returns the k for which spin(k) takes about d, from the
// fastest of a few timings (a busy machine makes some of them slow).
func calibrate(d time.Duration) int {
	const k = 1 << 14
	best := time.Duration(1 << 62)
	for range 20 {
		t := time.Now()
		spinSink.Store(spin(k))
		best = min(best, time.Since(t))
	}
	return max(1, int(float64(k)*float64(d)/float64(best)))
}

// processCPU returns the CPU time the process has used.
func processCPU() time.Duration {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
