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

// Rank and Size say who the caller is in the communicator and how many
// ranks it has.
func ExampleComm_Rank() {
	each(3, func(c *comm.Comm[int]) (string, error) {
		return fmt.Sprintf("rank %d of %d", c.Rank(), c.Size()), nil
	})
	// Output:
	// rank 0 of 3
	// rank 1 of 3
	// rank 2 of 3
}

// Size is the number of ranks; a sub-communicator has fewer.
func ExampleComm_Size() {
	each(4, func(c *comm.Comm[int]) (string, error) {
		half, err := c.Split(c.Rank()/2, 0)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("world %d, half %d", c.Size(), half.Size()), nil
	})
	// Output:
	// world 4, half 2
	// world 4, half 2
	// world 4, half 2
	// world 4, half 2
}

// Isend and Irecv start a transfer and return at once; the buffer belongs
// to the request until it completes. Posting both before waiting is how a
// halo exchange avoids deadlock.
func ExampleComm_Isend() {
	each(2, func(c *comm.Comm[int]) (string, error) {
		other := 1 - c.Rank()
		got := []int{0}
		rq, err := c.Irecv(got, other, 0)
		if err != nil {
			return "", err
		}
		sq, err := c.Isend([]int{100 + c.Rank()}, other, 0)
		if err != nil {
			return "", err
		}
		err = comm.WaitAll(rq, sq)
		return fmt.Sprintf("rank %d got %d", c.Rank(), got[0]), err
	})
	// Output:
	// rank 0 got 101
	// rank 1 got 100
}

// Irecv's request, once waited, gives the Status: who sent, with what tag,
// how many elements.
func ExampleComm_Irecv() {
	run(2, func(c *comm.Comm[float32]) error {
		if c.Rank() == 1 {
			return c.Send([]float32{1.5, 2.5}, 0, 9)
		}
		buf := make([]float32, 8)
		q, err := c.Irecv(buf, comm.AnySource, comm.AnyTag)
		if err != nil {
			return err
		}
		st, err := q.Wait()
		if err == nil {
			fmt.Printf("%v from %d, tag %d\n", buf[:st.Count], st.Source, st.Tag)
		}
		return err
	})
	// Output: [1.5 2.5] from 1, tag 9
}

// Ssend completes only once the receiver has matched the message: the
// sender knows it was taken.
func ExampleComm_Ssend() {
	run(2, func(c *comm.Comm[int]) error {
		if c.Rank() == 0 {
			if err := c.Ssend([]int{1}, 1, 0); err != nil {
				return err
			}
			fmt.Println("rank 1 has matched the message")
			return nil
		}
		_, err := c.Recv(make([]int, 1), 0, 0)
		return err
	})
	// Output: rank 1 has matched the message
}

// Issend is the nonblocking Ssend: its request completes when the receive
// matches, so Test stays false while nobody receives.
func ExampleComm_Issend() {
	run(2, func(c *comm.Comm[int]) error {
		if c.Rank() == 0 {
			q, err := c.Issend([]int{1}, 1, 0)
			if err != nil {
				return err
			}
			_, done := q.Test()
			fmt.Println("matched before rank 1 received:", done)
			if err := c.Send(nil, 1, 1); err != nil { // now receive, please
				return err
			}
			if _, err := q.Wait(); err != nil {
				return err
			}
			fmt.Println("matched after")
			return nil
		}
		if _, err := c.Recv(nil, 0, 1); err != nil {
			return err
		}
		_, err := c.Recv(make([]int, 1), 0, 0)
		return err
	})
	// Output:
	// matched before rank 1 received: false
	// matched after
}

// Iprobe asks, without blocking, whether a message is waiting.
func ExampleComm_Iprobe() {
	run(2, func(c *comm.Comm[int]) error {
		if c.Rank() == 1 {
			return c.Ssend([]int{4, 5, 6}, 0, 3) // returns once rank 0 received it
		}
		for {
			st, ok, err := c.Iprobe(1, comm.AnyTag)
			if err != nil {
				return err
			}
			if ok {
				fmt.Printf("waiting: %d elements, tag %d\n", st.Count, st.Tag)
				_, err = c.Recv(make([]int, st.Count), st.Source, st.Tag)
				return err
			}
			c.Waiter().Fiber().Yield() // a polling fiber must let its worker run the others
		}
	})
	// Output: waiting: 3 elements, tag 3
}

// Request.Test polls a request: false and the zero Status until it
// completes.
func ExampleRequest_Test() {
	run(2, func(c *comm.Comm[int]) error {
		if c.Rank() == 1 {
			if _, err := c.Recv(nil, 0, 1); err != nil { // wait for the go-ahead
				return err
			}
			return c.Send([]int{7}, 0, 0)
		}
		got := []int{0}
		q, err := c.Irecv(got, 1, 0)
		if err != nil {
			return err
		}
		_, done := q.Test()
		fmt.Println("done before the send:", done)
		if err := c.Send(nil, 1, 1); err != nil {
			return err
		}
		for {
			if st, done := q.Test(); done {
				fmt.Println("done:", got[0], st.Err)
				return nil
			}
			c.Waiter().Fiber().Yield()
		}
	})
	// Output:
	// done before the send: false
	// done: 7 <nil>
}

// WaitTimeout gives up after a while; the request stays pending and may be
// waited again or cancelled.
func ExampleRequest_WaitTimeout() {
	run(1, func(c *comm.Comm[int]) error {
		q, err := c.Irecv(make([]int, 1), 0, 0) // nobody sends
		if err != nil {
			return err
		}
		_, err = q.WaitTimeout(10 * time.Millisecond)
		fmt.Println(errors.Is(err, endpoint.ErrTimeout), q.Cancel())
		return nil
	})
	// Output: true true
}

// IsendLayout sends a strided layout without packing it first: every
// other element of a row, datatype.Vector(3, 1, 2, Int64).
func ExampleComm_IsendLayout() {
	run(2, func(c *comm.Comm[int64]) error {
		if c.Rank() == 0 {
			row := []int64{0, 1, 2, 3, 4, 5}
			every2, err := datatype.Vector(3, 1, 2, datatype.Int64)
			if err != nil {
				return err
			}
			q, err := c.IsendLayout(row, 1, every2, 1, 0)
			if err != nil {
				return err
			}
			_, err = q.Wait()
			return err
		}
		got := make([]int64, 3)
		_, err := c.Recv(got, 0, 0)
		fmt.Println(got)
		return err
	})
	// Output: [0 2 4]
}

// IrecvLayout receives contiguous data into a strided layout: the odd
// cells of a row.
func ExampleComm_IrecvLayout() {
	run(2, func(c *comm.Comm[int64]) error {
		if c.Rank() == 0 {
			return c.Send([]int64{7, 8, 9}, 1, 0)
		}
		row := make([]int64, 6)
		odd, err := datatype.Vector(3, 1, 2, datatype.Int64)
		if err != nil {
			return err
		}
		q, err := c.IrecvLayout(row[1:], 1, odd, 0, 0)
		if err != nil {
			return err
		}
		if _, err := q.Wait(); err != nil {
			return err
		}
		fmt.Println(row)
		return nil
	})
	// Output: [0 7 0 8 0 9]
}

// TestAll says whether every request has completed, without blocking.
func ExampleTestAll() {
	run(2, func(c *comm.Comm[int]) error {
		if c.Rank() == 1 {
			if _, err := c.Recv(nil, 0, 1); err != nil {
				return err
			}
			return c.Send([]int{1, 2}, 0, 0)
		}
		got := make([]int, 2)
		rq, err := c.Irecv(got, 1, 0)
		if err != nil {
			return err
		}
		sq, err := c.Isend(nil, 1, 1)
		if err != nil {
			return err
		}
		for !comm.TestAll(rq, sq) {
			c.Waiter().Fiber().Yield()
		}
		fmt.Println(got)
		return nil
	})
	// Output: [1 2]
}

// WaitSome returns the indices of all requests complete so far, at least
// one; wait again for the rest.
func ExampleWaitSome() {
	run(3, func(c *comm.Comm[int]) error {
		if c.Rank() != 0 {
			return c.Send([]int{c.Rank()}, 0, 0)
		}
		got := make([]int, 3)
		reqs := make([]comm.Waitable, 3) // reqs[0] stays nil: skipped
		for src := 1; src < 3; src++ {
			q, err := c.Irecv(got[src:src+1], src, 0)
			if err != nil {
				return err
			}
			reqs[src] = q
		}
		n := 0
		for n < 2 {
			idx, err := comm.WaitSome(reqs...)
			if err != nil {
				return err
			}
			for _, i := range idx {
				reqs[i] = nil // done: skip it from now on
				n++
			}
		}
		fmt.Println(got)
		return nil
	})
	// Output: [0 1 2]
}

// RecvContext gives up when its context ends; the receive is withdrawn,
// so a message that comes later waits for the next receive.
func ExampleComm_RecvContext() {
	run(1, func(c *comm.Comm[int]) error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		_, err := c.RecvContext(ctx, make([]int, 1), 0, 0) // nobody sends
		fmt.Println(errors.Is(err, context.DeadlineExceeded))
		return nil
	})
	// Output: true
}

// ProbeContext waits for a message to size a buffer, up to a deadline.
func ExampleComm_ProbeContext() {
	run(2, func(c *comm.Comm[int]) error {
		if c.Rank() == 1 {
			return c.Send([]int{1, 2, 3, 4}, 0, 0)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		st, err := c.ProbeContext(ctx, 1, 0)
		if err != nil {
			return err
		}
		_, err = c.Recv(make([]int, st.Count), 1, 0)
		fmt.Println(st.Count, err)
		return nil
	})
	// Output: 4 <nil>
}

// MprobeContext is Mprobe with a deadline; on timeout no message is taken.
func ExampleComm_MprobeContext() {
	run(1, func(c *comm.Comm[int]) error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
		defer cancel()
		m, _, err := c.MprobeContext(ctx, comm.AnySource, comm.AnyTag)
		fmt.Println(m == nil, errors.Is(err, context.DeadlineExceeded))
		return nil
	})
	// Output: true true
}
