package packet

import (
	"sync/atomic"

	"golang.org/x/sys/cpu"
)

// stack is the shared pool: a lock-free LIFO stack (Treiber) of packets,
// linked through Packet.link. Any goroutine may push and pop.
//
// head packs the top packet's index (low 32 bits, linkNil when empty) with
// a tag (high 32 bits) that every successful push and pop increments, so a
// pop that read head, then slept while the same packet was popped and
// pushed back, fails its CAS instead of installing a stale link (the ABA
// problem). The tag would have to wrap around — 2^32 operations while one
// pop is suspended between its Load and its CAS — for ABA to return.
type stack struct {
	_ cpu.CacheLinePad
	// head: Loaded by push and pop, replaced by their CompareAndSwap.
	// A push's CAS publishes the link it stored before (release); the
	// pop's Load of head pairs with it before the pop Loads that link.
	head atomic.Uint64
	_    cpu.CacheLinePad
}

func (s *stack) init() { s.head.Store(uint64(linkNil)) }

// push adds p on top.
func (s *stack) push(p *Packet) {
	for {
		h := s.head.Load()
		p.link.Store(uint32(h))
		if s.head.CompareAndSwap(h, (h>>32+1)<<32|uint64(p.index)) {
			return
		}
	}
}

// pop removes the top packet and returns its index, or reports false if
// the stack is empty. at maps an index to its packet.
func (s *stack) pop(pl *Pool) (uint32, bool) {
	for {
		h := s.head.Load()
		i := uint32(h)
		if i == linkNil {
			return 0, false
		}
		next := pl.at(i).link.Load()
		if s.head.CompareAndSwap(h, (h>>32+1)<<32|uint64(next)) {
			return i, true
		}
	}
}

// len counts the packets in the stack by walking it. It is exact while no
// push or pop runs; otherwise the walk may follow a link that changed
// under it, and the count is only an estimate (never more than limit).
// The stack keeps no counter because that would cost every push and pop
// one more atomic read-modify-write on the contended line.
func (s *stack) len(pl *Pool, limit int) int {
	n := 0
	for i := uint32(s.head.Load()); i != linkNil && i < linkInUse && n < limit; i = pl.at(i).link.Load() {
		n++
	}
	return n
}
