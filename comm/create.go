package comm

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/fibermpi/fibermpi/endpoint"
	"github.com/fibermpi/fibermpi/rdma"
)

// Communicator creation. Dup, Split and Create are collective over the
// parent communicator; CreateGroup only over the new group's members. Each
// agrees on a context-id pair for the new communicator with Gropp and Thakur 2007's
// algorithm (endpoint.NewContext): one Allreduce(AND) of the free-id masks
// when nothing else is being created at the same endpoints, more attempts
// only while other creations on the same endpoints compete, never a
// deadlock or a livelock. Many goroutines or fibers registered with one
// ThreadMultiple endpoint may create communicators at the same time, over
// different parents.

// newContext agrees on a new context id with the ranks of x, whose
// collective context carries the allreduce; parent orders competing
// creations at an endpoint (the lowest-context-id rule).
func newContext(ep *endpoint.Endpoint, x *collCtx, parent uint32) (uint32, error) {
	return ep.NewContext(parent, func(mask []uint64) error {
		s := newSched(x)
		buildAllreduce(s, mask, mask, Band[uint64]())
		return s.run()
	})
}

// derive makes this rank's view of a new communicator with context id id.
func (c *Comm[T]) derive(id uint32, addrs []rdma.Addr, rank int) *Comm[T] {
	nc := endpoint.Comm{Context: id, Addrs: addrs}
	c.ep.NoteComm(nc) // for deadlock reports
	x := newState(c.ep, nc, rank, true, c.st().coll.eng)
	x.path = c.st().path
	return &Comm[T]{ep: c.ep, c: nc, rank: rank, elem: c.elem, size: c.size, x: x}
}

// Dup returns a new communicator with the same ranks and a new context:
// its messages never match the parent's. Collective over c.
func (c *Comm[T]) Dup() (*Comm[T], error) {
	st, err := c.live()
	if err != nil {
		return nil, err
	}
	id, err := newContext(c.ep, &st.coll, st.id)
	if err != nil {
		return nil, err
	}
	return c.derive(id, c.c.Addrs, c.rank), nil
}

// Split partitions c: the ranks that pass the same color form a new
// communicator, ordered by key (ties by rank in c). A rank passing
// Undefined as color takes part and gets nil. Colors are Undefined or
// non-negative. Collective over c.
func (c *Comm[T]) Split(color, key int) (*Comm[T], error) {
	st, err := c.live()
	if err != nil {
		return nil, err
	}
	if color < 0 && color != Undefined {
		return nil, c.erroneous(fmt.Errorf("%w: Split color %d (want >= 0 or Undefined)", ErrGroup, color))
	}
	p := c.Size()
	all := make([][2]int64, p)
	s := newSched(&st.coll)
	buildAllgather(s, [][2]int64{{int64(color), int64(key)}}, all)
	if err := s.run(); err != nil {
		return nil, err
	}
	id, err := newContext(c.ep, &st.coll, st.id)
	if err != nil {
		return nil, err
	}
	if color == Undefined {
		return nil, c.ep.ReleaseContext(id)
	}
	var members []int
	for i, ck := range all {
		if ck[0] == int64(color) {
			members = append(members, i)
		}
	}
	slices.SortStableFunc(members, func(a, b int) int { return cmp.Compare(all[a][1], all[b][1]) })
	addrs := make([]rdma.Addr, len(members))
	rank := 0
	for i, m := range members {
		addrs[i] = c.c.Addrs[m]
		if m == c.rank {
			rank = i
		}
	}
	return c.derive(id, addrs, rank), nil
}

// subset checks that every endpoint of g is a rank of c.
func (c *Comm[T]) subset(g Group) error {
	if g.Size() == 0 {
		return fmt.Errorf("%w: empty group", ErrGroup)
	}
	in := c.Group().set()
	seen := make(map[rdma.Addr]bool, g.Size())
	for _, a := range g.addrs {
		if !in[a] {
			return fmt.Errorf("%w: endpoint %d is not in the communicator", ErrGroup, a)
		}
		if seen[a] {
			return fmt.Errorf("%w: endpoint %d listed twice", ErrGroup, a)
		}
		seen[a] = true
	}
	return nil
}

// Create returns a communicator over g, a subset of c's ranks in any
// order; ranks of c outside g get nil. Collective over c: every rank
// passes the same group.
func (c *Comm[T]) Create(g Group) (*Comm[T], error) {
	st, err := c.live()
	if err != nil {
		return nil, err
	}
	if err := c.subset(g); err != nil {
		return nil, c.erroneous(err)
	}
	id, err := newContext(c.ep, &st.coll, st.id)
	if err != nil {
		return nil, err
	}
	r := g.rankOf(c.ep.Addr())
	if r == Undefined {
		return nil, c.ep.ReleaseContext(id)
	}
	return c.derive(id, g.addrs, r), nil
}

// MaxGroupTag is the largest tag of CreateGroup.
const MaxGroupTag = 1<<groupTagBits - 1

// CreateGroup returns a communicator over g, a subset of c's ranks that
// includes the caller; it is collective over g's members only (MPI 3.0's
// MPI_Comm_create_group), so the other ranks of c need not call. Creations
// over overlapping groups of the same parent that may run at the same time
// must use different tags (0 to MaxGroupTag).
func (c *Comm[T]) CreateGroup(g Group, tag int) (*Comm[T], error) {
	st, err := c.live()
	if err != nil {
		return nil, err
	}
	if tag < 0 || tag > MaxGroupTag {
		return nil, c.erroneous(fmt.Errorf("%w: CreateGroup tag %d (want 0..%d)", endpoint.ErrTag, tag, MaxGroupTag))
	}
	if err := c.subset(g); err != nil {
		return nil, c.erroneous(err)
	}
	r := g.rankOf(c.ep.Addr())
	if r == Undefined {
		return nil, c.erroneous(fmt.Errorf("%w: the caller is not in the group of CreateGroup", ErrGroup))
	}
	// A temporary communicator over the group on the parent's collective
	// context, in a tag space ordinary collectives never use.
	x := &collCtx{
		ep:   c.ep,
		comm: endpoint.Comm{Context: st.coll.comm.Context, Addrs: g.addrs},
		rank: r,
		base: groupTagBit | tag<<groupSeqBits,
		mask: 1<<groupSeqBits - 1,
		eng:  st.coll.eng,
	}
	id, err := newContext(c.ep, x, st.id)
	if err != nil {
		return nil, err
	}
	return c.derive(id, g.addrs, r), nil
}

// erroneous ends the job for an erroneous collective call, as collectives
// do (see coll.go), and returns err.
func (c *Comm[T]) erroneous(err error) error {
	c.ep.Abort(err)
	return err
}

// Abort ends the job on purpose, in the name of the caller's rank (MPI_Abort;
// see endpoint.Endpoint.Abort): every rank's blocked or later calls return
// an *endpoint.AbortError that names it and wraps err. It returns the error
// that ended the job, for the rank to return.
func (c *Comm[T]) Abort(err error) error { return c.ep.Abort(err) }

// Free releases the caller's reference to the communicator; every later
// call on it (through any view of it) returns ErrFreed. Its context id returns to the endpoint's pool once
// every request started on it has completed (Gropp and Thakur 2007 §4.1). In MPI Free is
// collective; here each rank frees its own view, with no communication.
// Worlds cannot be freed (ErrNotFreeable).
func (c *Comm[T]) Free() error {
	st := c.st()
	if st.freed {
		return ErrFreed
	}
	if !st.owned {
		return ErrNotFreeable
	}
	if a := c.area(); a != nil {
		a.release()
	}
	// A rank that never ran a collective on c joins its process's area
	// here, so that the area does not stay pinned for it (shm.go).
	c.topology()
	st.freed = true
	c.c = endpoint.Comm{Context: c.c.Context}
	st.release()
	return nil
}

// SetName names the communicator (for this rank's views).
func (c *Comm[T]) SetName(name string) { c.st().name = name }

// Name returns the communicator's name, "" if none was set.
func (c *Comm[T]) Name() string { return c.st().name }

// Compare compares two communicators: Ident for the same communicator,
// Congruent for the same ranks in the same order with different contexts,
// Similar for the same ranks in another order, Unequal otherwise.
func (c *Comm[T]) Compare(d *Comm[T]) Relation {
	rel := c.Group().Compare(d.Group())
	if rel == Ident && c.c.Context != d.c.Context {
		return Congruent
	}
	return rel
}
