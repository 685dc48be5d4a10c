package comm_test

import (
	"fmt"

	"github.com/fibermpi/fibermpi/comm"
)

// Barrier holds every rank until all have reached it: no rank prints
// "after" before every rank has counted itself in.
func ExampleComm_Barrier() {
	arrived := make([]bool, 3)
	each(3, func(c *comm.Comm[int]) (string, error) {
		arrived[c.Rank()] = true
		if err := c.Barrier(); err != nil {
			return "", err
		}
		n := 0
		for _, a := range arrived { // safe to read: every write came before the barrier
			if a {
				n++
			}
		}
		return fmt.Sprintf("rank %d after the barrier sees %d arrived", c.Rank(), n), nil
	})
	// Output:
	// rank 0 after the barrier sees 3 arrived
	// rank 1 after the barrier sees 3 arrived
	// rank 2 after the barrier sees 3 arrived
}

// Gather collects one block from every rank at the root, in rank order.
func ExampleComm_Gather() {
	run(4, func(c *comm.Comm[int]) error {
		var all []int
		if c.Rank() == 0 {
			all = make([]int, 2*c.Size()) // recv matters at the root only
		}
		err := c.Gather([]int{c.Rank(), c.Rank() * c.Rank()}, all, 0)
		if err == nil && c.Rank() == 0 {
			fmt.Println(all)
		}
		return err
	})
	// Output: [0 0 1 1 2 4 3 9]
}

// Allgather is Gather whose result every rank gets.
func ExampleComm_Allgather() {
	each(3, func(c *comm.Comm[int]) (string, error) {
		all := make([]int, c.Size())
		err := c.Allgather([]int{10 * c.Rank()}, all)
		return fmt.Sprintf("rank %d: %v", c.Rank(), all), err
	})
	// Output:
	// rank 0: [0 10 20]
	// rank 1: [0 10 20]
	// rank 2: [0 10 20]
}

// Allgatherv gathers blocks of different sizes: rank r has r+1 elements,
// placed at displs[r] in every rank's recv.
func ExampleComm_Allgatherv() {
	each(3, func(c *comm.Comm[int]) (string, error) {
		counts, displs := []int{1, 2, 3}, []int{0, 1, 3}
		mine := make([]int, c.Rank()+1)
		for i := range mine {
			mine[i] = c.Rank()
		}
		all := make([]int, 6)
		err := c.Allgatherv(mine, all, counts, displs)
		return fmt.Sprintf("rank %d: %v", c.Rank(), all), err
	})
	// Output:
	// rank 0: [0 1 1 2 2 2]
	// rank 1: [0 1 1 2 2 2]
	// rank 2: [0 1 1 2 2 2]
}

// Scatter deals the root's buffer out, one block per rank.
func ExampleComm_Scatter() {
	each(3, func(c *comm.Comm[string4]) (string, error) {
		var deck []string4
		if c.Rank() == 0 {
			deck = []string4{{'a', 'c', 'e', '!'}, {'k', 'i', 'n', 'g'}, {'q', 'u', 'e', 'n'}}
		}
		card := make([]string4, 1)
		err := c.Scatter(deck, card, 0)
		return fmt.Sprintf("rank %d got %s", c.Rank(), card[0][:]), err
	})
	// Output:
	// rank 0 got ace!
	// rank 1 got king
	// rank 2 got quen
}

// string4 is a fixed-size element type: any type without pointers travels
// as it is in memory.
type string4 [4]byte

// Scatterv deals blocks of different sizes: rank r gets counts[r]
// elements from displs[r] of the root's buffer.
func ExampleComm_Scatterv() {
	each(3, func(c *comm.Comm[int]) (string, error) {
		var work []int
		if c.Rank() == 0 {
			work = []int{1, 2, 3, 4, 5, 6}
		}
		counts, displs := []int{3, 2, 1}, []int{0, 3, 5}
		mine := make([]int, counts[c.Rank()])
		err := c.Scatterv(work, counts, displs, mine, 0)
		return fmt.Sprintf("rank %d: %v", c.Rank(), mine), err
	})
	// Output:
	// rank 0: [1 2 3]
	// rank 1: [4 5]
	// rank 2: [6]
}

// Alltoall is a transpose: rank r's block j goes to rank j's block r.
func ExampleComm_Alltoall() {
	each(3, func(c *comm.Comm[int]) (string, error) {
		row := make([]int, c.Size())
		for j := range row {
			row[j] = 10*c.Rank() + j // element (r, j) of a matrix
		}
		col := make([]int, c.Size())
		err := c.Alltoall(row, col)
		return fmt.Sprintf("rank %d: %v", c.Rank(), col), err
	})
	// Output:
	// rank 0: [0 10 20]
	// rank 1: [1 11 21]
	// rank 2: [2 12 22]
}

// Alltoallv exchanges blocks of any size: here rank r sends j+1 copies of
// its rank to rank j, so rank j receives j+1 from each.
func ExampleComm_Alltoallv() {
	each(3, func(c *comm.Comm[int]) (string, error) {
		n := c.Size()
		var send []int
		scounts, sdispls := make([]int, n), make([]int, n)
		for j := range n {
			scounts[j], sdispls[j] = j+1, len(send)
			for range j + 1 {
				send = append(send, c.Rank())
			}
		}
		me := c.Rank()
		rcounts, rdispls := make([]int, n), make([]int, n)
		for i := range n {
			rcounts[i], rdispls[i] = me+1, i*(me+1)
		}
		recv := make([]int, n*(me+1))
		err := c.Alltoallv(send, scounts, sdispls, recv, rcounts, rdispls)
		return fmt.Sprintf("rank %d: %v", me, recv), err
	})
	// Output:
	// rank 0: [0 1 2]
	// rank 1: [0 0 1 1 2 2]
	// rank 2: [0 0 0 1 1 1 2 2 2]
}

// Scan is the inclusive prefix: rank r gets the sum over ranks 0..r.
func ExampleComm_Scan() {
	each(4, func(c *comm.Comm[int]) (string, error) {
		out := []int{0}
		err := c.Scan([]int{c.Rank() + 1}, out, comm.Sum[int]())
		return fmt.Sprintf("rank %d: %d", c.Rank(), out[0]), err
	})
	// Output:
	// rank 0: 1
	// rank 1: 3
	// rank 2: 6
	// rank 3: 10
}

// ReduceScatterBlock sums every rank's vector and leaves block r of the
// sum, one element each here, at rank r.
func ExampleComm_ReduceScatterBlock() {
	each(3, func(c *comm.Comm[int]) (string, error) {
		v := []int{1, 10, 100} // the same on every rank
		out := []int{0}
		err := c.ReduceScatterBlock(v, out, comm.Sum[int]())
		return fmt.Sprintf("rank %d: %d", c.Rank(), out[0]), err
	})
	// Output:
	// rank 0: 3
	// rank 1: 30
	// rank 2: 300
}

// ReduceScatter is ReduceScatterBlock with a block size per rank.
func ExampleComm_ReduceScatter() {
	each(2, func(c *comm.Comm[int]) (string, error) {
		v := []int{1, 2, 3}
		counts := []int{1, 2}
		out := make([]int, counts[c.Rank()])
		err := c.ReduceScatter(v, out, counts, comm.Sum[int]())
		return fmt.Sprintf("rank %d: %v", c.Rank(), out), err
	})
	// Output:
	// rank 0: [2]
	// rank 1: [4 6]
}
