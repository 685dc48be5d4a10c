package endpoint

import (
	"errors"
	"math"
	"testing"
)

// TestContextsFig3 drives the per-endpoint state of Gropp and Thakur 2007 Fig. 3 by
// hand: ownership, the lowest-parent rule, success and retry.
func TestContextsFig3(t *testing.T) {
	var s contexts
	s.reserve(0) // a world's pair
	a, b := make([]uint64, ContextMaskLen), make([]uint64, ContextMaskLen)
	// Parent 10 takes the mask; parent 4 (lower) gets zeros but becomes
	// the lowest, so parent 10's next attempt yields to it.
	if !s.offer(10, a) || a[ContextWords] != 1 || a[0]&1 != 0 || a[0]&2 == 0 {
		t.Fatalf("first offer: own=%v mask[0]=%b", true, a[0])
	}
	if s.offer(4, b) || b[ContextWords] != 0 || b[0] != 0 {
		t.Fatal("second caller owns the mask while it is in use")
	}
	if s.lowest != 4 {
		t.Fatalf("lowest = %d, want 4", s.lowest)
	}
	// Parent 10's allreduce failed (some member did not own its mask).
	a[ContextWords] = 0
	if _, _, done := s.settle(10, a, true); done {
		t.Fatal("settle without every owner finished")
	}
	if s.offer(10, a) {
		t.Fatal("parent 10 took the mask although parent 4 is waiting")
	}
	if !s.offer(4, b) {
		t.Fatal("the lowest parent did not get the mask")
	}
	id, found, done := s.settle(4, b, true)
	if !done || !found || id != 2 {
		t.Fatalf("settle: id %d found %v done %v, want pair 1 (id 2)", id, found, done)
	}
	if s.lowest != math.MaxUint32 {
		t.Fatalf("lowest not reset after success: %d", s.lowest)
	}
	// Parent 10 now owns it and gets the next pair.
	if !s.offer(10, a) {
		t.Fatal("parent 10 did not get the mask")
	}
	if id, _, _ := s.settle(10, a, true); id != 4 {
		t.Fatalf("second id %d, want 4", id)
	}
	// Every member owned its mask but nothing is common: exhausted.
	clear(a[:ContextWords])
	a[ContextWords] = 1
	s.offer(3, make([]uint64, ContextMaskLen))
	if _, found, done := s.settle(3, a, true); !done || found {
		t.Fatal("an empty common mask with every owner must end the search")
	}
}

func TestReleaseContext(t *testing.T) {
	err := Run(1, func(ep *Endpoint) error {
		n := ep.FreeContexts()
		if n != ContextPairs-1 {
			t.Errorf("%d free pairs, want %d (one for the world)", n, ContextPairs-1)
		}
		id, err := ep.NewContext(ep.World().Context, func([]uint64) error { return nil })
		if err != nil {
			return err
		}
		if ep.FreeContexts() != n-1 || id%2 != 0 {
			t.Errorf("after NewContext: %d free, id %d", ep.FreeContexts(), id)
		}
		if err := ep.ReleaseContext(id); err != nil {
			return err
		}
		for _, bad := range []uint32{id, id + 1, 2 * ContextPairs, ep.World().Context} {
			if err := ep.ReleaseContext(bad); !errors.Is(err, ErrContext) {
				t.Errorf("ReleaseContext(%d): %v", bad, err)
			}
		}
		boom := errors.New("allreduce failed")
		if _, err := ep.NewContext(0, func([]uint64) error { return boom }); !errors.Is(err, boom) {
			t.Errorf("NewContext with a failing allreduce: %v", err)
		}
		if ep.FreeContexts() != n {
			t.Errorf("a failed NewContext took a pair: %d free, want %d", ep.FreeContexts(), n)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
