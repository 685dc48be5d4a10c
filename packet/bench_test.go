package packet

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// container is what BenchmarkPool compares: a source of packets that
// callers identify themselves to by worker index.
type container interface {
	get(w int) *Packet
	put(w int, pk *Packet)
}

const (
	benchPerWorker = 64
	benchShared    = 64
	benchMaxBatch  = 32 // ≤ packets per goroutine, as in Dang et al. 2016b §4.1.2
	benchPayload   = DefaultPayloadSize
)

type poolContender struct{ p *Pool }

func (c poolContender) get(w int) *Packet     { return c.p.Get(w) }
func (c poolContender) put(w int, pk *Packet) { c.p.Put(w, pk) }

// noWorkerContender is the pool used by callers without a deque (plain
// goroutines): the shared stack, then stealing.
type noWorkerContender struct{ p *Pool }

func (c noWorkerContender) get(int) *Packet       { return c.p.Get(NoWorker) }
func (c noWorkerContender) put(_ int, pk *Packet) { c.p.Put(NoWorker, pk) }

// syncPoolContender is sync.Pool holding packets; when it comes up empty
// (after a GC cleared it) it allocates, as sync.Pool's users do.
type syncPoolContender struct{ sp *sync.Pool }

func newSyncPoolContender(n int) syncPoolContender {
	lines := benchPayload / CacheLine
	sp := &sync.Pool{New: func() any { return newSlab(1, lines, 0).at(0, 0) }}
	for range n {
		sp.Put(newSlab(1, lines, 0).at(0, 0))
	}
	return syncPoolContender{sp}
}

func (c syncPoolContender) get(int) *Packet {
	pk := c.sp.Get().(*Packet)
	pk.clearHeader()
	return pk
}
func (c syncPoolContender) put(_ int, pk *Packet) { c.sp.Put(pk) }

// stackContender is one lock-free stack (the pool's shared stack) holding
// every packet.
type stackContender struct{ p *Pool }

func newStackContender(n int) stackContender {
	p, err := New(Config{Workers: 1, PerWorker: 1, Shared: n - 1, PayloadSize: benchPayload})
	if err != nil {
		panic(err)
	}
	i, _ := p.workers[0].popTop()
	p.shared.push(p.at(i))
	return stackContender{p}
}

func (c stackContender) get(int) *Packet {
	i, ok := c.p.shared.pop(c.p)
	if !ok {
		return nil
	}
	pk := c.p.at(i)
	pk.clearHeader()
	return pk
}
func (c stackContender) put(_ int, pk *Packet) { c.p.shared.push(pk) }

// chanContender is a buffered channel holding every packet.
type chanContender struct{ ch chan *Packet }

func newChanContender(n int) chanContender {
	p, err := New(Config{Workers: 1, PerWorker: 1, Shared: n - 1, PayloadSize: benchPayload})
	if err != nil {
		panic(err)
	}
	ch := make(chan *Packet, n)
	for range n {
		ch <- p.Get(NoWorker)
	}
	return chanContender{ch}
}

func (c chanContender) get(int) *Packet {
	select {
	case pk := <-c.ch:
		pk.clearHeader()
		return pk
	default:
		return nil
	}
}
func (c chanContender) put(_ int, pk *Packet) { c.ch <- pk }

// BenchmarkPool measures the cost of one get plus its return, as Dang et al. 2016b
// §4.1.2 does: each goroutine repeatedly takes a random batch of 1..32
// packets (the same random sequence for every contender), writes a header
// field, and returns the batch (Dang et al.'s random sleep between the two
// halves is left out: it would only add timer noise). One op is one get
// and its later return. Three figures per run:
//
//   - ns/op: wall time over the gets of all goroutines together
//     (aggregate throughput);
//   - goroutine-ns/op: wall time one goroutine spends per get+return
//     (ns/op times the number of goroutines);
//   - cpu-ns/op: CPU time one goroutine's thread uses per get+return —
//     the same as goroutine-ns/op minus the time the thread sat preempted,
//     which on a shared machine is most of the noise.
//
// Run it with -cpu 1,2: RunParallel starts GOMAXPROCS goroutines, and
// each locks its OS thread, like a worker, and acts as its own worker
// index (b.Loop cannot drive parallel goroutines, hence pb.Next). Every
// contender holds the same number of packets and hands out a packet with
// a zeroed header. "pool-noworker" is the pool used with NoWorker, as
// plain goroutines use it (shared stack first, then stealing). "local" is
// a floor, not a pool: a plain slice per worker with no synchronisation
// at all.
func BenchmarkPool(b *testing.B) {
	contenders := []struct {
		name string
		make func(workers, n int) container
	}{
		{"pool", func(workers, _ int) container {
			p, err := New(Config{Workers: workers, PerWorker: benchPerWorker, Shared: benchShared, PayloadSize: benchPayload})
			if err != nil {
				b.Fatal(err)
			}
			return poolContender{p}
		}},
		{"pool-noworker", func(workers, _ int) container {
			p, err := New(Config{Workers: workers, PerWorker: benchPerWorker, Shared: benchShared, PayloadSize: benchPayload})
			if err != nil {
				b.Fatal(err)
			}
			return noWorkerContender{p}
		}},
		{"syncpool", func(_, n int) container { return newSyncPoolContender(n) }},
		{"stack", func(_, n int) container { return newStackContender(n) }},
		{"chan", func(_, n int) container { return newChanContender(n) }},
		{"local", func(workers, n int) container { return newLocalContender(workers) }},
	}
	for _, c := range contenders {
		b.Run(c.name, func(b *testing.B) {
			workers := runtime.GOMAXPROCS(0)
			ct := c.make(workers, workers*benchPerWorker+benchShared)
			var ids atomic.Int32
			var cpuNs atomic.Int64
			cpuOK := true
			var cpuMu sync.Mutex
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				w := int(ids.Add(1) - 1)
				if w >= workers {
					w = NoWorker
				}
				// Like a worker, each goroutine keeps its OS thread, so
				// the thread's CPU clock measures this goroutine alone.
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				start, ok := threadCPUTime()
				defer func() {
					end, ok2 := threadCPUTime()
					cpuNs.Add(end - start)
					if !ok || !ok2 {
						cpuMu.Lock()
						cpuOK = false
						cpuMu.Unlock()
					}
				}()
				// The generator lives on this goroutine's stack, so
				// goroutines share no line through it.
				rng := rand.NewPCG(uint64(w+1), 42)
				var batch [benchMaxBatch]*Packet
				for {
					k := 1 + int(rng.Uint64()%benchMaxBatch)
					n := 0
					for n < k && pb.Next() {
						pk := ct.get(w)
						if pk == nil {
							b.Errorf("%s ran dry", c.name)
							return
						}
						pk.Tag = int32(n)
						batch[n] = pk
						n++
					}
					for i := range n {
						ct.put(w, batch[i])
					}
					if n < k {
						return
					}
				}
			})
			// ns/op divides wall time by the gets of all goroutines
			// together; goroutine-ns/op is the time one goroutine spends
			// per get+return (Dang et al.'s per-thread latency).
			g := int(ids.Load())
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())*float64(g)/float64(b.N), "goroutine-ns/op")
			// cpu-ns/op is the CPU time the goroutines' threads used per
			// get+return: like goroutine-ns/op, but blind to the time a
			// thread sat preempted on this shared machine.
			if cpuOK {
				b.ReportMetric(float64(cpuNs.Load())/float64(b.N), "cpu-ns/op")
			}
		})
	}
}

// localContender is the floor: a plain slice per worker, no
// synchronisation at all (correct only because each goroutine of the
// benchmark has its own worker index). It measures the benchmark's own
// overhead and how much parallelism the machine gives right now.
type localContender struct{ free []localStack }

type localStack struct {
	s []*Packet
	_ [64 - 24]byte
}

func newLocalContender(workers int) *localContender {
	p, err := New(Config{Workers: workers, PerWorker: benchPerWorker, Shared: benchShared, PayloadSize: benchPayload})
	if err != nil {
		panic(err)
	}
	c := &localContender{free: make([]localStack, workers)}
	for w := range workers {
		for range benchPerWorker {
			c.free[w].s = append(c.free[w].s, p.Get(w))
		}
	}
	return c
}

func (c *localContender) get(w int) *Packet {
	s := c.free[w].s
	pk := s[len(s)-1]
	c.free[w].s = s[:len(s)-1]
	pk.clearHeader()
	return pk
}

func (c *localContender) put(w int, pk *Packet) { c.free[w].s = append(c.free[w].s, pk) }
