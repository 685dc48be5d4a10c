package main

// TEMPORARY: Allreduce and Scan built on point-to-point, until the comm
// package's collectives (issue 7) land. Switch allreduceMax and scanSum to
// c.Allreduce(..., comm.Max[float64]()) and c.Scan(..., comm.Sum[int]()) then,
// and delete this file.

import "github.com/fibermpi/fibermpi/comm"

// Tags of the temporary collectives; halo messages use tagUp and tagDown.
const (
	tagReduce = 100 + iota
	tagBcast
	tagScan
)

// allreduceMax returns the maximum of v over the ranks of c: every rank sends
// its value to rank 0, which sends the maximum back.
func allreduceMax(c *comm.Comm[float64], v float64) (float64, error) {
	buf := []float64{v}
	if c.Rank() != 0 {
		if err := c.Send(buf, 0, tagReduce); err != nil {
			return 0, err
		}
		_, err := c.Recv(buf, 0, tagBcast)
		return buf[0], err
	}
	in := []float64{0}
	for r := 1; r < c.Size(); r++ {
		if _, err := c.Recv(in, r, tagReduce); err != nil {
			return 0, err
		}
		buf[0] = max(buf[0], in[0])
	}
	for r := 1; r < c.Size(); r++ {
		if err := c.Send(buf, r, tagBcast); err != nil {
			return 0, err
		}
	}
	return buf[0], nil
}

// scanSum returns the sum of v over ranks 0 to c.Rank() (MPI_Scan with
// MPI_SUM), passing the partial sum along the ranks.
func scanSum(c *comm.Comm[float64], v int) (int, error) {
	ic, err := comm.As[int](c)
	if err != nil {
		return 0, err
	}
	buf := []int{0}
	if r := ic.Rank(); r > 0 {
		if _, err := ic.Recv(buf, r-1, tagScan); err != nil {
			return 0, err
		}
	}
	buf[0] += v
	if r := ic.Rank(); r < ic.Size()-1 {
		if err := ic.Send(buf, r+1, tagScan); err != nil {
			return 0, err
		}
	}
	return buf[0], nil
}
