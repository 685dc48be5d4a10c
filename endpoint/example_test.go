package endpoint_test

import (
	"fmt"

	"github.com/fibermpi/fibermpi/endpoint"
	"github.com/fibermpi/fibermpi/fiber"
)

// Run starts k ranks as fibers in this process; each gets its registered
// endpoint. Rank 0 sends bytes to rank 1, which prints them.
func ExampleRun() {
	err := endpoint.Run(2, func(ep *endpoint.Endpoint) error {
		w := ep.World()
		if ep.Rank() == 0 {
			return ep.Send(w, 0, 1, 7, []byte("hello, rank 1"))
		}
		buf := make([]byte, 64)
		st, err := ep.Recv(w, 0, 7, buf)
		if err != nil {
			return err
		}
		fmt.Printf("rank %d got %q from rank %d (tag %d)\n", ep.Rank(), buf[:st.Count], st.Source, st.Tag)
		return nil
	})
	if err != nil {
		fmt.Println(err)
	}
	// Output: rank 1 got "hello, rank 1" from rank 0 (tag 7)
}

// Init and CreateEndpoints give endpoints to goroutines too; each goroutine
// registers with its endpoint before calling through it.
func ExampleProcess_CreateEndpoints() {
	p, err := endpoint.Init(endpoint.ThreadMultiple, endpoint.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	eps, err := p.CreateEndpoints(2)
	if err != nil {
		fmt.Println(err)
		return
	}
	done := make(chan error)
	go func() {
		h, err := eps[1].Register(fiber.NewGoroutineWaiter())
		if err != nil {
			done <- err
			return
		}
		buf := make([]byte, 5)
		_, err = h.Recv(h.World(), 0, 0, buf)
		fmt.Printf("goroutine rank 1 got %q\n", buf)
		done <- err
	}()
	h, err := eps[0].Register(fiber.NewGoroutineWaiter())
	if err == nil {
		err = h.Send(h.World(), 0, 1, 0, []byte("hello"))
	}
	if err == nil {
		err = <-done
	}
	fmt.Println(err, p.Finalize())
	// Output:
	// goroutine rank 1 got "hello"
	// <nil> <nil>
}
