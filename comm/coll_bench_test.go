package comm

import (
	"fmt"
	"math"
	"math/bits"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/fibermpi/fibermpi/endpoint"
	"github.com/fibermpi/fibermpi/fiber"
	"github.com/fibermpi/fibermpi/internal/jobtest"
)

// benchFibers runs n fiber ranks on the default workers of one process,
// their world's collectives going the given path: rank 0 runs lead (the
// benchmark loop: a fiber may call b.Loop, it is the only caller), the
// others rest; it returns when all have.
func benchFibers(b *testing.B, n int, path CollPath, lead, rest func(c *Comm[float64]) error) {
	b.Helper()
	err := endpoint.Run(n, func(ep *endpoint.Endpoint) error {
		c, err := World[float64](ep)
		if err != nil {
			return err
		}
		usePath(c, path)
		if c.Rank() == 0 {
			return lead(c)
		}
		return rest(c)
	})
	if err != nil {
		b.Fatal(err)
	}
}

var benchSizes = []struct {
	name  string
	elems int
}{{"8B", 1}, {"1KiB", 128}, {"1MiB", 128 << 10}}

// benchPaths are the contenders of the collective benchmarks: through
// memory (the default in one process) and the message schedules.
var benchPaths = []struct {
	name string
	path CollPath
}{{"shm", CollAuto}, {"msg", CollMessages}}

// BenchmarkAllreduce: Sum of float64 vectors over N fiber ranks of one
// process (rank 0 runs the benchmark loop), through memory and by
// messages. The last call carries a NaN that tells the others to stop.
func BenchmarkAllreduce(b *testing.B) {
	for _, n := range []int{2, 8, 64} {
		for _, sz := range benchSizes {
			for _, path := range benchPaths {
				b.Run(fmt.Sprintf("N=%d/size=%s/path=%s", n, sz.name, path.name), func(b *testing.B) {
					op := Sum[float64]()
					b.SetBytes(int64(8 * sz.elems))
					benchFibers(b, n, path.path, func(c *Comm[float64]) error {
						send, recv := make([]float64, sz.elems), make([]float64, sz.elems)
						for b.Loop() {
							if err := c.Allreduce(send, recv, op); err != nil {
								return err
							}
						}
						send[0] = math.NaN()
						return c.Allreduce(send, recv, op)
					}, func(c *Comm[float64]) error {
						send, recv := make([]float64, sz.elems), make([]float64, sz.elems)
						for {
							if err := c.Allreduce(send, recv, op); err != nil {
								return err
							}
							if math.IsNaN(recv[0]) {
								return nil
							}
						}
					})
				})
			}
		}
	}
}

// BenchmarkBarrier: N fiber ranks of one process, through memory and by
// messages. Rank 0 runs the loop; before its last barrier it publishes how
// many it runs in all, and the others stop after that many.
func BenchmarkBarrier(b *testing.B) {
	for _, n := range []int{2, 8, 64} {
		for _, path := range benchPaths {
			b.Run(fmt.Sprintf("N=%d/path=%s", n, path.name), func(b *testing.B) {
				var total atomic.Int64
				benchFibers(b, n, path.path, func(c *Comm[float64]) error {
					done := int64(0)
					for b.Loop() {
						done++
						if err := c.Barrier(); err != nil {
							return err
						}
					}
					total.Store(done + 1)
					return c.Barrier()
				}, func(c *Comm[float64]) error {
					for done := int64(1); ; done++ {
						if err := c.Barrier(); err != nil {
							return err
						}
						if t := total.Load(); t != 0 && done >= t {
							return nil
						}
					}
				})
			})
		}
	}
}

// BenchmarkBcast: broadcast from rank 0 (the benchmark loop) to N−1 fiber
// ranks, through memory and by messages.
func BenchmarkBcast(b *testing.B) {
	for _, n := range []int{2, 8, 64} {
		for _, sz := range benchSizes {
			for _, path := range benchPaths {
				b.Run(fmt.Sprintf("N=%d/size=%s/path=%s", n, sz.name, path.name), func(b *testing.B) {
					b.SetBytes(int64(8 * sz.elems))
					benchFibers(b, n, path.path, func(c *Comm[float64]) error {
						buf := make([]float64, sz.elems)
						for b.Loop() {
							if err := c.Bcast(buf, 0); err != nil {
								return err
							}
						}
						buf[0] = math.NaN()
						return c.Bcast(buf, 0)
					}, func(c *Comm[float64]) error {
						buf := make([]float64, sz.elems)
						for {
							if err := c.Bcast(buf, 0); err != nil {
								return err
							}
							if math.IsNaN(buf[0]) {
								return nil
							}
						}
					})
				})
			}
		}
	}
}

// dupper is one way of making (and freeing) a communicator, for
// BenchmarkCommDup.
type dupper interface {
	// dup makes and frees one communicator over par; mask is the rank's
	// private mask for the single-threaded algorithm.
	dup(par *Comm[int64], mask *[endpoint.ContextMaskLen]uint64) error
}

// singleDup is Gropp and Thakur 2007 §5.1's single-threaded algorithm: one
// Allreduce(AND) of a private mask, no lock, no ownership; unsafe with
// more than one thread per process.
type singleDup struct{}

func (singleDup) dup(par *Comm[int64], mask *[endpoint.ContextMaskLen]uint64) error {
	m := mask[:]
	got := make([]uint64, len(m))
	s := newSched(&par.st().coll)
	buildAllreduce(s, m, got, Band[uint64]())
	if err := s.run(); err != nil {
		return err
	}
	for w, x := range got[:endpoint.ContextWords] {
		if x != 0 {
			bit := uint64(1) << bits.TrailingZeros64(x)
			mask[w] &^= bit
			nc := par.derive(uint32(2*(64*w+bits.TrailingZeros64(x))), par.c.Addrs, par.rank)
			nc.x.owned = false // the private mask, not the endpoint's, holds it
			mask[w] |= bit     // Free
			return nil
		}
	}
	return endpoint.ErrNoContext
}

// fig3Dup is Dup (Gropp and Thakur 2007 Fig. 3, endpoint.NewContext) and Free.
type fig3Dup struct{}

func (fig3Dup) dup(par *Comm[int64], _ *[endpoint.ContextMaskLen]uint64) error {
	d, err := par.Dup()
	if err != nil {
		return err
	}
	return d.Free()
}

// BenchmarkCommDup is Gropp and Thakur 2007 Fig. 4 over 4 goroutine ranks (endpoints of
// one ThreadMultiple process): single is §5.1's algorithm, multi1 the
// Fig. 3 algorithm with one goroutine per endpoint, multi2 with two per
// endpoint, each duping its own parent at the same time. The figure is
// the time of one Dup+Free as the benchmark goroutine sees it.
func BenchmarkCommDup(b *testing.B) {
	const n = 4
	for _, cs := range []struct {
		name    string
		d       dupper
		threads int
	}{{"single", singleDup{}, 1}, {"multi1", fig3Dup{}, 1}, {"multi2", fig3Dup{}, 2}} {
		b.Run(cs.name, func(b *testing.B) {
			p, err := endpoint.Init(endpoint.ThreadMultiple, endpoint.Options{Workers: 1})
			if err != nil {
				b.Fatal(err)
			}
			defer p.Finalize()
			eps, err := p.CreateEndpoints(n)
			if err != nil {
				b.Fatal(err)
			}
			// One parent per thread index, made collectively first.
			parents := make([][]*Comm[int64], n)
			var wg sync.WaitGroup
			for e := range n {
				wg.Go(func() {
					h, _ := eps[e].Register(fiber.NewGoroutineWaiter())
					defer h.Unregister()
					w, _ := World[int64](h)
					for range cs.threads {
						d, err := w.Dup()
						if err != nil {
							b.Error(err)
							return
						}
						parents[e] = append(parents[e], d)
					}
				})
			}
			wg.Wait()
			// total[t] is set by thread t's leader (rank 0) before its last
			// iteration: every rank of that parent stops after it.
			var total [2]atomic.Int64
			var stop atomic.Bool
			loop := func(e, t int, leader bool, par *Comm[int64]) error {
				var mask [endpoint.ContextMaskLen]uint64
				for i := range mask {
					mask[i] = ^uint64(0)
				}
				for i := int64(1); ; i++ {
					if leader && stop.Load() && total[t].Load() == 0 {
						total[t].Store(i)
					}
					if err := cs.d.dup(par, &mask); err != nil {
						return err
					}
					if tt := total[t].Load(); tt != 0 && i >= tt {
						return nil
					}
				}
			}
			view := func(e, t int) (*Comm[int64], *endpoint.Endpoint) {
				h, _ := eps[e].Register(fiber.NewGoroutineWaiter())
				pc := parents[e][t]
				c, _ := New[int64](h, pc.Info(), pc.Rank())
				return c, h
			}
			for e := range n {
				for t := range cs.threads {
					if e == 0 && t == 0 {
						continue
					}
					wg.Go(func() {
						c, h := view(e, t)
						defer h.Unregister()
						if err := loop(e, t, e == 0, c); err != nil {
							b.Error(err)
						}
					})
				}
			}
			c, h := view(0, 0)
			var mask [endpoint.ContextMaskLen]uint64
			for i := range mask {
				mask[i] = ^uint64(0)
			}
			iters := int64(0)
			for b.Loop() {
				iters++
				if err := cs.d.dup(c, &mask); err != nil {
					b.Fatal(err)
				}
			}
			// One more, announced: the others stop after it.
			total[0].Store(iters + 1)
			stop.Store(true)
			if err := cs.d.dup(c, &mask); err != nil {
				b.Fatal(err)
			}
			wg.Wait()
			h.Unregister()
		})
	}
}

// BenchmarkTwoLevel: Allreduce of 8 B and Barrier over 2, 4 and 8 fiber
// ranks in 2 simulated processes (1, 2 and 4 endpoints each; jobtest's
// in-memory wire between them), in two levels (shm) and as message
// schedules over all ranks (msg).
func BenchmarkTwoLevel(b *testing.B) {
	for _, bench := range []string{"Allreduce8B", "Barrier"} {
		for _, ranks := range []int{2, 4, 8} {
			setup := jobtest.Setups(ranks)[2] // procs=2/sync
			for _, path := range benchPaths {
				b.Run(fmt.Sprintf("%s/%s/ranks=%d/path=%s", bench, setup.Name, ranks, path.name), func(b *testing.B) {
					var total atomic.Int64
					err := jobtest.RunSetup(setup, ranks, endpoint.ThreadSingle, func(ep *endpoint.Endpoint) error {
						c, err := World[float64](ep)
						if err != nil {
							return err
						}
						usePath(c, path.path)
						buf := []float64{1}
						op := func() error {
							if bench == "Barrier" {
								return c.Barrier()
							}
							return c.Allreduce(buf, buf, Sum[float64]())
						}
						if c.Rank() == 0 {
							done := int64(0)
							for b.Loop() {
								done++
								if err := op(); err != nil {
									return err
								}
							}
							total.Store(done + 1)
							return op()
						}
						for done := int64(1); ; done++ {
							if err := op(); err != nil {
								return err
							}
							if t := total.Load(); t != 0 && done >= t {
								return nil
							}
						}
					})
					if err != nil {
						b.Fatal(err)
					}
				})
			}
		}
	}
}

// BenchmarkFirstCollective: a job of many ranks, start to end, whose only
// work is one Allreduce of 8 B over the world, each rank's first
// collective (which lays out the world's collectives: its area, or its
// groups by process): in one process, and in two simulated ones (jobtest's
// in-memory wire; each process's ranks then meet through memory and their
// leaders by messages). One op is the whole job.
func BenchmarkFirstCollective(b *testing.B) {
	allreduce := func(ep *endpoint.Endpoint) error {
		c, err := World[int64](ep)
		if err != nil {
			return err
		}
		in, out := []int64{int64(c.Rank())}, []int64{0}
		if err := c.Allreduce(in, out, Sum[int64]()); err != nil {
			return err
		}
		if n := int64(c.Size()); out[0] != n*(n-1)/2 {
			return fmt.Errorf("rank %d: sum %d, want %d", c.Rank(), out[0], n*(n-1)/2)
		}
		return nil
	}
	for _, ranks := range []int{2000, 20000} {
		b.Run(fmt.Sprintf("procs=1/ranks=%d", ranks), func(b *testing.B) {
			for b.Loop() {
				if err := endpoint.Run(ranks, allreduce); err != nil {
					b.Fatal(err)
				}
			}
		})
		setup := jobtest.Setups(ranks)[2] // procs=2/sync
		b.Run(fmt.Sprintf("%s/ranks=%d", setup.Name, ranks), func(b *testing.B) {
			for b.Loop() {
				if err := jobtest.RunSetup(setup, ranks, endpoint.ThreadSingle, allreduce); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
