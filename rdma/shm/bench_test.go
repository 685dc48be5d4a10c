//go:build linux

package shm_test

import (
	"errors"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fibermpi/fibermpi/internal/testenv"
	"github.com/fibermpi/fibermpi/packet"
	"github.com/fibermpi/fibermpi/rdma"
	"github.com/fibermpi/fibermpi/rdma/shm"
)

// The benchmarks run two transports of one process, each driven by its own
// goroutine locked to its own OS thread, pinned to its own core when the
// machine has two (as two processes of a node would be). Figures for the
// whole stack are the issue's; these are the transport's share:
//
//	go test -run '^$' -bench . -count 6 ./rdma/shm

// lockTo locks the calling goroutine to its thread and, if there are at
// least two CPUs, pins the thread to cpu. It returns the undo.
func lockTo(cpu int) func() {
	runtime.LockOSThread()
	var old unix.CPUSet
	pinned := false
	if runtime.NumCPU() >= 2 && unix.SchedGetaffinity(0, &old) == nil {
		var set unix.CPUSet
		set.Set(cpu % runtime.NumCPU())
		pinned = unix.SchedSetaffinity(0, &set) == nil
	}
	return func() {
		if pinned {
			_ = unix.SchedSetaffinity(0, &old)
		}
		runtime.UnlockOSThread()
	}
}

// echo is a Receiver that sends every packet back where it came from.
type echo struct {
	tr   *shm.Transport
	to   rdma.Addr
	pool *packet.Pool
}

func (e *echo) Receive(w int, pk *packet.Packet) {
	if err := e.tr.Send(w, e.to, pk); err != nil {
		panic(err) // a ping-pong never fills a ring
	}
}

// flag is a Receiver that counts arrivals; only its own goroutine reads
// n (it delivers in its own Progress).
type flag struct {
	pool *packet.Pool
	n    int
}

func (f *flag) Receive(w int, pk *packet.Packet) {
	f.n++
	f.pool.Put(w, pk)
}

// spin drives tr's progress as worker w until stop.
func spin(tr *shm.Transport, w int, stop *atomic.Bool, cpu int, wg *sync.WaitGroup) {
	wg.Go(func() {
		defer lockTo(cpu)()
		for !stop.Load() {
			tr.Progress(w)
		}
	})
}

func benchPair(b *testing.B, ring int, forceCopy bool) (*job, *packet.Pool) {
	pool, err := packet.New(packet.Config{Workers: 2, PerWorker: 64, Shared: 1024, PayloadSize: 8 << 10})
	if err != nil {
		b.Fatal(err)
	}
	return newJob(b, 2, 2, func(int) shm.Config { return shm.Config{Pool: pool, RingSize: ring, ForceCopy: forceCopy} }), pool
}

// BenchmarkPingPong: an 8-byte packet there and back; ns/one-way is half
// the round trip.
func BenchmarkPingPong(b *testing.B) {
	for _, size := range []int{8, 1024} {
		b.Run(sizeName(size), func(b *testing.B) {
			j, pool := benchPair(b, shm.DefaultRingSize, false)
			me := &flag{pool: pool}
			if err := j.trs[0].Bind(0, me, pool); err != nil {
				b.Fatal(err)
			}
			if err := j.trs[1].Bind(1, &echo{tr: j.trs[1], to: 0, pool: pool}, pool); err != nil {
				b.Fatal(err)
			}
			var stop atomic.Bool
			var wg sync.WaitGroup
			spin(j.trs[1], 1, &stop, 1, &wg)
			defer lockTo(0)()
			var rt roundTrips
			b.ResetTimer()
			for i := range b.N {
				start := time.Now()
				pk := pool.Get(0)
				pk.SetLen(size)
				if err := j.trs[0].Send(0, 1, pk); err != nil {
					b.Fatal(err)
				}
				for me.n <= i {
					j.trs[0].Progress(0)
				}
				rt.add(b.N, start)
			}
			b.StopTimer()
			rt.report(b)
			stop.Store(true)
			wg.Wait()
		})
	}
}

// BenchmarkLoopback: one thread sends 8 bytes to the other process and
// drives that process's progress, which delivers it: the processor time
// of both halves of a message, without waiting for another core (on a
// loaded machine the cross-core figures measure the scheduler).
func BenchmarkLoopback(b *testing.B) {
	for _, size := range []int{8, 1024} {
		b.Run(sizeName(size), func(b *testing.B) {
			j, pool := benchPair(b, shm.DefaultRingSize, false)
			sink := &flag{pool: pool}
			for a := range 2 {
				if err := j.trs[a].Bind(rdma.Addr(a), sink, pool); err != nil {
					b.Fatal(err)
				}
			}
			defer lockTo(0)()
			b.ResetTimer()
			cpu := testenv.ProcessCPU()
			for range b.N {
				pk := pool.Get(0)
				pk.SetLen(size)
				if err := j.trs[0].Send(0, 1, pk); err != nil {
					b.Fatal(err)
				}
				j.trs[1].Progress(0)
			}
			b.StopTimer()
			b.ReportMetric(float64(testenv.ProcessCPU()-cpu)/float64(b.N), "cpu-ns/op")
			if sink.n != b.N {
				b.Fatalf("%d of %d arrived", sink.n, b.N)
			}
		})
	}
}

// BenchmarkMessageRate: a stream of 8-byte packets from one process to
// the other, which counts them; a full ring makes the sender try again.
// In the pause variants the consumer, after a Progress that found nothing,
// waits that many iterations of an empty loop before it polls again: a
// consumer polling the ring's tail as fast as it can takes its cache line
// away from the producer at every message.
func BenchmarkMessageRate(b *testing.B) {
	for _, pause := range []int{0, 50, 200} {
		b.Run("pause="+strconv.Itoa(pause), func(b *testing.B) { benchMessageRate(b, pause) })
	}
}

func benchMessageRate(b *testing.B, pause int) {
	j, pool := benchPair(b, shm.DefaultRingSize, false)
	if err := j.trs[0].Bind(0, &flag{pool: pool}, pool); err != nil {
		b.Fatal(err)
	}
	var got atomic.Int64
	if err := j.trs[1].Bind(1, rdmaFunc(func(w int, pk *packet.Packet) { got.Add(1); pool.Put(w, pk) }), pool); err != nil {
		b.Fatal(err)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Go(func() {
		defer lockTo(1)()
		for !stop.Load() {
			if j.trs[1].Progress(1) == 0 {
				for i := 0; i < pause; i++ {
					sink += i
				}
			}
		}
	})
	defer lockTo(0)()
	b.ResetTimer()
	for range b.N {
		pk := pool.Get(0)
		for pk == nil {
			pk = pool.Get(0)
		}
		pk.SetLen(8)
		for {
			err := j.trs[0].Send(0, 1, pk)
			if err == nil {
				break
			}
			if !errors.Is(err, rdma.ErrAgain) {
				b.Fatal(err)
			}
		}
	}
	for got.Load() < int64(b.N) {
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds()/1e6, "Mmsg/s")
	stop.Store(true)
	wg.Wait()
}

// sink keeps the pause loops from being optimised away.
var sink int

type rdmaFunc func(w int, pk *packet.Packet)

func (f rdmaFunc) Receive(w int, pk *packet.Packet) { f(w, pk) }

// BenchmarkPut: 1 MiB Puts into the other process's registered buffer, by
// cross-memory attach and copied through the rings (the owner's progress
// runs on the other thread).
func BenchmarkPut(b *testing.B) {
	for _, forceCopy := range []bool{false, true} {
		name := "cma"
		if forceCopy {
			name = "copy"
		}
		b.Run(name+"/1MiB", func(b *testing.B) {
			const size = 1 << 20
			j, pool := benchPair(b, 1<<20, forceCopy)
			for a := range 2 {
				if err := j.trs[a].Bind(rdma.Addr(a), &flag{pool: pool}, pool); err != nil {
					b.Fatal(err)
				}
			}
			dst := make([]byte, size)
			r, err := j.trs[1].Register(dst)
			if err != nil {
				b.Fatal(err)
			}
			src := make([]byte, size)
			fillData(src, 1, 1)
			var stop atomic.Bool
			var wg sync.WaitGroup
			spin(j.trs[1], 1, &stop, 1, &wg)
			defer lockTo(0)()
			b.SetBytes(size)
			b.ResetTimer()
			for range b.N {
				if err := j.trs[0].Put(1, r, 0, src); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			stop.Store(true)
			wg.Wait()
		})
	}
}

// BenchmarkProcessesPingPong: the ping-pong between two real processes.
func BenchmarkProcessesPingPong(b *testing.B) {
	dir, job := b.TempDir(), "bench"+strconv.Itoa(os.Getpid())+"-"+strconv.FormatInt(jobCounter.Add(1), 10)
	c := startChild(b, "echo", dir, job, false)
	n, err := newNode(dir, job, 0, false)
	if err != nil {
		b.Fatalf("New: %v\nchild: %s", err, c.out.String())
	}
	defer n.tr.Close()
	got := 0
	n.recv = func(pk *packet.Packet) { got++; n.pool.Put(packet.NoWorker, pk) }
	defer lockTo(0)()
	var rt roundTrips
	ping := func(i int) {
		start := time.Now()
		defer rt.add(b.N, start)
		pk := n.pool.Get(packet.NoWorker)
		pk.Context = streamPing
		pk.SetLen(8)
		if err := n.tr.Send(packet.NoWorker, 1, pk); err != nil {
			b.Fatal(err)
		}
		deadline := time.Now().Add(procLimit)
		for spins := 0; got <= i; spins++ {
			n.tr.Progress(packet.NoWorker)
			if spins%(1<<20) == 0 && time.Now().After(deadline) {
				b.Fatalf("no echo\nchild: %s", c.out.String())
			}
		}
	}
	for i := range 1000 { // warm up
		ping(i)
	}
	got -= 1000
	rt = roundTrips{}
	b.ResetTimer()
	for i := range b.N {
		ping(i)
	}
	b.StopTimer()
	rt.report(b)
	pk := n.pool.Get(packet.NoWorker)
	pk.Context = streamDone
	if err := n.tr.Send(packet.NoWorker, 1, pk); err != nil {
		b.Fatal(err)
	}
	c.wait(b)
}

// runEcho is the child of BenchmarkProcessesPingPong: it echoes every
// packet until one of streamDone, spinning (it sleeps only after a long
// idle time).
func runEcho(n *node) error {
	done := false
	n.recv = func(pk *packet.Packet) {
		if pk.Context == streamDone {
			done = true
			n.pool.Put(packet.NoWorker, pk)
			return
		}
		n.send(pk)
	}
	defer lockTo(1)()
	deadline := time.Now().Add(10 * procLimit)
	for idle := 0; !done; {
		if n.progress() > 0 {
			idle = 0
			continue
		}
		if idle++; idle > 1<<22 {
			if time.Now().After(deadline) {
				return errors.New("echo: timed out")
			}
			n.tr.Sleep(time.Millisecond)
		}
	}
	return n.err
}

// roundTrips samples round-trip times of a ping-pong: on a loaded machine
// the mean measures the scheduler (a spinning peer that lost its core),
// the median and the minimum the transport.
type roundTrips struct{ d []time.Duration }

func (r *roundTrips) add(n int, start time.Time) {
	if r.d == nil {
		r.d = make([]time.Duration, 0, min(n, 1<<20))
	}
	if len(r.d) < cap(r.d) {
		r.d = append(r.d, time.Since(start))
	}
}

// report adds the mean, median and minimum one-way times (half the round
// trip, the timing call included).
func (r *roundTrips) report(b *testing.B) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/2, "ns/one-way")
	if len(r.d) == 0 {
		return
	}
	slices.Sort(r.d)
	b.ReportMetric(float64(r.d[len(r.d)/2].Nanoseconds())/2, "p50-ns/one-way")
	b.ReportMetric(float64(r.d[0].Nanoseconds())/2, "min-ns/one-way")
}

func sizeName(n int) string {
	if n >= 1024 {
		return strconv.Itoa(n>>10) + "KiB"
	}
	return strconv.Itoa(n) + "B"
}

// BenchmarkParallelSend: every goroutine of b.RunParallel sends 8-byte
// packets to the other process, through the one ring between the two (the
// senders take turns with the ring's spinlock); a third goroutine
// consumes. Compare with BenchmarkMessageRate's single sender.
func BenchmarkParallelSend(b *testing.B) {
	j, pool := benchPair(b, shm.DefaultRingSize, false)
	if err := j.trs[0].Bind(0, &flag{pool: pool}, pool); err != nil {
		b.Fatal(err)
	}
	var got atomic.Int64
	if err := j.trs[1].Bind(1, rdmaFunc(func(w int, pk *packet.Packet) { got.Add(1); pool.Put(w, pk) }), pool); err != nil {
		b.Fatal(err)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Go(func() {
		for !stop.Load() {
			j.trs[1].Progress(packet.NoWorker)
		}
	})
	var sent atomic.Int64
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			pk := pool.Get(packet.NoWorker)
			for pk == nil {
				pk = pool.Get(packet.NoWorker)
			}
			pk.SetLen(8)
			for {
				err := j.trs[0].Send(packet.NoWorker, 1, pk)
				if err == nil {
					break
				}
				if !errors.Is(err, rdma.ErrAgain) {
					b.Error(err)
					return
				}
				runtime.Gosched()
			}
			sent.Add(1)
		}
	})
	for got.Load() < sent.Load() {
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds()/1e6, "Mmsg/s")
	stop.Store(true)
	wg.Wait()
}
