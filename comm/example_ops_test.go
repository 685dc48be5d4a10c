package comm_test

import (
	"fmt"

	"github.com/fibermpi/fibermpi/comm"
)

// each runs fn on k fiber ranks, each with its world of T, and prints the
// line each rank returns in rank order, whatever order the ranks ran in.
func each[T any](k int, fn func(c *comm.Comm[T]) (string, error)) {
	lines := make([]string, k)
	run(k, func(c *comm.Comm[T]) error {
		s, err := fn(c)
		lines[c.Rank()] = s // each rank writes its own slot; Run's return orders it before the reads
		return err
	})
	for _, s := range lines {
		if s != "" {
			fmt.Println(s)
		}
	}
}

// Sum adds the ranks' vectors element by element.
func ExampleSum() {
	each(3, func(c *comm.Comm[int]) (string, error) {
		v := []int{1, c.Rank()} // [1 0], [1 1], [1 2]
		out := make([]int, 2)
		err := c.Allreduce(v, out, comm.Sum[int]())
		return fmt.Sprintf("rank %d: %v", c.Rank(), out), err
	})
	// Output:
	// rank 0: [3 3]
	// rank 1: [3 3]
	// rank 2: [3 3]
}

// Prod multiplies: here the factorial of the number of ranks.
func ExampleProd() {
	run(4, func(c *comm.Comm[int64]) error {
		out := []int64{0}
		err := c.Reduce([]int64{int64(c.Rank() + 1)}, out, comm.Prod[int64](), 0)
		if err == nil && c.Rank() == 0 {
			fmt.Println("4! =", out[0])
		}
		return err
	})
	// Output: 4! = 24
}

// Min finds the smallest value of any ordered element type.
func ExampleMin() {
	run(3, func(c *comm.Comm[float64]) error {
		out := []float64{0}
		err := c.Allreduce([]float64{2.5 - float64(c.Rank())}, out, comm.Min[float64]())
		if err == nil && c.Rank() == 0 {
			fmt.Println(out[0])
		}
		return err
	})
	// Output: 0.5
}

// Max finds the largest time step any rank proposes.
func ExampleMax() {
	run(3, func(c *comm.Comm[int]) error {
		out := []int{0}
		err := c.Allreduce([]int{[]int{7, 42, 3}[c.Rank()]}, out, comm.Max[int]())
		if err == nil && c.Rank() == 2 {
			fmt.Println(out[0])
		}
		return err
	})
	// Output: 42
}

// MinLoc finds the smallest value and where it is: the Index of the pair
// travels with its Value (ties go to the smaller Index, as in MPI).
func ExampleMinLoc() {
	run(4, func(c *comm.Comm[comm.ValueIndex[float64]]) error {
		residual := []float64{0.3, 0.1, 0.7, 0.1}[c.Rank()]
		out := make([]comm.ValueIndex[float64], 1)
		err := c.Allreduce([]comm.ValueIndex[float64]{{Value: residual, Index: c.Rank()}}, out, comm.MinLoc[float64]())
		if err == nil && c.Rank() == 0 {
			fmt.Printf("smallest %.1f at rank %d\n", out[0].Value, out[0].Index)
		}
		return err
	})
	// Output: smallest 0.1 at rank 1
}

// MaxLoc finds the largest value and the rank holding it.
func ExampleMaxLoc() {
	run(3, func(c *comm.Comm[comm.ValueIndex[int]]) error {
		load := []int{5, 9, 2}[c.Rank()]
		out := make([]comm.ValueIndex[int], 1)
		err := c.Reduce([]comm.ValueIndex[int]{{Value: load, Index: c.Rank()}}, out, comm.MaxLoc[int](), 0)
		if err == nil && c.Rank() == 0 {
			fmt.Printf("busiest: rank %d (%d tasks)\n", out[0].Index, out[0].Value)
		}
		return err
	})
	// Output: busiest: rank 1 (9 tasks)
}

// Band keeps the bits every rank has set: the features all ranks support.
func ExampleBand() {
	run(3, func(c *comm.Comm[uint8]) error {
		caps := []uint8{0b1111, 0b0111, 0b1101}[c.Rank()]
		out := []uint8{0}
		err := c.Allreduce([]uint8{caps}, out, comm.Band[uint8]())
		if err == nil && c.Rank() == 0 {
			fmt.Printf("%04b\n", out[0])
		}
		return err
	})
	// Output: 0101
}

// Bor sets each bit some rank set: which ranks are done, one bit each.
func ExampleBor() {
	run(4, func(c *comm.Comm[uint32]) error {
		var mine uint32
		if c.Rank()%2 == 0 {
			mine = 1 << c.Rank()
		}
		out := []uint32{0}
		err := c.Allreduce([]uint32{mine}, out, comm.Bor[uint32]())
		if err == nil && c.Rank() == 0 {
			fmt.Printf("%04b\n", out[0])
		}
		return err
	})
	// Output: 0101
}

// Bxor is the parity of the ranks' bits, as a cheap checksum.
func ExampleBxor() {
	run(3, func(c *comm.Comm[uint8]) error {
		out := []uint8{0}
		err := c.Allreduce([]uint8{[]uint8{0b0011, 0b0110, 0b0001}[c.Rank()]}, out, comm.Bxor[uint8]())
		if err == nil && c.Rank() == 0 {
			fmt.Printf("%04b\n", out[0])
		}
		return err
	})
	// Output: 0100
}

// Land is true only when every rank says true: have all converged?
func ExampleLand() {
	run(3, func(c *comm.Comm[bool]) error {
		out := []bool{false}
		err := c.Allreduce([]bool{c.Rank() != 1}, out, comm.Land[bool]())
		if err == nil && c.Rank() == 0 {
			fmt.Println("all converged:", out[0])
		}
		return err
	})
	// Output: all converged: false
}

// Lor is true when some rank says true: did anyone find it?
func ExampleLor() {
	run(3, func(c *comm.Comm[bool]) error {
		out := []bool{false}
		err := c.Allreduce([]bool{c.Rank() == 2}, out, comm.Lor[bool]())
		if err == nil && c.Rank() == 0 {
			fmt.Println("found:", out[0])
		}
		return err
	})
	// Output: found: true
}

// Lxor is true when an odd number of ranks say true.
func ExampleLxor() {
	run(3, func(c *comm.Comm[bool]) error {
		out := []bool{false}
		err := c.Allreduce([]bool{c.Rank() > 0}, out, comm.Lxor[bool]())
		if err == nil && c.Rank() == 0 {
			fmt.Println("odd:", out[0])
		}
		return err
	})
	// Output: odd: false
}

// NewOp makes a reduction of one's own. Matrix products of 2×2 matrices
// are not commutative, so the reduction keeps rank order: the result is
// M0·M1·M2.
func ExampleNewOp() {
	type m2 [4]int // row-major 2×2
	mul := comm.NewOp("matmul", func(in, inout []m2) {
		for i := range in { // inout = in · inout: in comes from lower ranks
			a, b := in[i], inout[i]
			inout[i] = m2{a[0]*b[0] + a[1]*b[2], a[0]*b[1] + a[1]*b[3], a[2]*b[0] + a[3]*b[2], a[2]*b[1] + a[3]*b[3]}
		}
	}, false)
	run(3, func(c *comm.Comm[m2]) error {
		ms := []m2{{1, 1, 0, 1}, {1, 0, 1, 1}, {2, 0, 0, 1}}
		out := make([]m2, 1)
		err := c.Reduce(ms[c.Rank():c.Rank()+1], out, mul, 0)
		if err == nil && c.Rank() == 0 {
			fmt.Println(out[0])
		}
		return err
	})
	// Output: [4 1 2 1]
}

// Apply runs an Op's function on two local vectors, with no communication:
// inout becomes in ⊕ inout.
func ExampleOp_Apply() {
	in, inout := []int{1, 2, 3}, []int{10, 20, 30}
	comm.Sum[int]().Apply(in, inout)
	fmt.Println(inout)
	// Output: [11 22 33]
}

// Commutative says whether a reduction may combine its operands in any
// order; the built-in ones may.
func ExampleOp_Commutative() {
	concat := comm.NewOp("first", func(in, inout []int) { copy(inout, in) }, false)
	fmt.Println(comm.Sum[int]().Commutative(), concat.Commutative())
	// Output: true false
}

// Name names an Op, as errors and traces show it.
func ExampleOp_Name() {
	fmt.Println(comm.Max[float64]().Name(), comm.NewOp("mine", func(in, inout []int) {}, true).Name())
	// Output: max mine
}
