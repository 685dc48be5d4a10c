package comm_test

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/fibermpi/fibermpi/comm"
	"github.com/fibermpi/fibermpi/datatype"
	"github.com/fibermpi/fibermpi/endpoint"
	"github.com/fibermpi/fibermpi/fiber"
)

// Every rank says hello to rank 0, which receives from each rank in turn
// and so prints the greetings in rank order, whatever order they arrived in.
func ExampleComm_Recv() {
	err := endpoint.Run(4, func(ep *endpoint.Endpoint) error {
		c, err := comm.World[byte](ep)
		if err != nil {
			return err
		}
		if c.Rank() != 0 {
			return c.Send(fmt.Appendf(nil, "hello from rank %d of %d", c.Rank(), c.Size()), 0, 0)
		}
		buf := make([]byte, 64)
		for src := 1; src < c.Size(); src++ {
			st, err := c.Recv(buf, src, 0)
			if err != nil {
				return err
			}
			fmt.Println(string(buf[:st.Count]))
		}
		return nil
	})
	if err != nil {
		fmt.Println(err)
	}
	// Output:
	// hello from rank 1 of 4
	// hello from rank 2 of 4
	// hello from rank 3 of 4
}

// Two ranks bat a counter back and forth: rank 0 serves, rank 1 returns it
// one higher. Each Recv yields the rank's fiber until the ball arrives.
func ExampleComm_Send() {
	const rounds = 3
	err := endpoint.Run(2, func(ep *endpoint.Endpoint) error {
		c, err := comm.World[int](ep)
		if err != nil {
			return err
		}
		ball := make([]int, 1)
		other := 1 - c.Rank()
		for i := range rounds {
			if c.Rank() == 0 {
				ball[0] = 10 * i
				if err := c.Send(ball, other, 0); err != nil {
					return err
				}
				if _, err := c.Recv(ball, other, 0); err != nil {
					return err
				}
				fmt.Printf("ping %d, pong %d\n", 10*i, ball[0])
				continue
			}
			if _, err := c.Recv(ball, other, 0); err != nil {
				return err
			}
			ball[0]++
			if err := c.Send(ball, other, 0); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		fmt.Println(err)
	}
	// Output:
	// ping 0, pong 1
	// ping 10, pong 11
	// ping 20, pong 21
}

// Snir's example (Snir 2009 §2.4) in Go. The process starts at
// MPI_THREAD_SINGLE, which with endpoints means one thread per endpoint, not
// one per process. The OpenMP team becomes one fiber per endpoint: the
// "master" creates the endpoints (MPI_Endpoint_create), each fiber
// registers with its own (MPI_Endpoint_register), finds its rank in the
// world and in the process communicator (MPI_COMM_PROCESS), sends to its
// left neighbour and receives from its right one. The paper's bound
// "myrank < size" would make the last rank receive from a rank that does not
// exist; here it is "myrank < size-1".
func Example_snirEndpoints() {
	const count = 4
	p, err := endpoint.Init(endpoint.ThreadSingle, endpoint.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	nthreads := 4
	if nthreads > p.MaxEndpoints() { // the MPI_ENDPOINTS attribute
		fmt.Println("too many threads")
		return
	}
	eps, err := p.CreateEndpoints(nthreads)
	if err != nil {
		fmt.Println(err)
		return
	}
	got := make([][]int32, nthreads) // what each thread received
	errs := make([]error, nthreads)
	var spawnErr error
	for myid, ep := range eps { // #pragma omp parallel
		spawnErr = errors.Join(spawnErr, p.Scheduler().Spawn(func(f *fiber.Fiber) {
			errs[myid] = snirThread(ep, f, myid, count, &got[myid])
		}))
	}
	err = errors.Join(spawnErr, p.Scheduler().Wait(), errors.Join(errs...), p.Finalize())
	if err != nil {
		fmt.Println(err)
	}
	for myid, buf := range got {
		fmt.Printf("thread %d received %v\n", myid, buf)
	}
	// Output:
	// thread 0 received [1 1 1 1]
	// thread 1 received [2 2 2 2]
	// thread 2 received [3 3 3 3]
	// thread 3 received []
}

// snirThread is the body of the parallel region of Snir 2009 §2.4.
func snirThread(ep *endpoint.Endpoint, f *fiber.Fiber, myid, count int, got *[]int32) error {
	h, err := ep.Register(f.Waiter()) // MPI_Endpoint_register(myid, endpoints)
	if err != nil {
		return err
	}
	defer h.Unregister()
	world, err := comm.World[int32](h) // MPI_COMM_WORLD of the endpoints
	if err != nil {
		return err
	}
	myrank, size := world.Rank(), world.Size()
	mythreadid := slices.Index(h.Process().Addrs, h.Addr()) // rank in MPI_COMM_PROCESS
	if myid != mythreadid {
		return fmt.Errorf("thread %d is rank %d of its process", myid, mythreadid)
	}
	buff := slices.Repeat([]int32{int32(myrank)}, count)
	var req *comm.Request[int32]
	if myrank > 0 {
		if req, err = world.Isend(buff, myrank-1, 3); err != nil {
			return err
		}
	}
	if myrank < size-1 {
		buff1 := make([]int32, count)
		if _, err := world.Recv(buff1, myrank+1, 3); err != nil {
			return err
		}
		*got = buff1
	}
	if req != nil { // MPI_Wait on MPI_REQUEST_NULL returns at once
		_, err = req.Wait()
	}
	return err
}

// Sridharan et al. 2014's Listing 1 in Go: a hybrid program whose threads get ranks from
// endpoints. The process initialises at MPI_THREAD_MULTIPLE, the "master"
// creates one endpoint per thread, and each thread — a plain goroutine here,
// as an OpenMP thread is an OS thread — registers with its endpoint
// (fiber.NewGoroutineWaiter) and uses it as its rank.
//
// In the embedded default the job is this one OS process, so the two MPI
// processes of the listing are the two halves of one endpoints world:
// thread tn of "process" p is rank p*nt+tn. The listing's MPI_Allreduce is
// written with point-to-point calls (recursive doubling): at the step with
// mask nt each thread exchanges with the matching thread of the other
// process.
func Example_libraryEndpoints() {
	const procs, nt = 2, 2 // MPI processes, OpenMP threads per process
	const n = 100          // the work: sum 1..n, split by endpoint rank
	p, err := endpoint.Init(endpoint.ThreadMultiple, endpoint.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	epComm, err := p.CreateEndpoints(procs * nt) // MPI_Comm_create_endpoints
	if err != nil {
		fmt.Println(err)
		return
	}
	sums := make([]int, len(epComm))
	errs := make([]error, len(epComm))
	var wg sync.WaitGroup
	for rank, ep := range epComm { // #pragma omp parallel, across both processes
		wg.Go(func() {
			errs[rank] = func() error {
				h, err := ep.Register(fiber.NewGoroutineWaiter())
				if err != nil {
					return err
				}
				defer h.Unregister() // MPI_Comm_free(&ep_comm[tn])
				c, err := comm.World[int](h)
				if err != nil {
					return err
				}
				epRank, size := c.Rank(), c.Size() // MPI_Comm_rank(ep_comm[tn], &ep_rank)
				sum := 0
				for i := 1 + epRank; i <= n; i += size { // compute, split on ep_rank
					sum += i
				}
				mine, theirs := []int{0}, []int{0}
				for mask := 1; mask < size; mask <<= 1 { // MPI_Allreduce(..., ep_comm[tn])
					mine[0] = sum
					partner := epRank ^ mask
					if _, err := c.Sendrecv(mine, partner, mask, theirs, partner, mask); err != nil {
						return err
					}
					sum += theirs[0]
				}
				sums[epRank] = sum
				return nil
			}()
		})
	}
	wg.Wait()
	if err := errors.Join(errors.Join(errs...), p.Finalize()); err != nil { // MPI_Finalize
		fmt.Println(err)
	}
	for rank, s := range sums {
		fmt.Printf("process %d thread %d: sum %d\n", rank/nt, rank%nt, s)
	}
	// Output:
	// process 0 thread 0: sum 5050
	// process 0 thread 1: sum 5050
	// process 1 thread 0: sum 5050
	// process 1 thread 1: sum 5050
}

// Nonblocking calls return a Request, a future of the message's Status.
// Rank 0 posts a receive for each other rank, then waits for all of them at
// once; the senders wait for their own sends.
func ExampleWaitAll() {
	err := endpoint.Run(4, func(ep *endpoint.Endpoint) error {
		c, err := comm.World[float64](ep)
		if err != nil {
			return err
		}
		if c.Rank() != 0 {
			req, err := c.Isend([]float64{float64(c.Rank()) / 4}, 0, 7)
			if err != nil {
				return err
			}
			_, err = req.Wait()
			return err
		}
		bufs := make([][]float64, c.Size())
		reqs := make([]comm.Waitable, 0, c.Size()-1)
		for src := 1; src < c.Size(); src++ {
			bufs[src] = make([]float64, 1)
			req, err := c.Irecv(bufs[src], src, 7)
			if err != nil {
				return err
			}
			reqs = append(reqs, req)
		}
		if err := comm.WaitAll(reqs...); err != nil {
			return err
		}
		for src := 1; src < c.Size(); src++ {
			fmt.Printf("from %d: %v\n", src, bufs[src][0])
		}
		return nil
	})
	if err != nil {
		fmt.Println(err)
	}
	// Output:
	// from 1: 0.25
	// from 2: 0.5
	// from 3: 0.75
}

// A loop of nonblocking operations reuses its requests: IrecvInto and
// IsendInto start each window's operations in the same requests, so the
// loop allocates nothing per message.
func ExampleComm_IrecvInto() {
	const window, windows = 4, 3
	err := endpoint.Run(2, func(ep *endpoint.Endpoint) error {
		c, err := comm.World[int](ep)
		if err != nil {
			return err
		}
		var reqs [window]comm.Request[int]
		waitables := make([]comm.Waitable, window)
		for i := range reqs {
			waitables[i] = &reqs[i]
		}
		bufs := make([]int, window)
		for w := range windows {
			for i := range reqs {
				if c.Rank() == 0 {
					bufs[i] = 10*w + i
					err = c.IsendInto(&reqs[i], bufs[i:i+1], 1, i)
				} else {
					err = c.IrecvInto(&reqs[i], bufs[i:i+1], 0, i)
				}
				if err != nil {
					return err
				}
			}
			if err := comm.WaitAll(waitables...); err != nil {
				return err
			}
			if c.Rank() == 1 {
				fmt.Println(bufs)
			}
		}
		return nil
	})
	if err != nil {
		fmt.Println(err)
	}
	// Output:
	// [0 1 2 3]
	// [10 11 12 13]
	// [20 21 22 23]
}

// Wait returns the Status of a receive: who sent it, with which tag, and
// how many elements arrived.
func ExampleRequest_Wait() {
	err := endpoint.Run(2, func(ep *endpoint.Endpoint) error {
		c, err := comm.World[int32](ep)
		if err != nil {
			return err
		}
		if c.Rank() == 1 {
			return c.Send([]int32{4, 5, 6}, 0, 42)
		}
		buf := make([]int32, 8)
		req, err := c.Irecv(buf, comm.AnySource, comm.AnyTag)
		if err != nil {
			return err
		}
		st, err := req.Wait()
		if err != nil {
			return err
		}
		fmt.Printf("source %d, tag %d, %d elements: %v\n", st.Source, st.Tag, st.Count, buf[:st.Count])
		return nil
	})
	if err != nil {
		fmt.Println(err)
	}
	// Output:
	// source 1, tag 42, 3 elements: [4 5 6]
}

// SendLayout sends a non-contiguous layout: here every other element of a
// row, datatype.Vector(4, 1, 2, Float64), which arrives packed in a
// contiguous buffer. RecvLayout would scatter it into a layout at the
// receiver in the same way.
func ExampleComm_SendLayout() {
	err := endpoint.Run(2, func(ep *endpoint.Endpoint) error {
		c, err := comm.World[float64](ep)
		if err != nil {
			return err
		}
		if c.Rank() == 0 {
			row := []float64{0, 1, 2, 3, 4, 5, 6, 7}
			everyOther, err := datatype.Vector(len(row)/2, 1, 2, datatype.Float64)
			if err != nil {
				return err
			}
			return c.SendLayout(row, 1, everyOther, 1, 0)
		}
		buf := make([]float64, 4)
		if _, err := c.Recv(buf, 0, 0); err != nil {
			return err
		}
		fmt.Println(buf)
		return nil
	})
	if err != nil {
		fmt.Println(err)
	}
	// Output:
	// [0 2 4 6]
}
