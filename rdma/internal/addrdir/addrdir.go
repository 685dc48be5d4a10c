// Package addrdir holds what the transports between processes look up on
// every packet without a lock: Pools, the packet pools a transport knows,
// and Dir, a directory from endpoint addresses to values. A lookup in Dir
// is two atomic loads and two indexings; writers (Bind, Unbind, a peer's
// announcement) serialize on a mutex and grow the directory a chunk of
// addresses at a time, so that a reader never sees a slot move.
package addrdir

import (
	"sync"
	"sync/atomic"

	"github.com/fibermpi/fibermpi/rdma"
)

const (
	chunkBits = 10
	chunkSize = 1 << chunkBits
)

type chunk[T any] [chunkSize]atomic.Pointer[T]

// Dir maps addresses to *T, nil for an address with no value. The zero
// value is an empty directory, ready to use; it must not be copied.
type Dir[T any] struct {
	mu     sync.Mutex // writers
	chunks atomic.Pointer[[]*chunk[T]]
}

// slot returns a's slot, nil if no value was ever stored near it.
func (d *Dir[T]) slot(a rdma.Addr) *atomic.Pointer[T] {
	p := d.chunks.Load()
	if p == nil {
		return nil
	}
	ci := int(a >> chunkBits)
	if ci >= len(*p) || (*p)[ci] == nil {
		return nil
	}
	return &(*p)[ci][a&(chunkSize-1)]
}

// Load returns a's value, or nil. It takes no lock.
func (d *Dir[T]) Load(a rdma.Addr) *T {
	if s := d.slot(a); s != nil {
		return s.Load()
	}
	return nil
}

// Store sets a's value (nil removes it).
func (d *Dir[T]) Store(a rdma.Addr, v *T) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.store(a, v)
}

// StoreNew sets a's value to v if a has none, and reports whether it did.
func (d *Dir[T]) StoreNew(a rdma.Addr, v *T) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.Load(a) != nil {
		return false
	}
	d.store(a, v)
	return true
}

// Swap sets a's value to v and returns the value it had.
func (d *Dir[T]) Swap(a rdma.Addr, v *T) *T {
	d.mu.Lock()
	defer d.mu.Unlock()
	old := d.Load(a)
	d.store(a, v)
	return old
}

// store is Store for a holder of mu.
func (d *Dir[T]) store(a rdma.Addr, v *T) {
	if s := d.slot(a); s != nil {
		s.Store(v)
		return
	}
	if v == nil {
		return
	}
	var old []*chunk[T]
	if p := d.chunks.Load(); p != nil {
		old = *p
	}
	ci := int(a >> chunkBits)
	grown := make([]*chunk[T], max(len(old), ci+1))
	copy(grown, old)
	grown[ci] = new(chunk[T])
	grown[ci][a&(chunkSize-1)].Store(v)
	d.chunks.Store(&grown)
}

// Set is a set of addresses, read without a lock as Dir is.
type Set struct{ d Dir[struct{}] }

// present is the value of a member of a Set.
var present = new(struct{})

// Has reports whether a is in the set. It takes no lock.
func (s *Set) Has(a rdma.Addr) bool { return s.d.Load(a) != nil }

// Put adds a to the set (on) or removes it.
func (s *Set) Put(a rdma.Addr, on bool) {
	if on {
		s.d.Store(a, present)
	} else {
		s.d.Store(a, nil)
	}
}
