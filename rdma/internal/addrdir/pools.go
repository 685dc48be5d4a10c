package addrdir

import (
	"slices"
	"sync/atomic"

	"github.com/fibermpi/fibermpi/packet"
)

// Pools is the set of packet pools a transport's packets may come from
// (its Config.Pool and every pool bound since), read without a lock on
// every Send. The zero value is empty; Add must be serialized by the
// caller (the transports add under their Bind lock).
type Pools struct {
	list atomic.Pointer[[]*packet.Pool]
}

// Add adds p (nil is ignored) unless the set has it already.
func (s *Pools) Add(p *packet.Pool) {
	if p == nil {
		return
	}
	var old []*packet.Pool
	if l := s.list.Load(); l != nil {
		old = *l
	}
	if slices.Contains(old, p) {
		return
	}
	grown := append(slices.Clone(old), p)
	s.list.Store(&grown)
}

// Of returns the pool of the set that pk belongs to, or nil.
func (s *Pools) Of(pk *packet.Packet) *packet.Pool {
	if l := s.list.Load(); l != nil {
		for _, p := range *l {
			if p.Owns(pk) {
				return p
			}
		}
	}
	return nil
}

// First returns the pool added first, or nil.
func (s *Pools) First() *packet.Pool {
	if l := s.list.Load(); l != nil && len(*l) > 0 {
		return (*l)[0]
	}
	return nil
}
