package main

import "fmt"

// Run a variant and compare its grid with the sequential code's.
func ExampleRun() {
	cfg := Config{Rows: 64, Cols: 64, Iters: 50, Ranks: 2, Threads: 2, Endpoints: 2, Workers: 2}
	seq, err := Run("seq", cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	hyb, err := Run("hybrid", cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d iterations, residual %.6e\n", hyb.Iters, hyb.Res)
	fmt.Println("same bits as seq:", hyb.Grid.Equal(seq.Grid))
	// Output:
	// 50 iterations, residual 3.231626e-03
	// same bits as seq: true
}

// A run with a tolerance stops at the first iteration whose residual is
// below it, the same one in every variant.
func ExampleVariant_Run() {
	cfg := Config{Rows: 12, Cols: 12, Iters: 10_000, Tol: 1e-6, Ranks: 3, Workers: 1}
	for _, name := range []string{"seq", "mpi"} {
		v, err := Lookup(name)
		if err != nil {
			fmt.Println(err)
			return
		}
		r, err := v.Run(cfg)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%s: %d iterations, residual below 1e-6: %v\n", v.Name, r.Iters, r.Res < 1e-6)
	}
	// Output:
	// seq: 233 iterations, residual below 1e-6: true
	// mpi: 233 iterations, residual below 1e-6: true
}

// More ranks than rows is refused before anything starts.
func ExampleStripeError() {
	_, err := Run("mpi", Config{Rows: 3, Cols: 8, Iters: 1, Ranks: 4})
	fmt.Println(err)
	// Output:
	// redblack: mpi with 4 ranks needs at least 4 rows, the grid has 3
}
