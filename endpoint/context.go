package endpoint

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"sync"
)

// Context ids of communicators made by the comm package (Dup, Split,
// Create) come in pairs: an even id 2i for point-to-point traffic and 2i+1
// for the communicator's collective traffic. Each endpoint keeps a mask of
// the pairs it has free; the ids of a new communicator are a pair free at
// every member endpoint, agreed by Gropp and Thakur 2007's algorithm (NewContext).
const (
	// ContextWords is the length of the free-pair mask in 64-bit words.
	ContextWords = 64
	// ContextPairs is the number of context-id pairs an endpoint can hand
	// out: ids 0 to 2·ContextPairs−1. World communicators take the pair
	// of their own context id (which is even).
	ContextPairs = 64 * ContextWords
	// ContextMaskLen is the length of the slice NewContext's allreduce
	// combines: the mask and one ownership word.
	ContextMaskLen = ContextWords + 1
)

// Errors of context-id allocation.
var (
	// ErrNoContext is returned by NewContext when no context-id pair is
	// free at every member endpoint.
	ErrNoContext = errors.New("endpoint: no free context id (too many communicators in use)")
	// ErrContext is returned by ReleaseContext for an id that is not an
	// allocated pair's even id.
	ErrContext = errors.New("endpoint: context id not allocated")
)

// contexts is one endpoint's context-id state (Gropp and Thakur 2007 Fig. 3): the mask
// of free pairs, whether a caller owns the mask for an allreduce in
// progress, and the lowest parent context id among callers waiting for
// the mask. Context ids must be unique per endpoint, not per process: each
// endpoint has its own matching table, and two endpoints of one process may
// be members of the same new communicator.
type contexts struct {
	mu     sync.Mutex
	init   bool
	free   [ContextWords]uint64 // bit set: pair free
	worlds [ContextWords]uint64 // bit set: pair reserved for a world
	inUse  bool                 // some caller's allreduce carries free
	lowest uint32               // lowest waiting parent context id
}

// setup marks every pair free (once).
func (s *contexts) setup() {
	if s.init {
		return
	}
	s.init = true
	for i := range s.free {
		s.free[i] = ^uint64(0)
	}
	s.lowest = math.MaxUint32
}

// reserve takes the pair holding id out of the mask (a world's context).
func (s *contexts) reserve(id uint32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.setup()
	if p := id / 2; p < ContextPairs {
		s.free[p/64] &^= 1 << (p % 64)
		s.worlds[p/64] |= 1 << (p % 64)
	}
}

// NewContext returns the even context id of a new communicator, agreed
// with the other members by Gropp and Thakur 2007's algorithm (Fig. 3). parent is the
// parent communicator's context id; and must combine its argument with
// the other members' by bitwise AND (an Allreduce over the parent, or over
// the new group for a group-collective creation), in place. Every member
// calls NewContext with the same parent, and their and calls meet.
//
// Per attempt, under the endpoint's lock: if no other caller owns the mask
// and parent is not above the lowest waiting parent id, the caller takes
// the mask (and the ownership word is 1); otherwise it contributes zeros.
// Outside the lock it calls and. If every member owned its mask, the
// result's lowest set bit is the new pair at every member; if some member
// did not own its mask the ownership word is 0 and it tries again. Callers
// yield the mask to the lowest parent id, so the members of that parent
// eventually all own their masks at once: no livelock, and with one caller
// per endpoint the first attempt succeeds, at the cost of one allreduce.
// It returns ErrNoContext when every member owned its mask and no pair is
// free at all of them.
//
// NewContext holds no lock while and runs, so other callers of the same
// endpoint (at ThreadMultiple) keep communicating. The pair stays taken
// until ReleaseContext.
func (e *Endpoint) NewContext(parent uint32, and func(mask []uint64) error) (uint32, error) {
	if !e.active {
		return 0, ErrNotRegistered
	}
	if e.c.p.finalized.Load() {
		return 0, ErrFinalized
	}
	s := &e.c.ctx
	mask := make([]uint64, ContextMaskLen)
	for {
		own := s.offer(parent, mask)
		err := and(mask)
		if own {
			id, ok, done := s.settle(parent, mask, err == nil)
			if err != nil {
				return 0, err
			}
			if done {
				if !ok {
					return 0, fmt.Errorf("%w: %d pairs per endpoint", ErrNoContext, ContextPairs)
				}
				return id, nil
			}
			continue
		}
		if err != nil {
			s.forget(parent)
			return 0, err
		}
		// Non-owners learn the outcome too: if every member owned its
		// mask (impossible, since this one did not) or not, retry.
	}
}

// offer fills mask for one attempt and reports whether the caller owns
// the endpoint's mask for it.
func (s *contexts) offer(parent uint32, mask []uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.setup()
	if s.inUse || parent > s.lowest {
		clear(mask)
		if parent < s.lowest {
			s.lowest = parent
		}
		return false
	}
	copy(mask, s.free[:])
	mask[ContextWords] = 1
	s.inUse = true
	s.lowest = parent
	return true
}

// settle ends an attempt of the mask's owner. With ok (the allreduce
// worked) and every member owning its mask, it takes the lowest common
// pair (done; found reports whether there was one). It releases the mask
// either way.
func (s *contexts) settle(parent uint32, mask []uint64, ok bool) (id uint32, found, done bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inUse = false
	if !ok || mask[ContextWords] == 0 {
		if !ok && s.lowest == parent {
			s.lowest = math.MaxUint32
		}
		return 0, false, !ok
	}
	if s.lowest == parent {
		s.lowest = math.MaxUint32
	}
	for w, m := range mask[:ContextWords] {
		if m != 0 {
			b := bits.TrailingZeros64(m)
			s.free[w] &^= 1 << b
			return uint32(2 * (64*w + b)), true, true
		}
	}
	return 0, false, true
}

// forget drops a failed caller's claim on the lowest parent id.
func (s *contexts) forget(parent uint32) {
	s.mu.Lock()
	if s.lowest == parent {
		s.lowest = math.MaxUint32
	}
	s.mu.Unlock()
}

// ReleaseContext returns the pair of id (an even id NewContext returned)
// to the endpoint's mask, for reuse by later communicators. A pair that is
// free already, or a world's, gives ErrContext. Call it once
// the communicator is freed and nothing of it is in flight.
func (e *Endpoint) ReleaseContext(id uint32) error {
	s := &e.c.ctx
	p := id / 2
	s.mu.Lock()
	defer s.mu.Unlock()
	s.setup()
	if id%2 != 0 || p >= ContextPairs || (s.free[p/64]|s.worlds[p/64])&(1<<(p%64)) != 0 {
		return fmt.Errorf("%w: %d", ErrContext, id)
	}
	s.free[p/64] |= 1 << (p % 64)
	return nil
}

// FreeContexts returns how many context-id pairs the endpoint has free.
func (e *Endpoint) FreeContexts() int {
	s := &e.c.ctx
	s.mu.Lock()
	defer s.mu.Unlock()
	s.setup()
	n := 0
	for _, m := range s.free {
		n += bits.OnesCount64(m)
	}
	return n
}
