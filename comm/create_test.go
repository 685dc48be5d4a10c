package comm

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/fibermpi/fibermpi/endpoint"
	"github.com/fibermpi/fibermpi/fiber"
)

func TestDupSplitCreate(t *testing.T) {
	forEachSize(t, func(w *Comm[int64]) error {
		p, r := w.Size(), w.Rank()
		free0 := w.Endpoint().FreeContexts()
		d, err := w.Dup()
		if err != nil {
			return err
		}
		if rel := w.Compare(d); rel != Congruent {
			return fmt.Errorf("Compare(world, dup) = %v", rel)
		}
		if rel := d.Compare(d); rel != Ident {
			return fmt.Errorf("Compare(dup, dup) = %v", rel)
		}
		// Same tag, same peers: the dup's message must not match the
		// world's receive.
		if p > 1 {
			next, prev := (r+1)%p, (r-1+p)%p
			// Nonblocking sends: with rendezvous a blocking ring deadlocks.
			s1, err := w.Isend([]int64{1}, next, 5)
			if err != nil {
				return err
			}
			s2, err := d.Isend([]int64{2}, next, 5)
			if err != nil {
				return err
			}

			got := []int64{0}
			if _, err := d.Recv(got, prev, 5); err != nil || got[0] != 2 {
				return fmt.Errorf("dup receive got %v, %v", got, err)
			}
			if _, err := w.Recv(got, prev, 5); err != nil || got[0] != 1 {
				return fmt.Errorf("world receive got %v, %v", got, err)
			}
			if err := WaitAll(s1, s2); err != nil {
				return err
			}
		}
		// Split by r%3, ordered by descending rank; rank 3 opts out.
		color := r % 3
		if r == 3 {
			color = Undefined
		}
		s, err := w.Split(color, -r)
		if err != nil {
			return err
		}
		if r == 3 {
			if s != nil {
				return errors.New("Split with Undefined color returned a communicator")
			}
		} else {
			var members []int
			for q := p - 1; q >= 0; q-- {
				if q%3 == r%3 && q != 3 {
					members = append(members, q)
				}
			}
			if s.Size() != len(members) || members[s.Rank()] != r {
				return fmt.Errorf("Split: size %d rank %d, want members %v", s.Size(), s.Rank(), members)
			}
			sum := []int64{0}
			if err := s.Allreduce([]int64{int64(r)}, sum, Sum[int64]()); err != nil {
				return err
			}
			want := 0
			for _, m := range members {
				want += m
			}
			if sum[0] != int64(want) {
				return fmt.Errorf("Allreduce on split: %d, want %d", sum[0], want)
			}
			if got, _ := s.Group().TranslateRanks([]int{s.Rank()}, w.Group()); got[0] != r {
				return fmt.Errorf("TranslateRanks: %v, want %d", got, r)
			}
			if err := s.Free(); err != nil {
				return err
			}
		}
		// Create over the even ranks, reversed; odd ranks get nil.
		var evens []int
		for q := p - 1; q >= 0; q-- {
			if q%2 == 0 {
				evens = append(evens, q)
			}
		}
		g, err := w.Group().Incl(evens...)
		if err != nil {
			return err
		}
		e, err := d.Create(g)
		if err != nil {
			return err
		}
		if (e != nil) != (r%2 == 0) {
			return fmt.Errorf("Create: got %v for rank %d", e, r)
		}
		if e != nil {
			if e.Rank() != g.Rank(w.Endpoint()) || e.Size() != len(evens) {
				return fmt.Errorf("Create: rank %d size %d", e.Rank(), e.Size())
			}
			if err := e.Barrier(); err != nil {
				return err
			}
			if err := e.Free(); err != nil {
				return err
			}
		}
		// CreateGroup over the odd ranks, called by them only.
		if r%2 == 1 {
			odd, err := w.Group().Excl(evens...)
			if err != nil {
				return err
			}
			o, err := w.CreateGroup(odd, 7)
			if err != nil {
				return err
			}
			v := []int64{int64(r)}
			if err := o.Bcast(v, 0); err != nil {
				return err
			}
			if v[0] != 1 {
				return fmt.Errorf("Bcast on CreateGroup's communicator: %d", v[0])
			}
			o.SetName("odd")
			if o.Name() != "odd" {
				return fmt.Errorf("Name %q", o.Name())
			}
			if err := o.Free(); err != nil {
				return err
			}
		}
		if err := d.Free(); err != nil {
			return err
		}
		if err := d.Free(); !errors.Is(err, ErrFreed) {
			return fmt.Errorf("second Free: %v", err)
		}
		if err := d.Barrier(); !errors.Is(err, ErrFreed) {
			return fmt.Errorf("Barrier after Free: %v", err)
		}
		if err := w.Free(); !errors.Is(err, ErrNotFreeable) {
			return fmt.Errorf("Free(world): %v", err)
		}
		if got := w.Endpoint().FreeContexts(); got != free0 {
			return fmt.Errorf("free context pairs %d after freeing everything, want %d", got, free0)
		}
		return w.Barrier()
	})
}

func TestGroupOps(t *testing.T) {
	err := endpoint.Run(6, func(ep *endpoint.Endpoint) error {
		w, err := World[int](ep)
		if err != nil {
			return err
		}
		all := w.Group()
		a, _ := all.Incl(0, 1, 2, 3)
		b, _ := all.Incl(5, 3, 1)
		checks := []struct {
			name string
			got  Group
			want []int // ranks of all
		}{
			{"union", a.Union(b), []int{0, 1, 2, 3, 5}},
			{"intersection", a.Intersection(b), []int{1, 3}},
			{"difference", a.Difference(b), []int{0, 2}},
		}
		for _, c := range checks {
			want, _ := all.Incl(c.want...)
			if c.got.Compare(want) != Ident {
				return fmt.Errorf("%s: %v, want %v", c.name, c.got.Addrs(), want.Addrs())
			}
		}
		tr, err := b.TranslateRanks([]int{0, 1, 2}, a)
		if err != nil || fmt.Sprint(tr) != "[-1 3 1]" {
			return fmt.Errorf("TranslateRanks %v %v", tr, err)
		}
		rev, _ := a.Incl(3, 2, 1, 0)
		if a.Compare(rev) != Similar || a.Compare(b) != Unequal {
			return errors.New("Compare")
		}
		if _, err := all.Incl(1, 1); !errors.Is(err, ErrGroup) {
			return fmt.Errorf("Incl duplicate: %v", err)
		}
		if _, err := all.Excl(6); !errors.Is(err, ErrGroup) {
			return fmt.Errorf("Excl out of range: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// An erroneous collective call ends the job (see coll.go).
	err = endpoint.Run(3, func(ep *endpoint.Endpoint) error {
		w, err := World[int](ep)
		if err != nil {
			return err
		}
		if _, err := w.Split(-5, 0); !errors.Is(err, ErrGroup) {
			return fmt.Errorf("Split color -5: %v", err)
		}
		return nil
	})
	if !errors.Is(err, ErrGroup) {
		t.Fatalf("a job with Split(-5): %v, want it to end with ErrGroup", err)
	}
}

// TestContextExhaustion dups until no pair is left: a clear error, and a
// freed communicator's pair is reused.
func TestContextExhaustion(t *testing.T) {
	err := endpoint.Run(2, func(ep *endpoint.Endpoint) error {
		w, err := World[byte](ep)
		if err != nil {
			return err
		}
		var comms []*Comm[byte]
		for {
			d, err := w.Dup()
			if errors.Is(err, endpoint.ErrNoContext) {
				break
			}
			if err != nil {
				return err
			}
			comms = append(comms, d)
		}
		if len(comms) != endpoint.ContextPairs-1 { // the world holds one
			return fmt.Errorf("%d dups before exhaustion, want %d", len(comms), endpoint.ContextPairs-1)
		}
		if err := comms[100].Free(); err != nil {
			return err
		}
		d, err := w.Dup()
		if err != nil {
			return fmt.Errorf("Dup after a Free: %v", err)
		}
		if d.Info().Context != comms[100].Info().Context {
			return fmt.Errorf("reused context %d, want %d", d.Info().Context, comms[100].Info().Context)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestFreeWhilePending frees a communicator with a receive in flight: its
// context stays taken until the receive completes.
func TestFreeWhilePending(t *testing.T) {
	err := endpoint.Run(2, func(ep *endpoint.Endpoint) error {
		w, err := World[int](ep)
		if err != nil {
			return err
		}
		d, err := w.Dup()
		if err != nil {
			return err
		}
		before := ep.FreeContexts()
		if w.Rank() == 1 {
			buf := []int{0}
			q, err := d.Irecv(buf, 0, 1)
			if err != nil {
				return err
			}
			if err := d.Free(); err != nil {
				return err
			}
			if got := ep.FreeContexts(); got != before {
				return fmt.Errorf("context released with a receive pending (%d → %d free)", before, got)
			}
			if err := w.Send(nil, 0, 9); err != nil { // go ahead
				return err
			}
			if _, err := q.Wait(); err != nil || buf[0] != 42 {
				return fmt.Errorf("pending receive on the freed communicator: %v %v", buf, err)
			}
			if got := ep.FreeContexts(); got != before+1 {
				return fmt.Errorf("context not released after the receive (%d → %d free)", before, got)
			}
			return nil
		}
		if _, err := w.Recv(nil, 1, 9); err != nil {
			return err
		}
		if err := d.Send([]int{42}, 1, 1); err != nil {
			return err
		}
		return d.Free()
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestConcurrentCommCreate: on every endpoint of a ThreadMultiple process,
// several goroutines create communicators at the same time, each over its
// own parent (some parents span every endpoint, some half of them), seed
// 002 §5's case. Every creation finishes, every new communicator works,
// and every context pair comes back.
func TestConcurrentCommCreate(t *testing.T) {
	const eps, per = 4, 4
	rounds := 8
	if testing.Short() {
		rounds = 4
	}
	p, err := endpoint.Init(endpoint.ThreadMultiple, endpoint.Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Finalize()
	hs, err := p.CreateEndpoints(eps)
	if err != nil {
		t.Fatal(err)
	}
	// Parents, made one after another by one goroutine per endpoint.
	parents := make([][]*Comm[int64], eps)
	base := make([]int, eps)
	var wg sync.WaitGroup
	for e := range eps {
		wg.Go(func() {
			h, err := hs[e].Register(fiber.NewGoroutineWaiter())
			if err != nil {
				t.Error(err)
				return
			}
			defer h.Unregister()
			w, err := World[int64](h)
			if err != nil {
				t.Error(err)
				return
			}
			for g := range per {
				var c *Comm[int64]
				if g%2 == 0 {
					c, err = w.Dup()
				} else {
					c, err = w.Split(e%2, e)
				}
				if err != nil {
					t.Error(err)
					return
				}
				parents[e] = append(parents[e], c)
			}
			base[e] = h.FreeContexts()
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	for e := range eps {
		for g := range per {
			wg.Go(func() {
				// Each goroutine registers its own handle and views its
				// parent through it.
				h, err := hs[e].Register(fiber.NewGoroutineWaiter())
				if err != nil {
					t.Error(err)
					return
				}
				defer h.Unregister()
				pc := parents[e][g]
				par, err := New[int64](h, pc.Info(), pc.Rank())
				if err != nil {
					t.Error(err)
					return
				}
				for i := range rounds {
					var c *Comm[int64]
					if i%2 == 0 {
						c, err = par.Dup()
					} else {
						c, err = par.Split(par.Rank()%2, 0)
					}
					if err != nil {
						t.Errorf("endpoint %d goroutine %d round %d: %v", e, g, i, err)
						return
					}
					sum := []int64{0}
					if err := c.Allreduce([]int64{1}, sum, Sum[int64]()); err != nil || sum[0] != int64(c.Size()) {
						t.Errorf("Allreduce on a new communicator: %v %v", sum, err)
						return
					}
					if err := c.Free(); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
	}
	wg.Wait()
	for e := range eps {
		h, _ := hs[e].Register(fiber.NewGoroutineWaiter())
		if got := h.FreeContexts(); got != base[e] {
			t.Errorf("endpoint %d: %d free pairs after the test, want %d", e, got, base[e])
		}
		h.Unregister()
	}
}

// TestCollectiveBadInput: locally detectable mistakes give the rank that
// makes them an error before anything is sent, and end the job (every
// other rank's calls fail too); ranks that disagree on sizes get a
// *MismatchError, with both sizes, whether the message was longer or
// shorter than expected.
func TestCollectiveBadInput(t *testing.T) {
	checks := []struct {
		name string
		call func(c *Comm[int], buf []int) error
		want error
	}{
		{"Bcast root 3", func(c *Comm[int], buf []int) error { return c.Bcast(buf, 3) }, ErrRoot},
		{"Reduce root -1", func(c *Comm[int], buf []int) error { return c.Reduce(buf, buf, Sum[int](), -1) }, ErrRoot},
		{"Allreduce zero op", func(c *Comm[int], buf []int) error { return c.Allreduce(buf, make([]int, 6), Op[int]{}) }, ErrOp},
		{"Allreduce short recv", func(c *Comm[int], buf []int) error {
			err := c.Allreduce(buf, make([]int, 5), Sum[int]())
			if ce := (*CountError)(nil); !errors.As(err, &ce) || ce.Have != 5 || ce.Want != 6 {
				return fmt.Errorf("CountError %+v (%w)", ce, err)
			}
			return err
		}, ErrCount},
		{"Allreduce overlap", func(c *Comm[int], buf []int) error { return c.Allreduce(buf[:4], buf[2:], Sum[int]()) }, ErrOverlap},
		{"Allgather recv", func(c *Comm[int], buf []int) error { return c.Allgather(buf[:2], make([]int, 5)) }, ErrCount},
		{"Alltoall in place", func(c *Comm[int], buf []int) error { return c.Alltoall(buf, buf) }, ErrOverlap},
		{"Alltoall uneven", func(c *Comm[int], buf []int) error { return c.Alltoall(buf[:5], make([]int, 5)) }, ErrCount},
		{"Gatherv counts", func(c *Comm[int], buf []int) error {
			return c.Gatherv(buf[:1], buf, []int{1, 1}, []int{0, 1}, c.Rank())
		}, ErrCount},
		{"Scatterv outside", func(c *Comm[int], buf []int) error {
			return c.Scatterv(buf, []int{1, 1, 9}, []int{0, 1, 2}, buf[:1], c.Rank())
		}, ErrCount},
		{"ReduceScatterBlock", func(c *Comm[int], buf []int) error {
			return c.ReduceScatterBlock(buf[:5], make([]int, 2), Sum[int]())
		}, ErrCount},
	}
	for _, ch := range checks {
		t.Run(ch.name, func(t *testing.T) {
			err := endpoint.Run(3, func(ep *endpoint.Endpoint) error {
				c, err := World[int](ep)
				if err != nil {
					return err
				}
				if err := ch.call(c, make([]int, 6)); !errors.Is(err, ch.want) || errors.Is(err, endpoint.ErrAborted) {
					return fmt.Errorf("%v, want this rank's own %v", err, ch.want)
				}
				if err := c.Barrier(); !errors.Is(err, endpoint.ErrAborted) || !errors.Is(err, ch.want) {
					return fmt.Errorf("Barrier after it: %v, want the job's end", err)
				}
				return nil
			})
			if !errors.Is(err, ch.want) {
				t.Fatalf("Run: %v, want %v", err, ch.want)
			}
		})
	}
	t.Run("disagreeing sizes", func(t *testing.T) {
		// Root 0 sends 4, rank 1 expects 3 (longer), rank 2 expects 5
		// (shorter). Each of them finds its mismatch, or learns of the
		// other's first.
		err := endpoint.Run(3, func(ep *endpoint.Endpoint) error {
			c, err := World[int](ep)
			if err != nil {
				return err
			}
			r := c.Rank()
			err = c.Bcast(make([]int, []int{4, 3, 5}[r]), 0)
			if r == 0 {
				return nil
			}
			var me *MismatchError
			want := []int{0, 24, 40}[r]
			if !errors.As(err, &me) || me.Peer != 0 || me.Got != 32 || (!errors.Is(err, endpoint.ErrAborted) && me.Want != want) {
				return fmt.Errorf("Bcast: %v, want a mismatch: expected %d bytes, got 32 from rank 0", err, want)
			}
			return nil
		})
		if !errors.Is(err, ErrMismatch) {
			t.Fatalf("Run: %v, want ErrMismatch", err)
		}
	})
}
