package comm_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fibermpi/fibermpi/comm"
	"github.com/fibermpi/fibermpi/datatype"
	"github.com/fibermpi/fibermpi/endpoint"
)

// run runs fn on k fiber ranks, each with its world of T, and prints the
// job's error if any.
func run[T any](k int, fn func(c *comm.Comm[T]) error) {
	err := endpoint.Run(k, func(ep *endpoint.Endpoint) error {
		c, err := comm.World[T](ep)
		if err != nil {
			return err
		}
		return fn(c)
	})
	if err != nil {
		fmt.Println(err)
	}
}

// Sendrecv shifts values around a ring: every rank sends right and receives
// from the left at once, which cannot deadlock.
func ExampleComm_Sendrecv() {
	run(4, func(c *comm.Comm[int]) error {
		right, left := (c.Rank()+1)%c.Size(), (c.Rank()+c.Size()-1)%c.Size()
		got := make([]int, 1)
		st, err := c.Sendrecv([]int{c.Rank() * 10}, right, 0, got, left, 0)
		if err == nil && c.Rank() == 0 {
			fmt.Printf("rank 0 got %d from rank %d\n", got[0], st.Source)
		}
		return err
	})
	// Output: rank 0 got 30 from rank 3
}

// Probe learns a message's size before receiving it, to size the buffer.
func ExampleComm_Probe() {
	run(2, func(c *comm.Comm[byte]) error {
		if c.Rank() == 1 {
			return c.Send([]byte("a message of unknown length"), 0, 5)
		}
		st, err := c.Probe(comm.AnySource, 5)
		if err != nil {
			return err
		}
		buf := make([]byte, st.Count)
		if _, err := c.Recv(buf, st.Source, st.Tag); err != nil {
			return err
		}
		fmt.Printf("%d bytes: %s\n", st.Count, buf)
		return nil
	})
	// Output: 27 bytes: a message of unknown length
}

// Bcast copies the root's buffer to every rank.
func ExampleComm_Bcast() {
	run(3, func(c *comm.Comm[float64]) error {
		params := make([]float64, 2)
		if c.Rank() == 0 {
			copy(params, []float64{0.5, 1e-6})
		}
		if err := c.Bcast(params, 0); err != nil {
			return err
		}
		if c.Rank() == 2 {
			fmt.Println("rank 2 has", params)
		}
		return nil
	})
	// Output: rank 2 has [0.5 1e-06]
}

// Reduce combines every rank's vector element-wise at the root.
func ExampleComm_Reduce() {
	run(4, func(c *comm.Comm[int]) error {
		r := c.Rank()
		var maxes []int
		if r == 0 {
			maxes = make([]int, 2)
		}
		if err := c.Reduce([]int{r, 10 - r}, maxes, comm.Max[int](), 0); err != nil {
			return err
		}
		if r == 0 {
			fmt.Println(maxes)
		}
		return nil
	})
	// Output: [3 10]
}

// Gatherv collects blocks of different lengths: rank r sends r+1 values,
// which land at the root at the displacements it chooses.
func ExampleComm_Gatherv() {
	run(3, func(c *comm.Comm[int]) error {
		mine := make([]int, c.Rank()+1)
		for i := range mine {
			mine[i] = c.Rank()
		}
		counts, displs := []int{1, 2, 3}, []int{0, 1, 3}
		var all []int
		if c.Rank() == 0 {
			all = make([]int, 6)
		}
		if err := c.Gatherv(mine, all, counts, displs, 0); err != nil {
			return err
		}
		if c.Rank() == 0 {
			fmt.Println(all)
		}
		return nil
	})
	// Output: [0 1 1 2 2 2]
}

// RecvLayout scatters a contiguous message into a layout: here a column of
// a 3×3 row-major matrix, datatype.Vector(3, 1, 3, Float64).
func ExampleComm_RecvLayout() {
	run(2, func(c *comm.Comm[float64]) error {
		if c.Rank() == 0 {
			return c.Send([]float64{7, 8, 9}, 1, 0)
		}
		m := make([]float64, 9)
		col, err := datatype.Vector(3, 1, 3, datatype.Float64)
		if err != nil {
			return err
		}
		if _, err := c.RecvLayout(m[1:], 1, col, 0, 0); err != nil { // column 1
			return err
		}
		fmt.Println(m[0:3], m[3:6], m[6:9])
		return nil
	})
	// Output: [0 7 0] [0 8 0] [0 9 0]
}

// A struct of fixed-size fields is an element type like any number: a
// []Particle travels as its bytes, without encoding.
func ExampleWorld() {
	type Particle struct {
		X, Y, Z float64
		ID      int32
		Alive   bool
	}
	run(2, func(c *comm.Comm[Particle]) error {
		if c.Rank() == 0 {
			return c.Send([]Particle{{1, 2, 3, 7, true}, {4, 5, 6, 8, false}}, 1, 0)
		}
		ps := make([]Particle, 2)
		if _, err := c.Recv(ps, 0, 0); err != nil {
			return err
		}
		fmt.Printf("%+v\n", ps[1])
		return nil
	})
	// Output: {X:4 Y:5 Z:6 ID:8 Alive:false}
}

// A nonblocking collective overlaps with other work, and waits together
// with point-to-point requests.
func ExampleComm_Iallreduce() {
	run(3, func(c *comm.Comm[int]) error {
		total := make([]int, 1)
		q, err := c.Iallreduce([]int{c.Rank() + 1}, total, comm.Sum[int]())
		if err != nil {
			return err
		}
		got := make([]int, 1)
		r, err := c.Irecv(got, (c.Rank()+2)%3, 1)
		if err != nil {
			return err
		}
		if err := c.Send([]int{c.Rank()}, (c.Rank()+1)%3, 1); err != nil {
			return err
		}
		if err := comm.WaitAll(q, r); err != nil {
			return err
		}
		if c.Rank() == 0 {
			fmt.Println("total", total[0], "and from the left", got[0])
		}
		return nil
	})
	// Output: total 6 and from the left 2
}

// Done lets a goroutine rank select on a collective: it completes by
// itself meanwhile.
func ExampleCollRequest_Done() {
	err := endpoint.RunGoroutines(2, func(ep *endpoint.Endpoint) error {
		c, err := comm.World[int](ep)
		if err != nil {
			return err
		}
		q, err := c.Ibarrier()
		if err != nil {
			return err
		}
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-q.Done():
				if c.Rank() == 0 {
					fmt.Println("everyone is here")
				}
				return q.Wait() // the error, at once
			case <-tick.C:
				fmt.Println("still waiting") // a slow rank: would print each second
			}
		}
	})
	if err != nil {
		fmt.Println(err)
	}
	// Output: everyone is here
}

// WaitContext bounds a wait for a collective. The collective stays pending
// when the time is up (the other ranks take part in it): here rank 1 joins
// late, and rank 0 waits a second time.
func ExampleCollRequest_WaitContext() {
	run(2, func(c *comm.Comm[int]) error {
		if c.Rank() == 1 {
			if _, err := c.Recv(nil, 0, 9); err != nil { // until rank 0 gave up once
				return err
			}
		}
		q, err := c.Ibarrier()
		if err != nil {
			return err
		}
		if c.Rank() == 0 {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
			defer cancel()
			err := q.WaitContext(ctx)
			fmt.Println("first wait:", err)
			if err := c.Send(nil, 1, 9); err != nil {
				return err
			}
		}
		return q.WaitContext(context.Background())
	})
	// Output: first wait: context deadline exceeded
}

// WaitAllContext waits for a set of requests with a deadline; what did not
// complete stays pending, and a receive can be withdrawn with Cancel.
func ExampleWaitAllContext() {
	run(2, func(c *comm.Comm[int]) error {
		if c.Rank() == 1 {
			return c.Send([]int{1}, 0, 1) // tag 2 never comes
		}
		a, b := make([]int, 1), make([]int, 1)
		r1, err1 := c.Irecv(a, 1, 1)
		r2, err2 := c.Irecv(b, 1, 2)
		if err := errors.Join(err1, err2); err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		fmt.Println(comm.WaitAllContext(ctx, r1, r2))
		_, done := r1.Test()
		fmt.Println("first done:", done, "second cancelled:", r2.Cancel())
		return nil
	})
	// Output:
	// context deadline exceeded
	// first done: true second cancelled: true
}

// Cancel withdraws a receive that no message will match; its status error
// is then comm.ErrCancelled.
func ExampleRequest_Cancel() {
	run(1, func(c *comm.Comm[int]) error {
		r, err := c.Irecv(make([]int, 1), 0, 99)
		if err != nil {
			return err
		}
		fmt.Println("cancelled:", r.Cancel())
		_, err = r.Wait()
		fmt.Println(errors.Is(err, comm.ErrCancelled))
		return nil
	})
	// Output:
	// cancelled: true
	// true
}

// WaitContext waits for one request with a context, yielding a fiber
// (unlike a select on ctx.Done(), which would block the fiber's worker).
func ExampleRequest_WaitContext() {
	run(2, func(c *comm.Comm[int]) error {
		if c.Rank() == 1 {
			return nil // never sends
		}
		r, err := c.Irecv(make([]int, 1), 1, 0)
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		_, err = r.WaitContext(ctx)
		fmt.Println(err, "- cancelled:", r.Cancel())
		return nil
	})
	// Output: context deadline exceeded - cancelled: true
}

// Done gives a point-to-point request's completion as a channel, for a
// goroutine rank's select (a fiber uses Wait or WaitContext instead).
func ExampleRequest_Done() {
	err := endpoint.RunGoroutines(2, func(ep *endpoint.Endpoint) error {
		c, err := comm.World[int](ep)
		if err != nil {
			return err
		}
		if c.Rank() == 1 {
			time.Sleep(time.Millisecond) // a goroutine rank may sleep
			return c.Send([]int{42}, 0, 0)
		}
		got := make([]int, 1)
		r, err := c.Irecv(got, 1, 0)
		if err != nil {
			return err
		}
		select {
		case <-r.Done():
			fmt.Println("got", got[0])
		case <-time.After(time.Minute):
			fmt.Println("nothing after a minute")
		}
		return nil
	})
	if err != nil {
		fmt.Println(err)
	}
	// Output: got 42
}

// WaitAny returns as soon as one request completes: here whichever of two
// senders is first.
func ExampleWaitAny() {
	run(3, func(c *comm.Comm[int]) error {
		if c.Rank() != 0 {
			return c.Send([]int{c.Rank()}, 0, 0)
		}
		a, b := make([]int, 1), make([]int, 1)
		r1, err1 := c.Irecv(a, 1, 0)
		r2, err2 := c.Irecv(b, 2, 0)
		if err := errors.Join(err1, err2); err != nil {
			return err
		}
		i, err := comm.WaitAny(r1, r2)
		if err != nil {
			return err
		}
		j := 1 - i
		if _, err := []*comm.Request[int]{r1, r2}[j].Wait(); err != nil {
			return err
		}
		fmt.Println("got", a[0]+b[0], "from both")
		return nil
	})
	// Output: got 3 from both
}
