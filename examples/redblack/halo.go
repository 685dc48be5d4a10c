package main

import (
	"github.com/fibermpi/fibermpi/comm"
	"github.com/fibermpi/fibermpi/datatype"
)

// Tags of halo messages, by the direction they travel: a stripe sends its
// first row up (to the stripe above) and its last row down.
const (
	tagUp   = 1
	tagDown = 2
)

// vectorTypes returns Snir 2009 §4.3.3's dtype[2] for rows of cols interior
// cells: dtype[0], the (cols+1)/2 cells of one color starting at column 1,
// and dtype[1], the cols/2 starting at column 2. A row's cells of a color
// starting at column j0 are sent and received with dtype[j0−1].
func vectorTypes(cols int) ([2]datatype.Type, error) {
	var t [2]datatype.Type
	for o := range t {
		n := (cols + 1 - o) / 2
		if n == 0 {
			continue // one column: no cell starts at column 2
		}
		v, err := datatype.Vector(n, 1, 2, datatype.Float64)
		if err != nil {
			return t, err
		}
		t[o] = v
	}
	return t, nil
}

// side is one message-passing boundary of a stripe: the edge row it sends
// to the neighbouring stripe's ghost row, and its own ghost row, which the
// neighbour's edge row is received into.
type side struct {
	c                *comm.Comm[float64]
	peer             int // the neighbour's rank
	edge, ghost      int // local rows
	sendTag, recvTag int
	types            *[2]datatype.Type
}

// top returns the side towards the stripe above, reached at rank peer.
func top(c *comm.Comm[float64], peer int, types *[2]datatype.Type) *side {
	return &side{c: c, peer: peer, edge: 1, ghost: 0, sendTag: tagUp, recvTag: tagDown, types: types}
}

// bottom returns the side towards the stripe below a stripe of n rows.
func bottom(c *comm.Comm[float64], peer, n int, types *[2]datatype.Type) *side {
	return &side{c: c, peer: peer, edge: n, ghost: n + 1, sendTag: tagDown, recvTag: tagUp, types: types}
}

// post starts the exchange of half-sweep color c, after the edge row's cells
// of that color are final: Isend of those cells, Irecv of the neighbour's
// cells of that color into the ghost row (the cells the next half-sweep
// reads). It appends the two requests to reqs.
func (sd *side) post(s *slab, c int, reqs []comm.Waitable) ([]comm.Waitable, error) {
	// With an odd number of columns a color has one cell more in one of the
	// two rows than in the other, and with one column none in one of them:
	// each message is skipped by both its sender and its receiver then.
	if buf, j0, n := s.cells(sd.edge, c); n > 0 {
		q, err := sd.c.IsendLayout(buf, 1, sd.types[j0-1], sd.peer, sd.sendTag)
		if err != nil {
			return reqs, err
		}
		reqs = append(reqs, q)
	}
	if buf, j0, n := s.cells(sd.ghost, c); n > 0 {
		q, err := sd.c.IrecvLayout(buf, 1, sd.types[j0-1], sd.peer, sd.recvTag)
		if err != nil {
			return reqs, err
		}
		reqs = append(reqs, q)
	}
	return reqs, nil
}
