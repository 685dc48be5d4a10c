//go:build linux

// Command corelat measures what one cache line costs to cross between two
// CPUs of this machine: two threads, each pinned to one of the first two
// CPUs the process may use, bounce a word on its own cache line, and it
// prints the median and the minimum one-way time over batches of round
// trips:
//
//	corelat            # "corelat cpus 0,1: one-way p50 112 ns, min 104 ns; work cpu 0 141 µs, cpu 1 140 µs"
//	corelat -n 400000  # more round trips
//
// On a virtual machine this time is not a constant: the host places the
// guest's CPUs, and here the same pair of CPUs measured about 110 ns in
// one minute and about 330 ns in the next (two host cores apart, or
// farther). Every message-passing figure between two processes moves with
// it — fibermpi's, MPICH's and Open MPI's alike — so scripts/bench-mpi.sh
// runs this before each round and prints the figures with the summary:
// compare contenders within a round, or rounds of equal corelat.
//
// It then times the same single-thread work on each of the two CPUs (work
// cpu N): a CPU that the host runs slower than the other makes the process
// pinned there slower at everything, which the cross-core time does not
// show.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"slices"
	"sync/atomic"
	"time"

	"golang.org/x/sys/cpu"
	"golang.org/x/sys/unix"
)

// line is a word alone on its cache line.
type line struct {
	_ cpu.CacheLinePad
	v atomic.Uint64
	_ cpu.CacheLinePad
}

func main() {
	n := flag.Int("n", 200000, "round trips")
	batch := flag.Int("batch", 100, "round trips per timed batch")
	flag.Parse()
	if *n < *batch || *batch < 1 {
		fmt.Fprintln(os.Stderr, "corelat: want -n >= -batch >= 1")
		os.Exit(2)
	}
	p50, lo, cpus, err := measure(*n, *batch)
	if err != nil {
		fmt.Fprintln(os.Stderr, "corelat:", err)
		os.Exit(1)
	}
	w0, err0 := work(cpus[0])
	w1, err1 := work(cpus[1])
	if err0 != nil || err1 != nil {
		fmt.Fprintln(os.Stderr, "corelat:", err0, err1)
		os.Exit(1)
	}
	fmt.Printf("corelat cpus %d,%d: one-way p50 %d ns, min %d ns; work cpu %d %d µs, cpu %d %d µs\n",
		cpus[0], cpus[1], p50.Nanoseconds(), lo.Nanoseconds(), cpus[0], w0.Microseconds(), cpus[1], w1.Microseconds())
}

// work times a fixed amount of work of one thread on CPU c: the median of
// seven runs of sums over a 16 KiB array, four independent chains that
// keep several execution ports busy. It shows a CPU the host runs slower
// than its sibling (a busy hyperthread next to it, a lower clock), which
// corelat's cross-core figure does not: a process pinned there does
// everything slower.
func work(c int) (time.Duration, error) {
	type result struct {
		d   time.Duration
		err error
	}
	done := make(chan result, 1)
	go func() {
		// The goroutine ends locked: the runtime ends its thread with it.
		if err := pin(c); err != nil {
			done <- result{err: err}
			return
		}
		buf := make([]uint64, 2048)
		for i := range buf {
			buf[i] = uint64(i)
		}
		times := make([]time.Duration, 0, 7)
		for range 7 {
			t0 := time.Now()
			var a, b, x, y uint64
			for range 200 {
				for i := 0; i+3 < len(buf); i += 4 {
					a += buf[i]
					b ^= buf[i+1]
					x += buf[i+2] * 3
					y += buf[i+3] >> 1
				}
			}
			workSink.Store(a + b + x + y)
			times = append(times, time.Since(t0))
		}
		slices.Sort(times)
		done <- result{d: times[len(times)/2]}
	}()
	r := <-done
	return r.d, r.err
}

// workSink keeps work's sums from being optimised away.
var workSink atomic.Uint64

// measure bounces a word n times between two pinned threads and returns
// the median and the minimum one-way time of batches of batch round
// trips, and the two CPUs.
func measure(n, batch int) (p50, lo time.Duration, cpus [2]int, err error) {
	var allowed unix.CPUSet
	if err := unix.SchedGetaffinity(0, &allowed); err != nil {
		return 0, 0, cpus, err
	}
	k := 0
	for c := 0; c < len(allowed)*64 && k < 2; c++ {
		if allowed.IsSet(c) {
			cpus[k] = c
			k++
		}
	}
	if k < 2 {
		return 0, 0, cpus, fmt.Errorf("the process may run on %d CPU: want two", k)
	}
	// Both goroutines spin at once. With one P (GOMAXPROCS=1) they would
	// take turns at each preemption, 10 ms apart, and the figures would be
	// the scheduler's: the measurement runs with two, and restores the
	// setting after.
	if runtime.GOMAXPROCS(0) < 2 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	}
	var ping, pong line
	errc := make(chan error, 1)
	go func() {
		if err := pin(cpus[1]); err != nil {
			errc <- err
			return
		}
		errc <- nil
		for i := uint64(1); i <= uint64(n); i++ {
			for ping.v.Load() != i {
			}
			pong.v.Store(i)
		}
	}()
	if err := pin(cpus[0]); err != nil {
		return 0, 0, cpus, err
	}
	if err := <-errc; err != nil {
		return 0, 0, cpus, err
	}
	times := make([]time.Duration, 0, n/batch)
	for i := uint64(1); i+uint64(batch)-1 <= uint64(n); {
		t0 := time.Now()
		for range batch {
			ping.v.Store(i)
			for pong.v.Load() != i {
			}
			i++
		}
		times = append(times, time.Since(t0)/time.Duration(2*batch))
	}
	// Let the other side finish the round trips the batches left over.
	for i := uint64(len(times)*batch) + 1; i <= uint64(n); i++ {
		ping.v.Store(i)
		for pong.v.Load() != i {
		}
	}
	slices.Sort(times)
	return times[len(times)/2], times[0], cpus, nil
}

// pin locks the calling goroutine to its thread and the thread to cpu.
func pin(c int) error {
	runtime.LockOSThread()
	var set unix.CPUSet
	set.Set(c)
	return unix.SchedSetaffinity(0, &set)
}
