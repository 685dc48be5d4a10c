package main

import (
	"fmt"
	"math"
	"testing"
	"time"
	"unsafe"

	"github.com/fibermpi/fibermpi/fiber"
)

// TestPadding checks that the atomics fibers of different workers write
// live on cache lines of their own.
func TestPadding(t *testing.T) {
	const line = 64
	var f bflag
	if off := unsafe.Offsetof(f.done); off < line || unsafe.Sizeof(f)-off < line {
		t.Errorf("bflag.done at %d of %d bytes: not alone on its line", off, unsafe.Sizeof(f))
	}
	var m member
	if off := unsafe.Offsetof(m.val); off < line || unsafe.Sizeof(m)-off < line {
		t.Errorf("member.val at %d of %d bytes: not alone on its line", off, unsafe.Sizeof(m))
	}
	var b barrier
	if unsafe.Offsetof(b.round)-unsafe.Offsetof(b.arrived) < line {
		t.Errorf("barrier.arrived and barrier.round share a line")
	}
}

// TestBarrierReduce runs many rounds of reduce among fibers on two workers,
// with different values each round: every member must get the round's max,
// and the last callback must run once per round before anyone leaves.
func TestBarrierReduce(t *testing.T) {
	const n, rounds = 5, 300
	s, err := fiber.New(fiber.Config{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b := newBarrier(n)
	lasts := 0
	got := make([][]float64, n)
	for id := range n {
		s.Spawn(func(f *fiber.Fiber) {
			for r := range rounds {
				v := float64((id*7+r*3)%11) + float64(r)
				got[id] = append(got[id], b.reduce(id, f.Waiter(), v, func() { lasts++ }))
				if r%5 == id {
					f.Yield()
				}
			}
		})
	}
	if err := s.Wait(); err != nil {
		t.Fatal(err)
	}
	if lasts != rounds {
		t.Errorf("last callback ran %d times in %d rounds", lasts, rounds)
	}
	for r := range rounds {
		want := math.Inf(-1)
		for id := range n {
			want = max(want, float64((id*7+r*3)%11)+float64(r))
		}
		for id := range n {
			if got[id][r] != want {
				t.Fatalf("round %d, member %d: got %v, want %v", r, id, got[id][r], want)
			}
		}
	}
}

// TestFlagOrder has a writer publish values through a bflag to a reader on
// another worker: the reader must see each half-sweep's data once the flag
// says it is there.
func TestFlagOrder(t *testing.T) {
	const rounds = 2000
	s, err := fiber.New(fiber.Config{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var f, back bflag
	data := make([]int64, rounds+1)
	ready := fiber.Event{}
	var readerW *fiber.Waiter
	s.SpawnOn(1, func(fb *fiber.Fiber) {
		readerW = fb.Waiter()
		f.reader = readerW
		ready.Signal()
		for h := int64(1); h <= rounds; h++ {
			f.await(h, fb.Waiter())
			if data[h] != h*h {
				panic("reader saw a half-sweep before its data")
			}
			back.publish(h)
		}
	})
	s.SpawnOn(0, func(fb *fiber.Fiber) {
		fb.Wait(&ready)
		back.reader = fb.Waiter()
		for h := int64(1); h <= rounds; h++ {
			data[h] = h * h
			f.publish(h)
			if h > 1 {
				back.await(h-1, fb.Waiter())
			}
		}
	})
	if err := s.Wait(); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkBarrier measures a round of the barrier (one wait by each of n
// fibers) on 1 or 2 workers, with the command's idle spin (20µs) and the
// fiber default (1ms): the cost the funneled variant pays four times an
// iteration. ns/op is one round.
func BenchmarkBarrier(b *testing.B) {
	for _, c := range []struct{ n, workers int }{{2, 1}, {2, 2}, {4, 2}} {
		for _, spin := range []time.Duration{20 * time.Microsecond, time.Millisecond} {
			b.Run(fmt.Sprintf("fibers=%d/workers=%d/spin=%v", c.n, c.workers, spin), func(b *testing.B) {
				s, err := fiber.New(fiber.Config{Workers: c.workers, SleepAfter: spin})
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				bar := newBarrier(c.n)
				rounds := b.N
				b.ResetTimer()
				for id := range c.n {
					if err := s.SpawnOn(id*c.workers/c.n, func(f *fiber.Fiber) {
						w := f.Waiter()
						for range rounds {
							bar.wait(id, w, nil)
						}
					}); err != nil {
						b.Fatal(err)
					}
				}
				if err := s.Wait(); err != nil {
					b.Fatal(err)
				}
			})
		}
	}
}
