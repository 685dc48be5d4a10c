package comm_test

import (
	"fmt"

	"github.com/fibermpi/fibermpi/comm"
)

// Every nonblocking collective starts the operation and returns a
// *CollRequest at once; the buffers belong to the operation until it
// completes. Between start and Wait a rank computes.

// Ibarrier lets a rank go on working while the others catch up.
func ExampleComm_Ibarrier() {
	run(3, func(c *comm.Comm[int]) error {
		q, err := c.Ibarrier()
		if err != nil {
			return err
		}
		work := 0
		for i := range 1000 { // overlapped with the barrier
			work += i
		}
		if err := q.Wait(); err != nil {
			return err
		}
		if c.Rank() == 0 {
			fmt.Println("all arrived; work", work)
		}
		return nil
	})
	// Output: all arrived; work 499500
}

// CollRequest.Wait blocks until the collective completes (a fiber yields,
// a goroutine parks) and returns its error.
func ExampleCollRequest_Wait() {
	each(3, func(c *comm.Comm[int]) (string, error) {
		buf := []int{0, 0}
		if c.Rank() == 1 {
			buf = []int{4, 2}
		}
		q, err := c.Ibcast(buf, 1)
		if err != nil {
			return "", err
		}
		err = q.Wait()
		return fmt.Sprintf("rank %d: %v", c.Rank(), buf), err
	})
	// Output:
	// rank 0: [4 2]
	// rank 1: [4 2]
	// rank 2: [4 2]
}

// CollRequest.Test polls: it advances the collective and says whether it
// is done, never blocking. Poll between slices of other work; a fiber that
// polls in a loop must yield in it, or the ranks sharing its worker never
// run and the collective never completes.
func ExampleCollRequest_Test() {
	run(4, func(c *comm.Comm[int]) error {
		sum := []int{0}
		q, err := c.Iallreduce([]int{c.Rank()}, sum, comm.Sum[int]())
		if err != nil {
			return err
		}
		for {
			done, err := q.Test()
			if err != nil {
				return err
			}
			if done {
				break
			}
			// a slice of other work would go here
			if f := c.Waiter().Fiber(); f != nil { // nil on a goroutine rank
				f.Yield()
			}
		}
		if c.Rank() == 3 {
			fmt.Println("sum of ranks:", sum[0])
		}
		return nil
	})
	// Output: sum of ranks: 6
}

// Ibcast starts a broadcast from the root.
func ExampleComm_Ibcast() {
	each(2, func(c *comm.Comm[float64]) (string, error) {
		x := []float64{0}
		if c.Rank() == 0 {
			x[0] = 3.25
		}
		q, err := c.Ibcast(x, 0)
		if err == nil {
			err = q.Wait()
		}
		return fmt.Sprintf("rank %d: %g", c.Rank(), x[0]), err
	})
	// Output:
	// rank 0: 3.25
	// rank 1: 3.25
}

// Ireduce starts a reduction to the root.
func ExampleComm_Ireduce() {
	run(4, func(c *comm.Comm[int]) error {
		out := []int{0}
		q, err := c.Ireduce([]int{c.Rank() * c.Rank()}, out, comm.Sum[int](), 0)
		if err == nil {
			err = q.Wait()
		}
		if err == nil && c.Rank() == 0 {
			fmt.Println("sum of squares:", out[0])
		}
		return err
	})
	// Output: sum of squares: 14
}

// Igather starts a gather to the root.
func ExampleComm_Igather() {
	run(3, func(c *comm.Comm[int]) error {
		all := make([]int, c.Size())
		q, err := c.Igather([]int{c.Rank() + 100}, all, 2)
		if err == nil {
			err = q.Wait()
		}
		if err == nil && c.Rank() == 2 {
			fmt.Println(all)
		}
		return err
	})
	// Output: [100 101 102]
}

// Igatherv starts a gather of blocks of different sizes.
func ExampleComm_Igatherv() {
	run(3, func(c *comm.Comm[int]) error {
		mine := make([]int, c.Rank())
		for i := range mine {
			mine[i] = c.Rank()
		}
		all := make([]int, 3)
		q, err := c.Igatherv(mine, all, []int{0, 1, 2}, []int{0, 0, 1}, 0)
		if err == nil {
			err = q.Wait()
		}
		if err == nil && c.Rank() == 0 {
			fmt.Println(all)
		}
		return err
	})
	// Output: [1 2 2]
}

// Iallgather starts a gather whose result every rank gets.
func ExampleComm_Iallgather() {
	each(2, func(c *comm.Comm[int]) (string, error) {
		all := make([]int, 2)
		q, err := c.Iallgather([]int{c.Rank() - 5}, all)
		if err == nil {
			err = q.Wait()
		}
		return fmt.Sprintf("rank %d: %v", c.Rank(), all), err
	})
	// Output:
	// rank 0: [-5 -4]
	// rank 1: [-5 -4]
}

// Iallgatherv starts an Allgatherv.
func ExampleComm_Iallgatherv() {
	each(2, func(c *comm.Comm[int]) (string, error) {
		mine := []int{7, 8, 9}[:c.Rank()+1]
		all := make([]int, 3)
		q, err := c.Iallgatherv(mine, all, []int{1, 2}, []int{0, 1})
		if err == nil {
			err = q.Wait()
		}
		return fmt.Sprintf("rank %d: %v", c.Rank(), all), err
	})
	// Output:
	// rank 0: [7 7 8]
	// rank 1: [7 7 8]
}

// Iscatter starts a scatter from the root.
func ExampleComm_Iscatter() {
	each(3, func(c *comm.Comm[int]) (string, error) {
		got := []int{0}
		q, err := c.Iscatter([]int{30, 31, 32}, got, 0) // send is read at the root only
		if err == nil {
			err = q.Wait()
		}
		return fmt.Sprintf("rank %d: %d", c.Rank(), got[0]), err
	})
	// Output:
	// rank 0: 30
	// rank 1: 31
	// rank 2: 32
}

// Iscatterv starts a Scatterv.
func ExampleComm_Iscatterv() {
	each(2, func(c *comm.Comm[int]) (string, error) {
		got := make([]int, 1+2*c.Rank())
		q, err := c.Iscatterv([]int{1, 2, 3, 4}, []int{1, 3}, []int{0, 1}, got, 0)
		if err == nil {
			err = q.Wait()
		}
		return fmt.Sprintf("rank %d: %v", c.Rank(), got), err
	})
	// Output:
	// rank 0: [1]
	// rank 1: [2 3 4]
}

// Ialltoall starts an all-to-all exchange.
func ExampleComm_Ialltoall() {
	each(2, func(c *comm.Comm[int]) (string, error) {
		got := make([]int, 2)
		q, err := c.Ialltoall([]int{10 * c.Rank(), 10*c.Rank() + 1}, got)
		if err == nil {
			err = q.Wait()
		}
		return fmt.Sprintf("rank %d: %v", c.Rank(), got), err
	})
	// Output:
	// rank 0: [0 10]
	// rank 1: [1 11]
}

// Ialltoallv starts an Alltoallv: here rank 0 sends nothing to itself
// and two elements to rank 1, which sends one back.
func ExampleComm_Ialltoallv() {
	each(2, func(c *comm.Comm[int]) (string, error) {
		var send, recv []int
		var sc, sd, rc, rd []int
		if c.Rank() == 0 {
			send, sc, sd = []int{5, 6}, []int{0, 2}, []int{0, 0}
			recv, rc, rd = make([]int, 1), []int{0, 1}, []int{0, 0}
		} else {
			send, sc, sd = []int{9}, []int{1, 0}, []int{0, 1}
			recv, rc, rd = make([]int, 2), []int{2, 0}, []int{0, 2}
		}
		q, err := c.Ialltoallv(send, sc, sd, recv, rc, rd)
		if err == nil {
			err = q.Wait()
		}
		return fmt.Sprintf("rank %d: %v", c.Rank(), recv), err
	})
	// Output:
	// rank 0: [9]
	// rank 1: [5 6]
}

// Iscan starts an inclusive prefix reduction.
func ExampleComm_Iscan() {
	each(3, func(c *comm.Comm[int]) (string, error) {
		out := []int{0}
		q, err := c.Iscan([]int{2}, out, comm.Prod[int]())
		if err == nil {
			err = q.Wait()
		}
		return fmt.Sprintf("rank %d: %d", c.Rank(), out[0]), err
	})
	// Output:
	// rank 0: 2
	// rank 1: 4
	// rank 2: 8
}

// Iexscan starts an exclusive prefix reduction; rank 0's recv is left as
// it was.
func ExampleComm_Iexscan() {
	each(3, func(c *comm.Comm[int]) (string, error) {
		out := []int{-1}
		q, err := c.Iexscan([]int{c.Rank() + 1}, out, comm.Sum[int]())
		if err == nil {
			err = q.Wait()
		}
		return fmt.Sprintf("rank %d: %d", c.Rank(), out[0]), err
	})
	// Output:
	// rank 0: -1
	// rank 1: 1
	// rank 2: 3
}

// IreduceScatterBlock starts a ReduceScatterBlock.
func ExampleComm_IreduceScatterBlock() {
	each(2, func(c *comm.Comm[int]) (string, error) {
		out := []int{0}
		q, err := c.IreduceScatterBlock([]int{1, 2}, out, comm.Max[int]())
		if err == nil {
			err = q.Wait()
		}
		return fmt.Sprintf("rank %d: %d", c.Rank(), out[0]), err
	})
	// Output:
	// rank 0: 1
	// rank 1: 2
}

// IreduceScatter starts a ReduceScatter.
func ExampleComm_IreduceScatter() {
	each(2, func(c *comm.Comm[int]) (string, error) {
		counts := []int{2, 1}
		out := make([]int, counts[c.Rank()])
		q, err := c.IreduceScatter([]int{c.Rank(), 1, 2}, out, counts, comm.Sum[int]())
		if err == nil {
			err = q.Wait()
		}
		return fmt.Sprintf("rank %d: %v", c.Rank(), out), err
	})
	// Output:
	// rank 0: [1 2]
	// rank 1: [4]
}

// DimsCreate picks a balanced grid for n ranks; CartCreate takes it.
func ExampleDimsCreate() {
	for _, n := range []int{12, 7, 16} {
		d, err := comm.DimsCreate(n, 2)
		fmt.Println(n, d, err)
	}
	d, err := comm.DimsCreate(24, 3)
	fmt.Println(24, d, err)
	// Output:
	// 12 [4 3] <nil>
	// 7 [7 1] <nil>
	// 16 [4 4] <nil>
	// 24 [4 3 2] <nil>
}

// Dims returns the grid's extent in each dimension.
func ExampleCart_Dims() {
	run(6, func(c *comm.Comm[int]) error {
		g, err := comm.CartCreate(c, []int{3, 2}, nil)
		if err == nil && g.Rank() == 0 {
			fmt.Println(g.Dims())
		}
		return err
	})
	// Output: [3 2]
}

// Neighbors lists, per dimension, the rank below and the rank above;
// ProcNull (-2) past a non-periodic edge.
func ExampleCart_Neighbors() {
	each(3, func(c *comm.Comm[int]) (string, error) {
		g, err := comm.CartCreate(c, []int{3}, nil)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("rank %d: %v", g.Rank(), g.Neighbors()), nil
	})
	// Output:
	// rank 0: [-2 1]
	// rank 1: [0 2]
	// rank 2: [1 -2]
}

// RankOf maps grid coordinates to a rank; a periodic dimension wraps.
func ExampleCart_RankOf() {
	run(4, func(c *comm.Comm[int]) error {
		g, err := comm.CartCreate(c, []int{2, 2}, []bool{true, false})
		if err == nil && g.Rank() == 0 {
			fmt.Println(g.RankOf([]int{1, 1}), g.RankOf([]int{2, 1}), g.RankOf([]int{0, 2}))
		}
		return err
	})
	// Output: 3 1 -2
}

// INeighborAllgather starts a halo exchange; the rank updates its interior
// meanwhile, then waits.
func ExampleCart_INeighborAllgather() {
	each(3, func(c *comm.Comm[int]) (string, error) {
		g, err := comm.CartCreate(c, []int{3}, []bool{true})
		if err != nil {
			return "", err
		}
		halo := make([]int, 2)
		q, err := g.INeighborAllgather([]int{g.Rank() * 11}, halo)
		if err == nil {
			err = q.Wait()
		}
		return fmt.Sprintf("rank %d: below %d above %d", g.Rank(), halo[0], halo[1]), err
	})
	// Output:
	// rank 0: below 22 above 11
	// rank 1: below 0 above 22
	// rank 2: below 11 above 0
}

// INeighborAlltoall starts a NeighborAlltoall.
func ExampleCart_INeighborAlltoall() {
	each(2, func(c *comm.Comm[int]) (string, error) {
		g, err := comm.CartCreate(c, []int{2}, nil)
		if err != nil {
			return "", err
		}
		got := []int{-1, -1}
		q, err := g.INeighborAlltoall([]int{g.Rank()*10 + 1, g.Rank()*10 + 2}, got)
		if err == nil {
			err = q.Wait()
		}
		return fmt.Sprintf("rank %d: %v", g.Rank(), got), err
	})
	// Output:
	// rank 0: [-1 11]
	// rank 1: [2 -1]
}
