package addrdir

import (
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/fibermpi/fibermpi/packet"
	"github.com/fibermpi/fibermpi/rdma"
)

// TestDirAgainstMap drives a Dir and a map with the same random operations,
// over addresses that span many chunks, and compares every answer.
func TestDirAgainstMap(t *testing.T) {
	var d Dir[int]
	ref := map[rdma.Addr]*int{}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 20000 {
		a := rdma.Addr(rng.IntN(5 * chunkSize))
		v := new(int)
		*v = i
		switch rng.IntN(4) {
		case 0:
			d.Store(a, v)
			ref[a] = v
		case 1:
			d.Store(a, nil)
			delete(ref, a)
		case 2:
			if got, want := d.StoreNew(a, v), ref[a] == nil; got != want {
				t.Fatalf("StoreNew(%d) = %v, want %v", a, got, want)
			}
			if ref[a] == nil {
				ref[a] = v
			}
		case 3:
			if got, want := d.Swap(a, v), ref[a]; got != want {
				t.Fatalf("Swap(%d) returned %p, want %p", a, got, want)
			}
			ref[a] = v
		}
		if got := d.Load(a); got != ref[a] {
			t.Fatalf("Load(%d) = %p, want %p", a, got, ref[a])
		}
	}
	for a := range rdma.Addr(6 * chunkSize) {
		if got := d.Load(a); got != ref[a] {
			t.Fatalf("Load(%d) = %p, want %p", a, got, ref[a])
		}
	}
}

func TestSet(t *testing.T) {
	var s Set
	if s.Has(3) {
		t.Fatal("an empty set has 3")
	}
	s.Put(3, false) // removing what is absent grows nothing
	if s.d.chunks.Load() != nil {
		t.Fatal("removing an absent address grew the directory")
	}
	s.Put(3, true)
	s.Put(3*chunkSize+1, true)
	if !s.Has(3) || !s.Has(3*chunkSize+1) || s.Has(4) {
		t.Fatal("membership wrong after Put")
	}
	s.Put(3, false)
	if s.Has(3) || !s.Has(3*chunkSize+1) {
		t.Fatal("membership wrong after removal")
	}
}

// TestConcurrentReaders: readers see either nothing or the stored value of
// each address while writers grow the directory (run with -race).
func TestConcurrentReaders(t *testing.T) {
	var d Dir[rdma.Addr]
	const n = 4 * chunkSize
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Go(func() {
			for a := rdma.Addr(w); a < n; a += 2 {
				v := a
				d.Store(a, &v)
			}
		})
	}
	for range 2 {
		wg.Go(func() {
			for range 3 {
				for a := range rdma.Addr(n) {
					if v := d.Load(a); v != nil && *v != a {
						t.Errorf("Load(%d) = %d", a, *v)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	for a := range rdma.Addr(n) {
		if v := d.Load(a); v == nil || *v != a {
			t.Fatalf("after the writers, Load(%d) = %v", a, v)
		}
	}
}

func TestPools(t *testing.T) {
	var s Pools
	a, err := packet.New(packet.Config{Workers: 1, PayloadSize: 64})
	if err != nil {
		t.Fatal(err)
	}
	b, err := packet.New(packet.Config{Workers: 1, PayloadSize: 64})
	if err != nil {
		t.Fatal(err)
	}
	pk := b.Get(0)
	defer b.Put(0, pk)
	if s.Of(pk) != nil || s.First() != nil {
		t.Fatal("an empty set knows a pool")
	}
	s.Add(nil)
	s.Add(a)
	s.Add(b)
	s.Add(a)
	if s.Of(pk) != b || s.First() != a || len(*s.list.Load()) != 2 {
		t.Fatalf("Of = %p (want %p), First = %p (want %p), %d pools", s.Of(pk), b, s.First(), a, len(*s.list.Load()))
	}
}
