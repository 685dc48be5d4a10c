package comm

import (
	"errors"
	"fmt"
)

// ErrDims is returned by CartCreate and DimsCreate for dimensions that do
// not fit the communicator (their product is not its size, a dimension
// below 1, periods of another length).
var ErrDims = errors.New("comm: bad Cartesian dimensions")

// Cart is a Cartesian topology over a communicator (MPI_Cart_create without
// reordering): rank r sits at the coordinates of r in row-major order of
// Dims (the last dimension varies fastest), and each dimension is periodic
// (a ring) or not (its ends have no neighbour: ProcNull). It embeds the
// communicator, so every Comm method works on it; its collectives and
// point-to-point messages are the communicator's.
type Cart[T any] struct {
	*Comm[T]
	dims    []int
	periods []bool
	coords  []int // the caller's
}

// CartCreate returns the Cartesian view of c with the given dimensions,
// whose product must be c.Size(), and periodicity per dimension (nil: none
// periodic). It is local: every rank calls it with the same arguments, and
// no message is sent.
func CartCreate[T any](c *Comm[T], dims []int, periods []bool) (*Cart[T], error) {
	if periods == nil {
		periods = make([]bool, len(dims))
	}
	if len(periods) != len(dims) {
		return nil, fmt.Errorf("%w: %d periods for %d dimensions", ErrDims, len(periods), len(dims))
	}
	n := 1
	for i, d := range dims {
		if d < 1 {
			return nil, fmt.Errorf("%w: dimension %d is %d", ErrDims, i, d)
		}
		n *= d
	}
	if n != c.Size() {
		return nil, fmt.Errorf("%w: %v holds %d ranks, the communicator %d", ErrDims, dims, n, c.Size())
	}
	g := &Cart[T]{Comm: c, dims: append([]int(nil), dims...), periods: append([]bool(nil), periods...)}
	g.coords = g.Coords(c.Rank())
	return g, nil
}

// DimsCreate splits n ranks into ndims dimensions as evenly as it can
// (MPI_Dims_create): the dimensions are in non-increasing order and their
// product is n.
func DimsCreate(n, ndims int) ([]int, error) {
	if n < 1 || ndims < 1 {
		return nil, fmt.Errorf("%w: %d ranks in %d dimensions", ErrDims, n, ndims)
	}
	dims := make([]int, ndims)
	for i := range dims {
		dims[i] = 1
	}
	// Hand out n's prime factors, largest first, each to the dimension
	// that is smallest so far.
	var factors []int
	for m, p := n, 2; m > 1; {
		if p*p > m {
			factors = append(factors, m)
			break
		}
		if m%p == 0 {
			factors = append(factors, p)
			m /= p
		} else {
			p++
		}
	}
	for i := len(factors) - 1; i >= 0; i-- {
		smallest := 0
		for j := range dims {
			if dims[j] < dims[smallest] {
				smallest = j
			}
		}
		dims[smallest] *= factors[i]
	}
	for i := 1; i < len(dims); i++ { // non-increasing
		for j := i; j > 0 && dims[j] > dims[j-1]; j-- {
			dims[j], dims[j-1] = dims[j-1], dims[j]
		}
	}
	return dims, nil
}

// Dims returns the dimensions.
func (g *Cart[T]) Dims() []int { return append([]int(nil), g.dims...) }

// Coords returns the coordinates of rank (MPI_Cart_coords).
func (g *Cart[T]) Coords(rank int) []int {
	coords := make([]int, len(g.dims))
	for i := len(g.dims) - 1; i >= 0; i-- {
		coords[i] = rank % g.dims[i]
		rank /= g.dims[i]
	}
	return coords
}

// RankOf returns the rank at coords (MPI_Cart_rank): a periodic dimension
// wraps a coordinate out of range; a non-periodic one gives ProcNull.
func (g *Cart[T]) RankOf(coords []int) int {
	r := 0
	for i, d := range g.dims {
		x := coords[i]
		if x < 0 || x >= d {
			if !g.periods[i] {
				return ProcNull
			}
			x = ((x % d) + d) % d
		}
		r = r*d + x
	}
	return r
}

// Shift returns the ranks disp steps down (src) and up (dst) dimension dim
// from the caller (MPI_Cart_shift): a halo exchange sends to dst and
// receives from src. Past the end of a non-periodic dimension the rank is
// ProcNull, so edge ranks run the same exchange as the others.
func (g *Cart[T]) Shift(dim, disp int) (src, dst int) {
	at := append([]int(nil), g.coords...)
	at[dim] = g.coords[dim] - disp
	src = g.RankOf(at)
	at[dim] = g.coords[dim] + disp
	dst = g.RankOf(at)
	return src, dst
}

// Neighbors returns the caller's 2·len(Dims()) neighbours in the order of
// the neighbour collectives: for each dimension, the one below, then the
// one above (ProcNull past a non-periodic end).
func (g *Cart[T]) Neighbors() []int {
	nb := make([]int, 0, 2*len(g.dims))
	for d := range g.dims {
		lo, hi := g.Shift(d, 1)
		nb = append(nb, lo, hi)
	}
	return nb
}

// NeighborAllgather sends send to every neighbour and receives each
// neighbour's send into block j of recv (len(send) elements each), in the
// order of Neighbors (MPI_Neighbor_allgather); the blocks of ProcNull
// neighbours are left alone. len(recv) is 2·len(Dims())·len(send). It is a
// collective over the communicator.
func (g *Cart[T]) NeighborAllgather(send, recv []T) error {
	_, err := g.neighbor(false, send, recv, false)
	return err
}

// INeighborAllgather starts a NeighborAllgather.
func (g *Cart[T]) INeighborAllgather(send, recv []T) (*CollRequest, error) {
	return g.neighbor(true, send, recv, false)
}

// NeighborAlltoall sends block j of send to neighbour j and receives
// neighbour j's block for the caller into block j of recv, in the order of
// Neighbors (MPI_Neighbor_alltoall); send and recv both have 2·len(Dims())
// blocks of the same size, and the blocks of ProcNull neighbours are left
// alone.
func (g *Cart[T]) NeighborAlltoall(send, recv []T) error {
	_, err := g.neighbor(false, send, recv, true)
	return err
}

// INeighborAlltoall starts a NeighborAlltoall.
func (g *Cart[T]) INeighborAlltoall(send, recv []T) (*CollRequest, error) {
	return g.neighbor(true, send, recv, true)
}

// neighbor runs one round: a receive from each neighbour (in order), then
// a send to each. Within a dimension the sends go up first, then down: in
// a periodic dimension of 1 or 2 ranks both neighbours are the same rank,
// and its two messages then land in the right blocks (the first one
// received, into the block from below, is what it sent up).
func (g *Cart[T]) neighbor(nb bool, send, recv []T, alltoall bool) (*CollRequest, error) {
	nbrs := g.Neighbors()
	k := len(nbrs)
	name := "NeighborAllgather"
	if alltoall {
		name = "NeighborAlltoall"
	}
	block := len(send)
	if alltoall && k > 0 {
		block = len(send) / k
	}
	return g.launch(name, nb, func() error {
		if alltoall {
			if err := checkLen(name+" send", len(send), k*block); err != nil {
				return err
			}
		}
		if err := checkLen(name+" recv", len(recv), k*block); err != nil {
			return err
		}
		return checkDisjoint(send, recv)
	}, func(s *sched) {
		var rx, tx []xfer
		for j, p := range nbrs {
			if p != ProcNull {
				rx = append(rx, xfer{peer: p, buf: b(recv[j*block : (j+1)*block])})
			}
		}
		for d := 0; d < k; d += 2 {
			for _, j := range []int{d + 1, d} {
				if p := nbrs[j]; p != ProcNull {
					out := send
					if alltoall {
						out = send[j*block : (j+1)*block]
					}
					tx = append(tx, xfer{peer: p, buf: b(out)})
				}
			}
		}
		if len(rx) > 0 || len(tx) > 0 {
			s.add(rx, tx, nil)
		}
	})
}
