package comm

import (
	"fmt"
	"slices"

	"github.com/fibermpi/fibermpi/endpoint"
	"github.com/fibermpi/fibermpi/rdma"
)

// Undefined is the rank of an endpoint outside a group (MPI_UNDEFINED), and
// the Split color of a rank that wants no new communicator.
const Undefined = -1

// Group is an ordered set of endpoints: rank i of the group is its i-th
// endpoint. Groups are values; the operations return new groups and never
// communicate. A communicator's group is Comm.Group.
type Group struct {
	addrs []rdma.Addr // rank → endpoint address; never modified
}

// Group returns the communicator's group.
func (c *Comm[T]) Group() Group { return Group{addrs: c.c.Addrs} }

// Size returns the number of endpoints.
func (g Group) Size() int { return len(g.addrs) }

// Rank returns ep's rank in g, or Undefined.
func (g Group) Rank(ep *endpoint.Endpoint) int { return g.rankOf(ep.Addr()) }

func (g Group) rankOf(a rdma.Addr) int {
	for i, x := range g.addrs {
		if x == a {
			return i
		}
	}
	return Undefined
}

// Addrs returns a copy of the endpoints' transport addresses, by rank.
func (g Group) Addrs() []rdma.Addr { return slices.Clone(g.addrs) }

// checkRanks validates ranks of g: in range and distinct.
func (g Group) checkRanks(ranks []int) error {
	seen := make(map[int]bool, len(ranks))
	for _, r := range ranks {
		if r < 0 || r >= len(g.addrs) {
			return fmt.Errorf("%w: rank %d of a group of %d", ErrGroup, r, len(g.addrs))
		}
		if seen[r] {
			return fmt.Errorf("%w: rank %d listed twice", ErrGroup, r)
		}
		seen[r] = true
	}
	return nil
}

// Incl returns the group of g's ranks listed, in that order.
func (g Group) Incl(ranks ...int) (Group, error) {
	if err := g.checkRanks(ranks); err != nil {
		return Group{}, err
	}
	out := make([]rdma.Addr, len(ranks))
	for i, r := range ranks {
		out[i] = g.addrs[r]
	}
	return Group{addrs: out}, nil
}

// Excl returns g without the ranks listed, in g's order.
func (g Group) Excl(ranks ...int) (Group, error) {
	if err := g.checkRanks(ranks); err != nil {
		return Group{}, err
	}
	drop := make(map[int]bool, len(ranks))
	for _, r := range ranks {
		drop[r] = true
	}
	var out []rdma.Addr
	for i, a := range g.addrs {
		if !drop[i] {
			out = append(out, a)
		}
	}
	return Group{addrs: out}, nil
}

func (g Group) set() map[rdma.Addr]bool {
	m := make(map[rdma.Addr]bool, len(g.addrs))
	for _, a := range g.addrs {
		m[a] = true
	}
	return m
}

// Union returns g's endpoints, then h's that are not in g, in order.
func (g Group) Union(h Group) Group {
	in := g.set()
	out := slices.Clone(g.addrs)
	for _, a := range h.addrs {
		if !in[a] {
			out = append(out, a)
		}
	}
	return Group{addrs: out}
}

// Intersection returns g's endpoints that are also in h, in g's order.
func (g Group) Intersection(h Group) Group {
	in := h.set()
	var out []rdma.Addr
	for _, a := range g.addrs {
		if in[a] {
			out = append(out, a)
		}
	}
	return Group{addrs: out}
}

// Difference returns g's endpoints that are not in h, in g's order.
func (g Group) Difference(h Group) Group {
	in := h.set()
	var out []rdma.Addr
	for _, a := range g.addrs {
		if !in[a] {
			out = append(out, a)
		}
	}
	return Group{addrs: out}
}

// TranslateRanks returns the ranks in h of g's ranks (Undefined for an
// endpoint not in h).
func (g Group) TranslateRanks(ranks []int, h Group) ([]int, error) {
	out := make([]int, len(ranks))
	for i, r := range ranks {
		if r < 0 || r >= len(g.addrs) {
			return nil, fmt.Errorf("%w: rank %d of a group of %d", ErrGroup, r, len(g.addrs))
		}
		out[i] = h.rankOf(g.addrs[r])
	}
	return out, nil
}

// Relation is the result of comparing groups or communicators.
type Relation int

// The relations, as MPI's MPI_IDENT, MPI_CONGRUENT, MPI_SIMILAR and
// MPI_UNEQUAL.
const (
	Ident     Relation = iota // same members in the same order (communicators: the same one)
	Congruent                 // communicators only: same members and order, different contexts
	Similar                   // same members, different order
	Unequal                   // different members
)

// String names the relation.
func (r Relation) String() string {
	switch r {
	case Ident:
		return "ident"
	case Congruent:
		return "congruent"
	case Similar:
		return "similar"
	case Unequal:
		return "unequal"
	}
	return fmt.Sprintf("Relation(%d)", int(r))
}

// Compare compares g and h: Ident, Similar or Unequal.
func (g Group) Compare(h Group) Relation {
	if slices.Equal(g.addrs, h.addrs) {
		return Ident
	}
	if len(g.addrs) != len(h.addrs) {
		return Unequal
	}
	in := h.set()
	for _, a := range g.addrs {
		if !in[a] {
			return Unequal
		}
	}
	return Similar
}
