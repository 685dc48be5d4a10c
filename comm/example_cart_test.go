package comm_test

import (
	"fmt"

	"github.com/fibermpi/fibermpi/comm"
)

// CartCreate lays 6 ranks on a 2×3 grid, row-major; DimsCreate picks the
// dimensions.
func ExampleCartCreate() {
	run(6, func(c *comm.Comm[float64]) error {
		dims, err := comm.DimsCreate(c.Size(), 2)
		if err != nil {
			return err
		}
		g, err := comm.CartCreate(c, dims, []bool{false, true}) // columns wrap around
		if err != nil {
			return err
		}
		if g.Rank() == 4 {
			fmt.Println("dims", g.Dims(), "rank 4 at", g.Coords(4), "neighbours", g.Neighbors())
		}
		return nil
	})
	// Output: dims [3 2] rank 4 at [2 0] neighbours [2 -2 5 5]
}

// Shift gives the halo partners along a dimension: send to dst, receive
// from src; past a non-periodic end the partner is ProcNull, and the same
// Sendrecv serves every rank.
func ExampleCart_Shift() {
	run(4, func(c *comm.Comm[int]) error {
		g, err := comm.CartCreate(c, []int{4}, nil)
		if err != nil {
			return err
		}
		src, dst := g.Shift(0, 1)
		got := []int{-1}
		if _, err := g.Sendrecv([]int{g.Rank()}, dst, 0, got, src, 0); err != nil {
			return err
		}
		if g.Rank() <= 1 {
			fmt.Printf("rank %d: from %d got %d\n", g.Rank(), src, got[0])
		}
		return nil
	})
	// Unordered output:
	// rank 0: from -2 got -1
	// rank 1: from 0 got 0
}

// Coords and RankOf translate between ranks and grid positions.
func ExampleCart_Coords() {
	run(6, func(c *comm.Comm[int]) error {
		g, err := comm.CartCreate(c, []int{2, 3}, []bool{true, false})
		if err != nil {
			return err
		}
		if g.Rank() == 0 {
			fmt.Println(g.Coords(5), g.RankOf([]int{1, 2}), g.RankOf([]int{-1, 0}), g.RankOf([]int{0, 3}) == comm.ProcNull)
		}
		return nil
	})
	// Output: [1 2] 5 3 true
}

// NeighborAllgather gives each rank its neighbours' values, in the order of
// Neighbors; the blocks of ProcNull neighbours keep what they held.
func ExampleCart_NeighborAllgather() {
	run(3, func(c *comm.Comm[int]) error {
		g, err := comm.CartCreate(c, []int{3}, nil)
		if err != nil {
			return err
		}
		got := []int{-1, -1}
		if err := g.NeighborAllgather([]int{100 + g.Rank()}, got); err != nil {
			return err
		}
		if g.Rank() == 0 {
			fmt.Println("rank 0, below and above:", got)
		}
		return nil
	})
	// Output: rank 0, below and above: [-1 101]
}

// NeighborAlltoall sends each neighbour its own block: on a ring, the
// first block goes down and the second up.
func ExampleCart_NeighborAlltoall() {
	run(4, func(c *comm.Comm[int]) error {
		g, err := comm.CartCreate(c, []int{4}, []bool{true})
		if err != nil {
			return err
		}
		r := g.Rank()
		got := make([]int, 2)
		if err := g.NeighborAlltoall([]int{-r, r}, got); err != nil {
			return err
		}
		if r == 0 {
			fmt.Println("from below (rank 3) and above (rank 1):", got)
		}
		return nil
	})
	// Output: from below (rank 3) and above (rank 1): [3 -1]
}
