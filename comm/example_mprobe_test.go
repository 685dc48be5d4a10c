package comm_test

import (
	"fmt"
	"sync"

	"github.com/fibermpi/fibermpi/comm"
	"github.com/fibermpi/fibermpi/endpoint"
	"github.com/fibermpi/fibermpi/fiber"
)

// Mprobe takes a message out of matching, so sizing the buffer and
// receiving cannot race with another thread of the same rank: here two
// goroutines share rank 0's endpoint (ThreadMultiple) and receive messages
// of unknown length; each message reaches one of them, whole.
func ExampleComm_Mprobe() {
	p, err := endpoint.Init(endpoint.ThreadMultiple, endpoint.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Finalize()
	eps, err := p.CreateEndpoints(2)
	if err != nil {
		fmt.Println(err)
		return
	}
	words := []string{"a", "matched", "probe", "is", "race-free", "."}
	var mu sync.Mutex
	got := map[string]bool{}
	var wg sync.WaitGroup
	for range 2 { // two receiving threads of rank 0
		wg.Go(func() {
			ep, err := eps[0].Register(fiber.NewGoroutineWaiter())
			if err != nil {
				fmt.Println(err)
				return
			}
			defer ep.Unregister()
			c, _ := comm.World[byte](ep)
			for {
				m, st, err := c.Mprobe(1, comm.AnyTag)
				if err != nil {
					fmt.Println(err)
					return
				}
				buf := make([]byte, st.Count) // exactly this message's size
				if _, err := c.Mrecv(m, buf); err != nil || st.Tag == 1 {
					return // tag 1: stop
				}
				mu.Lock()
				got[string(buf)] = true
				mu.Unlock()
			}
		})
	}
	ep, err := eps[1].Register(fiber.NewGoroutineWaiter())
	if err != nil {
		fmt.Println(err)
		return
	}
	c, _ := comm.World[byte](ep)
	for _, w := range words {
		c.Send([]byte(w), 0, 0)
	}
	c.Send(nil, 0, 1) // one stop for each receiver
	c.Send(nil, 0, 1)
	wg.Wait()
	ep.Unregister()
	fmt.Println(len(got), "distinct words received")
	// Output: 6 distinct words received
}

// Improbe is Mprobe that does not wait; Imrecv starts the receive of what
// it found.
func ExampleComm_Improbe() {
	run(2, func(c *comm.Comm[int32]) error {
		if c.Rank() == 1 {
			return c.Ssend([]int32{1, 2, 3}, 0, 4) // returns once rank 0 has the message
		}
		for {
			m, st, ok, err := c.Improbe(comm.AnySource, comm.AnyTag)
			if err != nil {
				return err
			}
			if !ok {
				c.Waiter().Fiber().Yield()
				continue
			}
			buf := make([]int32, st.Count)
			q, err := c.Imrecv(m, buf)
			if err != nil {
				return err
			}
			if _, err := q.Wait(); err != nil {
				return err
			}
			fmt.Println(buf, "tag", st.Tag)
			return nil
		}
	})
	// Output: [1 2 3] tag 4
}

// Mrecv receives the message Mprobe took, once; a second Mrecv of it
// fails with ErrMessageUsed.
func ExampleComm_Mrecv() {
	run(2, func(c *comm.Comm[float64]) error {
		if c.Rank() == 1 {
			return c.Send([]float64{2.5}, 0, 0)
		}
		m, _, err := c.Mprobe(1, 0)
		if err != nil {
			return err
		}
		x := []float64{0}
		_, err = c.Mrecv(m, x)
		_, again := c.Mrecv(m, x)
		fmt.Println(x[0], err, again == comm.ErrMessageUsed)
		return nil
	})
	// Output: 2.5 <nil> true
}
