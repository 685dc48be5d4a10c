package comm

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fibermpi/fibermpi/endpoint"
	"github.com/fibermpi/fibermpi/fiber"
	"github.com/fibermpi/fibermpi/internal/jobtest"
)

// The two-level collectives (Barrier, Bcast, Reduce, Allreduce over ranks
// in several processes, several ranks in some) under every job layout of
// jobtest, against serial references: every root, eager and rendezvous
// sizes, in place and not, commutative and not, blocking and nonblocking,
// on the world (each process's ranks consecutive) and on a communicator
// whose processes' ranks interleave (a non-commutative reduction then runs
// by messages over all ranks).
func TestTwoLevel(t *testing.T) {
	for _, ranks := range []int{5, 6} {
		t.Run(fmt.Sprint("ranks=", ranks), func(t *testing.T) {
			jobtest.Run(t, ranks, endpoint.ThreadSingle, func(ep *endpoint.Endpoint) error {
				w, err := World[int64](ep)
				if err != nil {
					return err
				}
				if procs := ep.Proc().Procs(); procs > 1 && (w.topology() == nil) != (procs == ranks) {
					return fmt.Errorf("%d ranks in %d processes: two-level layout %v", ranks, procs, w.topology())
				}
				if err := checkTwoLevel(w); err != nil {
					return fmt.Errorf("world: %w", err)
				}
				// Even ranks first, then odd: each process's ranks
				// interleave with the others'.
				r := w.Rank()
				mixed, err := w.Split(0, r%2*1000+r)
				if err != nil {
					return err
				}
				if tp := mixed.topology(); tp != nil && tp.contiguous && ep.Proc().Procs() > 1 && ranks > 5 {
					return errors.New("the interleaved communicator's groups are contiguous")
				}
				if err := checkTwoLevel(mixed); err != nil {
					return fmt.Errorf("interleaved: %w", err)
				}
				return mixed.Free()
			})
		})
	}
}

// TestTwoLevelLayoutShared: the ranks of the world at one process share
// one two-level layout (computing one per rank made the world's first
// collective quadratic in the ranks: 24 s for 20 000 ranks in two
// processes), and each rank's place in it agrees with the groups.
func TestTwoLevelLayoutShared(t *testing.T) {
	var mu sync.Mutex
	layouts := map[*endpoint.Process]map[*sharedTopo]bool{}
	jobtest.Run(t, 6, endpoint.ThreadSingle, func(ep *endpoint.Endpoint) error {
		w, err := World[int64](ep)
		if err != nil {
			return err
		}
		tp := w.topology()
		if tp == nil {
			return nil // one process, or one rank per process
		}
		for r := range w.Size() {
			g, i := tp.groupOf(r)
			if tp.groups[g][i] != r {
				return fmt.Errorf("groupOf(%d) = %d, %d, where group %d is %v", r, g, i, g, tp.groups[g])
			}
		}
		if got := tp.groups[tp.mine][tp.local]; got != w.Rank() {
			return fmt.Errorf("rank %d placed at group %d index %d, which holds rank %d", w.Rank(), tp.mine, tp.local, got)
		}
		mu.Lock()
		defer mu.Unlock()
		if layouts[ep.Proc()] == nil {
			layouts[ep.Proc()] = map[*sharedTopo]bool{}
		}
		layouts[ep.Proc()][tp.sh] = true
		return nil
	})
	if len(layouts) == 0 {
		t.Fatal("no job layout put the world in two levels")
	}
	for p, m := range layouts {
		if len(m) != 1 {
			t.Errorf("process %d: its ranks hold %d layouts of the world, want 1", p.Rank(), len(m))
		}
	}
}

func checkTwoLevel(c *Comm[int64]) error {
	p, r := c.Size(), c.Rank()
	for _, n := range twoLevelSizes {
		in := make([][]int64, p)
		for q := range p {
			in[q] = make([]int64, n)
			for i := range in[q] {
				in[q][i] = val(q, i) % 1000
			}
		}
		sum := refFold(Sum[int64](), in)
		for _, inPlace := range []bool{false, true} {
			what := fmt.Sprintf("n=%d in place %v", n, inPlace)
			got := make([]int64, n)
			send := slices.Clone(in[r])
			if inPlace {
				send = got
				copy(got, in[r])
			}
			if err := c.Allreduce(send, got, Sum[int64]()); err != nil {
				return fmt.Errorf("Allreduce %s: %w", what, err)
			}
			if err := diff("Allreduce "+what, got, sum); err != nil {
				return err
			}
			for root := range p {
				var out []int64
				send := slices.Clone(in[r])
				if r == root {
					out = make([]int64, n)
					if inPlace {
						copy(out, send)
						send = out
					}
				}
				if err := c.Reduce(send, out, Sum[int64](), root); err != nil {
					return fmt.Errorf("Reduce %s root %d: %w", what, root, err)
				}
				if r == root {
					if err := diff(fmt.Sprintf("Reduce %s root %d", what, root), out, sum); err != nil {
						return err
					}
				}
			}
		}
		for root := range p {
			buf := make([]int64, n)
			if r == root {
				copy(buf, in[root])
			}
			if err := c.Bcast(buf, root); err != nil {
				return fmt.Errorf("Bcast n=%d root %d: %w", n, root, err)
			}
			if err := diff(fmt.Sprintf("Bcast n=%d root %d", n, root), buf, in[root]); err != nil {
				return err
			}
		}
		if err := c.Barrier(); err != nil {
			return err
		}
		// Non-commutative, in rank order.
		a, err := As[affine](c)
		if err != nil {
			return err
		}
		ain := make([][]affine, p)
		for q := range p {
			ain[q] = make([]affine, n)
			for i := range ain[q] {
				ain[q][i] = affine{A: int64(2*q + 3 + i%4), B: int64(q - i)}
			}
		}
		want := refFold(compose, ain)
		got := make([]affine, n)
		if err := a.Allreduce(ain[r], got, compose); err != nil {
			return fmt.Errorf("Allreduce compose n=%d: %w", n, err)
		}
		if err := diff(fmt.Sprintf("Allreduce compose n=%d", n), got, want); err != nil {
			return err
		}
		root := p - 1
		var out []affine
		if r == root {
			out = make([]affine, n)
		}
		if err := a.Reduce(ain[r], out, compose, root); err != nil {
			return fmt.Errorf("Reduce compose n=%d: %w", n, err)
		}
		if r == root {
			if err := diff(fmt.Sprintf("Reduce compose n=%d", n), out, want); err != nil {
				return err
			}
		}
		// Nonblocking, waited for backwards at odd ranks.
		ar, bc := make([]int64, n), make([]int64, n)
		if r == 1%p {
			copy(bc, in[r])
		}
		var red []int64
		if r == 0 {
			red = make([]int64, n)
		}
		var reqs []*CollRequest
		for _, start := range []func() (*CollRequest, error){
			func() (*CollRequest, error) { return c.Iallreduce(in[r], ar, Sum[int64]()) },
			func() (*CollRequest, error) { return c.Ibarrier() },
			func() (*CollRequest, error) { return c.Ibcast(bc, 1%p) },
			func() (*CollRequest, error) { return c.Ireduce(in[r], red, Sum[int64](), 0) },
		} {
			q, err := start()
			if err != nil {
				return err
			}
			reqs = append(reqs, q)
		}
		if r%2 == 1 {
			slices.Reverse(reqs)
		}
		for _, q := range reqs {
			if err := q.Wait(); err != nil {
				return fmt.Errorf("nonblocking n=%d: %w", n, err)
			}
		}
		if err := diff("Iallreduce", ar, sum); err != nil {
			return err
		}
		if err := diff("Ibcast", bc, in[1%p]); err != nil {
			return err
		}
		if r == 0 {
			if err := diff("Ireduce", red, sum); err != nil {
				return err
			}
		}
	}
	return nil
}

var twoLevelSizes = []int{0, 1, 300, 3000}

// TestTwoLevelAreaOutlivesEarlyLeaver is TestShmAreaOutlivesEarlyLeaver
// for a process's area in a two-level collective: the root, which leads
// its process, stages a small Bcast for its process's other rank, finishes
// the leaders' part, frees and drops its communicator and runs the
// collector before that rank first touches the communicator.
func TestTwoLevelAreaOutlivesEarlyLeaver(t *testing.T) {
	var setup jobtest.Setup
	for _, s := range jobtest.Setups(4) {
		if s.Name == "procs=2/sync" {
			setup = s
		}
	}
	if setup.Name == "" {
		t.Fatal("jobtest has no procs=2/sync layout")
	}
	var gone atomic.Bool
	err := jobtest.RunSetup(setup, 4, endpoint.ThreadSingle, func(ep *endpoint.Endpoint) error {
		w, err := World[int64](ep)
		if err != nil {
			return err
		}
		d, err := w.Dup()
		if err != nil {
			return err
		}
		switch w.Rank() {
		case 0:
			if err := d.Bcast([]int64{42}, 0); err != nil {
				return err
			}
			if d.topology() == nil || d.topology().node == nil {
				return errors.New("the root's process has no area: not two levels")
			}
			if err := d.Free(); err != nil {
				return err
			}
			d = nil
			runtime.GC()
			runtime.GC()
			gone.Store(true)
			return w.Barrier()
		case 1:
			for !gone.Load() {
				fiber.Sleep(ep.Waiter(), time.Millisecond)
			}
		}
		return lateBcast(w, d)
	})
	if err != nil {
		t.Fatal(err)
	}
}
