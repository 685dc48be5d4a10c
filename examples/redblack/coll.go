package main

import "github.com/fibermpi/fibermpi/comm"

// allreduceMax returns the maximum of v over the ranks of c (MPI_Allreduce
// with MPI_MAX): the residual of an iteration, the same at every rank.
func allreduceMax(c *comm.Comm[float64], v float64) (float64, error) {
	buf := []float64{v}
	err := c.Allreduce(buf, buf, comm.Max[float64]())
	return buf[0], err
}

// scanSum returns the sum of v over ranks 0 to c.Rank() (MPI_Scan with
// MPI_SUM): summing the stripe sizes gives each stripe its last row.
func scanSum(c *comm.Comm[float64], v int) (int, error) {
	ic, err := comm.As[int](c)
	if err != nil {
		return 0, err
	}
	buf := []int{v}
	err = ic.Scan(buf, buf, comm.Sum[int]())
	return buf[0], err
}

// gatherGrid assembles the grid at rank 0 of c, a world of procs processes
// with eps endpoints each (process p's endpoints being ranks p·eps onwards),
// when the processes are real ones: every rank calls it once, a stripe's
// first endpoint with its slab s (rows of its stripe, ghost rows excluded)
// and the others with s nil. Rank 0 returns the grid, boundary included;
// the others return nil. It is MPI_Gatherv of the stripes' rows into the
// grid's interior rows, and blocks like any collective (yielding the fiber).
func gatherGrid(c *comm.Comm[float64], s *slab, rows, cols, procs, eps int) (*Grid, error) {
	var send []float64
	if s != nil {
		n := len(s.a)/s.w - 2
		send = s.a[s.w : (n+1)*s.w]
	}
	var g *Grid
	var recv []float64
	var counts, displs []int
	if c.Rank() == 0 {
		g = NewGrid(rows, cols)
		recv = g.Data
		w := cols + 2
		counts, displs = make([]int, procs*eps), make([]int, procs*eps)
		for p := range procs {
			first, last := split(rows, procs, p)
			counts[p*eps], displs[p*eps] = (last-first+1)*w, first*w
		}
	}
	if err := c.Gatherv(send, recv, counts, displs, 0); err != nil {
		return nil, err
	}
	return g, nil
}
