package comm

import (
	"sync/atomic"

	"github.com/fibermpi/fibermpi/endpoint"
)

// state is what one rank's views of a communicator (Comm[T] and its As
// views) share beyond the endpoint.Comm: the collective context and tag
// sequence, the reference count that keeps the context id taken while
// anything of the communicator is in flight, and the name.
type state struct {
	coll  collCtx
	id    uint32 // point-to-point context id (even)
	owned bool   // id came from NewContext: Free releases it
	freed bool   // Free was called (the owner's flag; read by the owner)
	name  string
	codec Codec // SendValue's and RecvValue's (value.go); nil means Gob

	// The shared area of collectives through memory (shm.go), looked up
	// once (shmChecked); nil when they go by messages. path forces the
	// message schedules (tests and benchmarks).
	shm        *shmArea
	shmChecked bool
	path       CollPath
	// The two-level layout (twolevel.go), computed once (topoChecked);
	// nil when the collectives do not go in two levels.
	topo        *topo
	topoChecked bool

	// refs counts the user's reference (until Free) and each pending
	// request. hold (Add 1) pairs with release (Add −1); the release that
	// reaches zero returns the context id.
	refs atomic.Int32
}

// newState makes the state of a communicator with context id ctx, whose
// collectives use ctx+1 (context ids come in pairs: see
// endpoint.ContextPairs).
func newState(ep *endpoint.Endpoint, c endpoint.Comm, rank int, owned bool, eng *engine) *state {
	if eng == nil {
		eng = new(engine)
	}
	s := &state{id: c.Context, owned: owned}
	s.coll = collCtx{
		ep:   ep,
		comm: endpoint.Comm{Context: c.Context + 1, Addrs: c.Addrs},
		rank: rank,
		mask: collTagMask,
		eng:  eng,
	}
	s.refs.Store(1)
	return s
}

// st returns the communicator's shared state, making it on first use for
// worlds and New views.
func (c *Comm[T]) st() *state {
	if c.x == nil {
		c.x = newState(c.ep, c.c, c.rank, false, nil)
	}
	return c.x
}

// hold takes a reference for a pending request (nil for communicators
// nobody can free).
func (c *Comm[T]) hold() *state {
	s := c.x
	if s == nil || !s.owned {
		return nil
	}
	s.refs.Add(1)
	return s
}

// release drops a reference; the last one returns the context id.
func (s *state) release() {
	if s == nil {
		return
	}
	if s.refs.Add(-1) == 0 && s.owned {
		// The pair is ours: ReleaseContext fails only on a bug.
		if err := s.coll.ep.ReleaseContext(s.id); err != nil {
			panic("comm: " + err.Error())
		}
	}
}

// live returns the state for a collective, or ErrFreed.
func (c *Comm[T]) live() (*state, error) {
	s := c.st()
	if s.freed {
		return nil, ErrFreed
	}
	return s, nil
}
