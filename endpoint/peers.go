package endpoint

import (
	"sync"
	"sync/atomic"

	"github.com/fibermpi/fibermpi/rdma"
)

// peerTable maps peer addresses to per-peer state, made on first use. A
// lookup is two loads and two indexings, without a lock: the state of a
// peer, once made, is never replaced, and the table only grows (copy on
// write of the small directory, under mu). Addresses are dense over the
// job, so chunks of peerChunk consecutive addresses are made as a whole,
// and an endpoint that talks to a few peers pays for a few chunks.
type peerTable[T any, PT interface {
	*T
	init()
}] struct {
	dir atomic.Pointer[[]*peerChunkOf[T]]
	mu  sync.Mutex
}

const (
	peerChunkBits = 8
	peerChunk     = 1 << peerChunkBits
)

type peerChunkOf[T any] [peerChunk]atomic.Pointer[T]

// get returns the state of peer a, making it if it does not exist yet.
func (t *peerTable[T, PT]) get(a rdma.Addr) *T {
	if d := t.dir.Load(); d != nil {
		if ci := int(a >> peerChunkBits); ci < len(*d) {
			if ch := (*d)[ci]; ch != nil {
				if v := ch[a&(peerChunk-1)].Load(); v != nil {
					return v
				}
			}
		}
	}
	return t.make(a)
}

// make is get's slow path: it adds the chunk and the state of a, under mu.
func (t *peerTable[T, PT]) make(a rdma.Addr) *T {
	t.mu.Lock()
	defer t.mu.Unlock()
	var dir []*peerChunkOf[T]
	if d := t.dir.Load(); d != nil {
		dir = *d
	}
	ci := int(a >> peerChunkBits)
	if ci >= len(dir) || dir[ci] == nil {
		grown := make([]*peerChunkOf[T], max(len(dir), ci+1))
		copy(grown, dir)
		grown[ci] = new(peerChunkOf[T])
		t.dir.Store(&grown)
		dir = grown
	}
	slot := &dir[ci][a&(peerChunk-1)]
	if v := slot.Load(); v != nil {
		return v
	}
	v := new(T)
	PT(v).init()
	slot.Store(v)
	return v
}

// each calls fn for the state of every peer made so far.
func (t *peerTable[T, PT]) each(fn func(*T)) {
	d := t.dir.Load()
	if d == nil {
		return
	}
	for _, ch := range *d {
		if ch == nil {
			continue
		}
		for i := range ch {
			if v := ch[i].Load(); v != nil {
				fn(v)
			}
		}
	}
}
