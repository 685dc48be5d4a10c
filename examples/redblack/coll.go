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
