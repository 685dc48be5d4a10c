package comm_test

import (
	"fmt"
	"sync"

	"github.com/fibermpi/fibermpi/comm"
	"github.com/fibermpi/fibermpi/endpoint"
)

// Allreduce as a convergence test: every rank contributes its local
// residual and all learn the largest.
func ExampleComm_Allreduce() {
	err := endpoint.Run(4, func(ep *endpoint.Endpoint) error {
		c, err := comm.World[float64](ep)
		if err != nil {
			return err
		}
		local := []float64{0.5 / float64(c.Rank()+1)}
		global := make([]float64, 1)
		if err := c.Allreduce(local, global, comm.Max[float64]()); err != nil {
			return err
		}
		if c.Rank() == 0 {
			fmt.Println("largest residual:", global[0])
		}
		return nil
	})
	if err != nil {
		fmt.Println(err)
	}
	// Output: largest residual: 0.5
}

// Scan gives each rank the offset of its stripe: the sum of the stripe
// heights of the ranks before it (Exscan), as Snir 2009's red-black SOR
// needs.
func ExampleComm_Exscan() {
	var mu sync.Mutex
	offsets := make([]int, 4)
	err := endpoint.Run(4, func(ep *endpoint.Endpoint) error {
		c, err := comm.World[int](ep)
		if err != nil {
			return err
		}
		rows := []int{10 + c.Rank()} // stripe heights 10, 11, 12, 13
		off := []int{0}
		if err := c.Exscan(rows, off, comm.Sum[int]()); err != nil {
			return err
		}
		mu.Lock()
		offsets[c.Rank()] = off[0]
		mu.Unlock()
		return nil
	})
	if err != nil {
		fmt.Println(err)
	}
	fmt.Println(offsets)
	// Output: [0 10 21 33]
}

// Split makes row communicators of a 2×3 grid; a Bcast in each row
// reaches only that row.
func ExampleComm_Split() {
	var mu sync.Mutex
	got := make([]int, 6)
	err := endpoint.Run(6, func(ep *endpoint.Endpoint) error {
		c, err := comm.World[int](ep)
		if err != nil {
			return err
		}
		row, err := c.Split(c.Rank()/3, c.Rank())
		if err != nil {
			return err
		}
		defer row.Free()
		v := []int{100 * c.Rank()} // each row's rank 0 sends its own value
		if err := row.Bcast(v, 0); err != nil {
			return err
		}
		mu.Lock()
		got[c.Rank()] = v[0]
		mu.Unlock()
		return nil
	})
	if err != nil {
		fmt.Println(err)
	}
	fmt.Println(got)
	// Output: [0 0 0 300 300 300]
}

// Dup gives a library its own communicator: its messages never match the
// caller's, even with the same ranks and tags.
func ExampleComm_Dup() {
	err := endpoint.Run(2, func(ep *endpoint.Endpoint) error {
		c, err := comm.World[int](ep)
		if err != nil {
			return err
		}
		lib, err := c.Dup()
		if err != nil {
			return err
		}
		defer lib.Free()
		if c.Rank() == 0 {
			if err := c.Send([]int{1}, 1, 0); err != nil {
				return err
			}
			return lib.Send([]int{2}, 1, 0)
		}
		v := []int{0}
		if _, err := lib.Recv(v, 0, 0); err != nil { // the library's message
			return err
		}
		fmt.Println("library got", v[0], "relation:", c.Compare(lib))
		_, err = c.Recv(v, 0, 0)
		return err
	})
	if err != nil {
		fmt.Println(err)
	}
	// Output: library got 2 relation: congruent
}
