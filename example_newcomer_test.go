package fibermpi_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/fibermpi/fibermpi/comm"
	"github.com/fibermpi/fibermpi/endpoint"
)

// Monte-Carlo π: each of 8 ranks (fibers) throws darts at the unit square,
// and a Reduce adds up the hits inside the quarter circle at rank 0.
func Example_monteCarloPi() {
	const darts = 200_000 // per rank
	err := endpoint.Run(8, func(ep *endpoint.Endpoint) error {
		c, err := comm.World[int64](ep)
		if err != nil {
			return err
		}
		rng := rand.New(rand.NewPCG(1, uint64(c.Rank()))) // a stream per rank
		var hits int64
		for range darts {
			x, y := rng.Float64(), rng.Float64()
			if x*x+y*y <= 1 {
				hits++
			}
		}
		total := make([]int64, 1)
		if err := c.Reduce([]int64{hits}, total, comm.Sum[int64](), 0); err != nil {
			return err
		}
		if c.Rank() == 0 {
			fmt.Printf("π ≈ %.2f\n", 4*float64(total[0])/float64(darts*c.Size()))
		}
		return nil
	})
	if err != nil {
		fmt.Println(err)
	}
	// Output: π ≈ 3.14
}

// A 1-D heat equation on 4 ranks of 5 cells each, held at 100° on the left
// and 0° on the right. Each step exchanges halo cells with Isend and Irecv;
// past the ends the neighbour is comm.ProcNull, whose receives leave the
// ghost cell alone, so the boundary values stay put and no rank needs an
// if for being at the edge. After enough steps the profile is the steady
// state, a straight line from 100° to 0°.
func Example_heat1D() {
	const n, steps = 5, 3000
	err := endpoint.Run(4, func(ep *endpoint.Endpoint) error {
		c, err := comm.World[float64](ep)
		if err != nil {
			return err
		}
		left, right := c.Rank()-1, c.Rank()+1
		if left < 0 {
			left = comm.ProcNull
		}
		if right == c.Size() {
			right = comm.ProcNull
		}
		u := make([]float64, n+2) // u[0] and u[n+1] are ghost cells
		if c.Rank() == 0 {
			u[0] = 100 // the boundary, never overwritten: its neighbour is ProcNull
		}
		next := make([]float64, n+2)
		for range steps {
			r1, e1 := c.Irecv(u[0:1], left, 0)
			r2, e2 := c.Irecv(u[n+1:], right, 0)
			s1, e3 := c.Isend(u[1:2], left, 0)
			s2, e4 := c.Isend(u[n:n+1], right, 0)
			if err := errors.Join(e1, e2, e3, e4); err != nil {
				return err
			}
			if err := comm.WaitAll(r1, r2, s1, s2); err != nil {
				return err
			}
			copy(next, u)
			for i := 1; i <= n; i++ {
				next[i] = u[i] + 0.25*(u[i-1]-2*u[i]+u[i+1])
			}
			u, next = next, u
		}
		all := make([]float64, n*c.Size())
		if err := c.Gather(u[1:n+1], all, 0); err != nil {
			return err
		}
		if c.Rank() == 0 {
			fmt.Printf("%.0f\n", all)
		}
		return nil
	})
	if err != nil {
		fmt.Println(err)
	}
	// Output: [95 90 86 81 76 71 67 62 57 52 48 43 38 33 29 24 19 14 10 5]
}

// A pipeline of three goroutine ranks: rank 0 produces numbers, rank 1
// squares them, rank 2 adds them up. The ranks are plain goroutines
// (RunGoroutines), so each may use channels, select and time freely; tag 1
// marks the end of the stream.
func Example_pipeline() {
	const data, end = 0, 1
	err := endpoint.RunGoroutines(3, func(ep *endpoint.Endpoint) error {
		c, err := comm.World[int](ep)
		if err != nil {
			return err
		}
		v := make([]int, 1)
		switch c.Rank() {
		case 0:
			for i := 1; i <= 10; i++ {
				if err := c.Send([]int{i}, 1, data); err != nil {
					return err
				}
			}
			return c.Send(nil, 1, end)
		case 1:
			for {
				st, err := c.Recv(v, 0, comm.AnyTag)
				if err != nil || st.Tag == end {
					return errors.Join(err, c.Send(nil, 2, end))
				}
				if err := c.Send([]int{v[0] * v[0]}, 2, data); err != nil {
					return err
				}
			}
		default:
			sum := 0
			for {
				st, err := c.Recv(v, 1, comm.AnyTag)
				if err != nil {
					return err
				}
				if st.Tag == end {
					fmt.Println("sum of squares 1..10 =", sum)
					return nil
				}
				sum += v[0]
			}
		}
	})
	if err != nil {
		fmt.Println(err)
	}
	// Output: sum of squares 1..10 = 385
}

// A nonblocking Allreduce watched with select: each goroutine rank starts
// it, then waits for its Done channel or its deadline, whichever comes
// first. The collective completes by itself meanwhile (Done hands it to a
// goroutine of its own).
func Example_selectAllreduce() {
	err := endpoint.RunGoroutines(4, func(ep *endpoint.Endpoint) error {
		c, err := comm.World[float64](ep)
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		sum := make([]float64, 1)
		q, err := c.Iallreduce([]float64{float64(c.Rank()) + 0.5}, sum, comm.Sum[float64]())
		if err != nil {
			return err
		}
		select {
		case <-q.Done():
			if err := q.Wait(); err != nil { // its error, at once
				return err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
		if c.Rank() == 0 {
			fmt.Println("sum:", sum[0])
		}
		return nil
	})
	if err != nil {
		fmt.Println(err)
	}
	// Output: sum: 8
}
