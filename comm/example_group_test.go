package comm_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fibermpi/fibermpi/comm"
	"github.com/fibermpi/fibermpi/endpoint"
)

// Group returns the communicator's ranks as a group; groups are local
// values, built and compared with no communication.
func ExampleComm_Group() {
	run(4, func(c *comm.Comm[int]) error {
		g := c.Group()
		if c.Rank() == 0 {
			fmt.Println(g.Size(), g.Rank(c.Endpoint()))
		}
		return nil
	})
	// Output: 4 0
}

// Incl picks ranks, in the order given; the caller's rank in the new group
// follows that order.
func ExampleGroup_Incl() {
	each(4, func(c *comm.Comm[int]) (string, error) {
		g, err := c.Group().Incl(3, 1)
		return fmt.Sprintf("rank %d is %d in the group", c.Rank(), g.Rank(c.Endpoint())), err
	})
	// Output:
	// rank 0 is -1 in the group
	// rank 1 is 1 in the group
	// rank 2 is -1 in the group
	// rank 3 is 0 in the group
}

// Excl removes ranks, keeping the others' order.
func ExampleGroup_Excl() {
	run(4, func(c *comm.Comm[int]) error {
		g, err := c.Group().Excl(0)
		if err == nil && c.Rank() == 2 {
			fmt.Println(g.Size(), g.Rank(c.Endpoint()))
		}
		return err
	})
	// Output: 3 1
}

// Size is the number of members.
func ExampleGroup_Size() {
	run(5, func(c *comm.Comm[int]) error {
		odd, err := c.Group().Incl(1, 3)
		if err == nil && c.Rank() == 0 {
			fmt.Println(c.Group().Size(), odd.Size())
		}
		return err
	})
	// Output: 5 2
}

// Rank is the caller's rank in the group, or Undefined (-1) outside it.
func ExampleGroup_Rank() {
	each(3, func(c *comm.Comm[int]) (string, error) {
		g, err := c.Group().Incl(2, 0)
		r := g.Rank(c.Endpoint())
		return fmt.Sprintf("rank %d: %d (undefined %v)", c.Rank(), r, r == comm.Undefined), err
	})
	// Output:
	// rank 0: 1 (undefined false)
	// rank 1: -1 (undefined true)
	// rank 2: 0 (undefined false)
}

// Union, Intersection and Difference combine groups as sets, in MPI's
// order: the first group's members first.
func ExampleGroup_Union() {
	run(4, func(c *comm.Comm[int]) error {
		w := c.Group()
		a, _ := w.Incl(0, 1)
		b, err := w.Incl(3, 1)
		if err == nil && c.Rank() == 0 {
			ranks, _ := a.Union(b).TranslateRanks([]int{0, 1, 2}, w)
			fmt.Println(ranks)
		}
		return err
	})
	// Output: [0 1 3]
}

// Intersection keeps the members in both, in the first group's order.
func ExampleGroup_Intersection() {
	run(4, func(c *comm.Comm[int]) error {
		w := c.Group()
		a, _ := w.Incl(3, 2, 1)
		b, err := w.Incl(1, 3)
		if err == nil && c.Rank() == 0 {
			i := a.Intersection(b)
			ranks, _ := i.TranslateRanks([]int{0, 1}, w)
			fmt.Println(i.Size(), ranks)
		}
		return err
	})
	// Output: 2 [3 1]
}

// Difference keeps the first group's members not in the second.
func ExampleGroup_Difference() {
	run(4, func(c *comm.Comm[int]) error {
		w := c.Group()
		b, err := w.Incl(0, 2)
		if err == nil && c.Rank() == 0 {
			d := w.Difference(b)
			ranks, _ := d.TranslateRanks([]int{0, 1}, w)
			fmt.Println(ranks)
		}
		return err
	})
	// Output: [1 3]
}

// TranslateRanks maps ranks of one group to another: which world ranks
// are ranks 0 and 1 of a subgroup?
func ExampleGroup_TranslateRanks() {
	run(4, func(c *comm.Comm[int]) error {
		w := c.Group()
		sub, err := w.Incl(2, 3, 0)
		if err == nil && c.Rank() == 0 {
			toWorld, _ := sub.TranslateRanks([]int{0, 1, 2}, w)
			toSub, _ := w.TranslateRanks([]int{1, 2}, sub)
			fmt.Println(toWorld, toSub)
		}
		return err
	})
	// Output: [2 3 0] [-1 0]
}

// Compare tells identical groups (same members, same order) from similar
// ones (same members, another order).
func ExampleGroup_Compare() {
	run(3, func(c *comm.Comm[int]) error {
		w := c.Group()
		rev, _ := w.Incl(2, 1, 0)
		same, _ := w.Incl(0, 1, 2)
		part, err := w.Incl(0)
		if err == nil && c.Rank() == 0 {
			fmt.Println(w.Compare(same), w.Compare(rev), w.Compare(part))
		}
		return err
	})
	// Output: ident similar unequal
}

// Addrs gives the transport address of each member, by rank: who to reach
// at the transport layer.
func ExampleGroup_Addrs() {
	run(3, func(c *comm.Comm[int]) error {
		if c.Rank() == 0 {
			a := c.Group().Addrs()
			fmt.Println(len(a), a[0] == c.Endpoint().Addr())
		}
		return nil
	})
	// Output: 3 true
}

// Create makes a communicator over a group; ranks outside it get nil. All
// ranks of the parent call it.
func ExampleComm_Create() {
	each(4, func(c *comm.Comm[int]) (string, error) {
		g, err := c.Group().Incl(0, 2)
		if err != nil {
			return "", err
		}
		sub, err := c.Create(g)
		if err != nil || sub == nil {
			return fmt.Sprintf("rank %d: not a member", c.Rank()), err
		}
		sum := []int{0}
		err = sub.Allreduce([]int{c.Rank()}, sum, comm.Sum[int]())
		return fmt.Sprintf("rank %d: rank %d of %d, sum %d", c.Rank(), sub.Rank(), sub.Size(), sum[0]), err
	})
	// Output:
	// rank 0: rank 0 of 2, sum 2
	// rank 1: not a member
	// rank 2: rank 1 of 2, sum 2
	// rank 3: not a member
}

// CreateGroup is called by the group's members only: here the even ranks
// build their communicator while the odd ones do something else.
func ExampleComm_CreateGroup() {
	each(4, func(c *comm.Comm[int]) (string, error) {
		if c.Rank()%2 == 1 {
			return "", nil
		}
		g, err := c.Group().Incl(0, 2)
		if err != nil {
			return "", err
		}
		evens, err := c.CreateGroup(g, 7)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("world %d is even %d", c.Rank(), evens.Rank()), nil
	})
	// Output:
	// world 0 is even 0
	// world 2 is even 1
}

// Compare tells a communicator from its duplicate (congruent: same ranks,
// another context) and from a reordering (similar).
func ExampleComm_Compare() {
	run(2, func(c *comm.Comm[int]) error {
		d, err := c.Dup()
		if err != nil {
			return err
		}
		r, err := c.Split(0, -c.Rank()) // same ranks, reversed
		if err == nil && c.Rank() == 0 {
			fmt.Println(c.Compare(c), c.Compare(d), c.Compare(r))
		}
		return err
	})
	// Output: ident congruent similar
}

// Free releases a communicator; later calls on it fail with ErrFreed.
// Worlds cannot be freed.
func ExampleComm_Free() {
	run(2, func(c *comm.Comm[int]) error {
		d, err := c.Dup()
		if err != nil {
			return err
		}
		if err := d.Free(); err != nil {
			return err
		}
		if c.Rank() == 0 {
			fmt.Println(errors.Is(d.Send([]int{1}, 1, 0), comm.ErrFreed), errors.Is(c.Free(), comm.ErrNotFreeable))
		}
		return nil
	})
	// Output: true true
}

// SetName and Name label a communicator for errors and traces.
func ExampleComm_SetName() {
	run(2, func(c *comm.Comm[int]) error {
		rows, err := c.Split(0, 0)
		if err != nil {
			return err
		}
		rows.SetName("rows")
		if c.Rank() == 0 {
			fmt.Printf("%q %q\n", c.Name(), rows.Name())
		}
		return nil
	})
	// Output: "" "rows"
}

// Name returns the name SetName gave, or "".
func ExampleComm_Name() {
	run(1, func(c *comm.Comm[int]) error {
		c.SetName("my world")
		fmt.Println(c.Name())
		return nil
	})
	// Output: my world
}

// As views a communicator with another element type: the same ranks, the
// same context, so a []float64 and a []int can travel on one communicator.
func ExampleAs() {
	run(2, func(ci *comm.Comm[int]) error {
		cf, err := comm.As[float64](ci)
		if err != nil {
			return err
		}
		if ci.Rank() == 0 {
			if err := ci.Send([]int{3}, 1, 0); err != nil {
				return err
			}
			return cf.Send([]float64{0.25}, 1, 1)
		}
		n, x := []int{0}, []float64{0}
		if _, err := ci.Recv(n, 0, 0); err != nil {
			return err
		}
		if _, err := cf.Recv(x, 0, 1); err != nil {
			return err
		}
		fmt.Println(n[0], x[0], ci.Compare(ci) == comm.Ident)
		return nil
	})
	// Output: 3 0.25 true
}

// New wraps an endpoint-level communicator in a typed one: here the
// process communicator (the ranks of this OS process).
func ExampleNew() {
	err := endpoint.Run(3, func(ep *endpoint.Endpoint) error {
		proc := ep.Process()
		c, err := comm.New[int](ep, proc, ep.Rank()) // in one process the ranks match the world's
		if err != nil {
			return err
		}
		sum := []int{0}
		err = c.Allreduce([]int{1}, sum, comm.Sum[int]())
		if err == nil && c.Rank() == 0 {
			fmt.Println("ranks in this process:", sum[0])
		}
		return err
	})
	if err != nil {
		fmt.Println(err)
	}
	// Output: ranks in this process: 3
}

// Endpoint returns the caller's registered endpoint, for calls at the
// byte level.
func ExampleComm_Endpoint() {
	run(2, func(c *comm.Comm[int]) error {
		ep := c.Endpoint()
		if c.Rank() == 0 {
			fmt.Println(ep.Rank() == c.Rank(), ep.Size())
		}
		return nil
	})
	// Output: true 2
}

// Info returns the communicator as the endpoint layer sees it: its size,
// and what Endpoint's byte-level calls take.
func ExampleComm_Info() {
	run(2, func(c *comm.Comm[byte]) error {
		info := c.Info()
		if c.Rank() == 0 {
			return c.Endpoint().Send(info, 0, 1, 0, []byte("raw"))
		}
		buf := make([]byte, 3)
		_, err := c.Recv(buf, 0, 0)
		fmt.Println(info.Size(), string(buf))
		return err
	})
	// Output: 2 raw
}

// Waiter is what the caller blocks on: a fiber's (Fiber() non-nil) or a
// goroutine's.
func ExampleComm_Waiter() {
	run(1, func(c *comm.Comm[int]) error {
		fmt.Println("on a fiber:", c.Waiter().Fiber() != nil)
		return nil
	})
	// Output: on a fiber: true
}

// Abort ends the job in the caller's name: every other rank's blocked call
// returns an *AbortError naming it, and the job's error (printed first
// here) is the aborting rank's.
func ExampleComm_Abort() {
	each(2, func(c *comm.Comm[int]) (string, error) {
		if c.Rank() == 1 {
			return "", c.Abort(errors.New("input file missing"))
		}
		_, err := c.Recv(make([]int, 1), 1, 0) // never sent
		var ae *comm.AbortError
		if errors.As(err, &ae) {
			return fmt.Sprintf("rank 0: aborted by rank %d", ae.Rank), nil
		}
		return "", err
	})
	// Output:
	// rank 1: input file missing
	// rank 0: aborted by rank 1
}

// SetCollPath chooses how collectives run: CollMessages forces messages
// even between ranks that share memory (to compare, or to debug).
func ExampleComm_SetCollPath() {
	run(3, func(c *comm.Comm[int]) error {
		d, err := c.Dup()
		if err != nil {
			return err
		}
		if err := d.SetCollPath(comm.CollMessages); err != nil {
			return err
		}
		sum := []int{0}
		err = d.Allreduce([]int{c.Rank()}, sum, comm.Sum[int]())
		if err == nil && c.Rank() == 0 {
			fmt.Println(comm.CollMessages, sum[0])
		}
		return err
	})
	// Output: messages 3
}

// WaitAnyContext waits for the first of several requests, or until the
// context ends: then it returns -1 and the requests stay pending.
func ExampleWaitAnyContext() {
	run(1, func(c *comm.Comm[int]) error {
		a, err := c.Irecv(make([]int, 1), 0, 1) // nobody sends either
		if err != nil {
			return err
		}
		b, err := c.Irecv(make([]int, 1), 0, 2)
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		i, err := comm.WaitAnyContext(ctx, a, b)
		fmt.Println(i, errors.Is(err, context.DeadlineExceeded))
		a.Cancel()
		b.Cancel()
		return nil
	})
	// Output: -1 true
}
