package comm_test

import (
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fibermpi/fibermpi/comm"
	"github.com/fibermpi/fibermpi/endpoint"
	"github.com/fibermpi/fibermpi/fiber"
	"github.com/fibermpi/fibermpi/internal/testenv"
	"github.com/fibermpi/fibermpi/rdma/inproc"
	"github.com/fibermpi/fibermpi/rdma/rdmatest"
)

// Besides wall-clock ns/op, the benchmarks report cpu-ns/op (or cpu-ns/msg):
// the process's CPU time (user + system) per op, idle spinning of workers
// included. On a machine shared with other work the OS takes the cores away
// for a while and ns/op grows; cpu-ns/op does not (testenv.ProcessCPU).

// A pingPonger runs two parties that send a size-byte message back and forth.
// Before each message it sends, a party calls next; when next reports false
// the party tells the other to stop and both return. So one call of next,
// one benchmark op, is one one-way message, and only the party holding the
// message touches b: the message passing orders the calls.
type pingPonger interface {
	run(size int, next func() bool) error
}

// pingPongParty is one side of the ping-pong over a Comm. The stop signal is
// an empty message with the same tag, so neither side needs a wildcard
// receive.
//
// Each party sends from one buffer and receives into another, as the chan
// contender does: Go's memmove writes copies of 256 KiB and more around the
// cache, so a party that sent what it had just received would read it back
// from memory (measured: 46 µs against 13.5 µs per 1 MiB copy here).
func pingPongParty(c *comm.Comm[byte], size int, next func() bool) error {
	me := c.Rank()
	other := 1 - me
	// Each on its own cache lines: 8-byte buffers of the two ranks
	// packed into one line cost fiber/8B ~9 ns (16-byte size class).
	send, recv := make([]byte, size, max(size, 64)), make([]byte, size, max(size, 64))
	if me == 1 {
		if st, err := c.Recv(recv, other, 0); err != nil || st.Count == 0 {
			return err
		}
	}
	for {
		if !next() {
			return c.Send(send[:0], other, 0)
		}
		if err := c.Send(send, other, 0); err != nil {
			return err
		}
		if st, err := c.Recv(recv, other, 0); err != nil || st.Count == 0 {
			return err
		}
	}
}

// fiberPingPong: the two ranks are fibers of an in-process job (endpoint.Run),
// both on the default workers (one, on a two-core machine).
type fiberPingPong struct{}

func (fiberPingPong) run(size int, next func() bool) error {
	return endpoint.Run(2, func(ep *endpoint.Endpoint) error {
		c, err := comm.World[byte](ep)
		if err != nil {
			return err
		}
		return pingPongParty(c, size, next)
	})
}

// remotePingPong: fiberPingPong over the in-process transport seen as one
// between processes (it hides rdma.Local): messages go by packets, and
// large ones by the receiver-driven rendezvous (an offered buffer, Put,
// Done).
type remotePingPong struct{}

func (remotePingPong) run(size int, next func() bool) error {
	opts := endpoint.Options{Transport: rdmatest.HideLocal(inproc.New())}
	return endpoint.RunWith(endpoint.ThreadSingle, opts, 2, func(ep *endpoint.Endpoint) error {
		c, err := comm.World[byte](ep)
		if err != nil {
			return err
		}
		return pingPongParty(c, size, next)
	})
}

// goroutinePingPong: the two ranks are plain goroutines, each registered with
// its endpoint through a goroutine waiter; their blocking calls park.
type goroutinePingPong struct{}

func (goroutinePingPong) run(size int, next func() bool) error {
	p, err := endpoint.Init(endpoint.ThreadSingle, endpoint.Options{})
	if err != nil {
		return err
	}
	eps, err := p.CreateEndpoints(2)
	if err != nil {
		return errors.Join(err, p.Finalize())
	}
	var errs [2]error
	var wg sync.WaitGroup
	for i, ep := range eps {
		wg.Go(func() {
			h, err := ep.Register(fiber.NewGoroutineWaiter())
			if err != nil {
				errs[i] = err
				return
			}
			defer h.Unregister()
			c, err := comm.World[byte](h)
			if err != nil {
				errs[i] = err
				return
			}
			errs[i] = pingPongParty(c, size, next)
		})
	}
	wg.Wait()
	return errors.Join(errs[0], errs[1], p.Finalize())
}

// chanPingPong: the contender, the same ping-pong between two goroutines over
// two Go channels of []byte. The receiver copies the payload into its own
// buffer, as a message delivery would; a nil slice says stop.
type chanPingPong struct{}

func (chanPingPong) run(size int, next func() bool) error {
	ch := [2]chan []byte{make(chan []byte, 1), make(chan []byte, 1)}
	var wg sync.WaitGroup
	for me := range 2 {
		wg.Go(func() {
			other := 1 - me
			// The same buffer layout as pingPongParty's.
			send, recv := make([]byte, size, max(size, 64)), make([]byte, size, max(size, 64))
			if me == 1 {
				m := <-ch[me]
				if m == nil {
					return
				}
				copy(recv, m)
			}
			for {
				if !next() {
					ch[other] <- nil
					return
				}
				ch[other] <- send
				m := <-ch[me]
				if m == nil {
					return
				}
				copy(recv, m)
			}
		})
	}
	wg.Wait()
	return nil
}

// BenchmarkPingPong measures one one-way message of a ping-pong between two
// ranks (a round trip is two ops): ranks as fibers (in process, and over a
// transport that behaves as between processes), ranks as goroutines, and
// plain goroutines with channels as the contender.
func BenchmarkPingPong(b *testing.B) {
	impls := []struct {
		name string
		pp   pingPonger
	}{
		{"fiber", fiberPingPong{}},
		{"fiber-remote", remotePingPong{}},
		{"goroutine", goroutinePingPong{}},
		{"chan", chanPingPong{}},
	}
	sizes := []struct {
		name string
		n    int
	}{{"8B", 8}, {"1KiB", 1 << 10}, {"64KiB", 64 << 10}, {"1MiB", 1 << 20}}
	for _, impl := range impls {
		b.Run(impl.name, func(b *testing.B) {
			for _, size := range sizes {
				b.Run(size.name, func(b *testing.B) {
					b.SetBytes(int64(size.n))
					// The CPU clock runs from the first op to the last,
					// like b.Loop's timer; the party holding the turn
					// reads it.
					var cpu0, cpu time.Duration
					started := false
					next := func() bool {
						if !started {
							started, cpu0 = true, testenv.ProcessCPU()
						}
						more := b.Loop()
						if !more {
							cpu = testenv.ProcessCPU() - cpu0
						}
						return more
					}
					if err := impl.pp.run(size.n, next); err != nil {
						b.Fatal(err)
					}
					b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
				})
			}
		})
	}
}

// BenchmarkMessageRate is osu_mbw_mr on two workers: of 2×pairs ranks,
// rank i < pairs sends to rank i+pairs. A sender starts a window of 64
// nonblocking sends of 8 bytes, its receiver posts 64 receives, both wait
// for all of theirs, and the receiver acknowledges the window with a 1-byte
// message. Ranks are spawned round-robin, so with pairs=1 the sender and
// the receiver run on different workers (every message crosses cores), and
// with pairs=2 each pair shares a worker and the two pairs run in parallel.
//
// Pair 0 drives b.Loop (one op is one of its windows); the other pairs run
// windows until it is done, and the windows they complete meanwhile count
// too: msgs/s and ns/msg are for the messages of all pairs.
//
// req=new starts every message with Isend/Irecv, which allocate a request
// per receive; req=reused gives IsendInto/IrecvInto the same 64 requests
// every window, as an MPI library hands out requests from a pool.
func BenchmarkMessageRate(b *testing.B) {
	for _, pairs := range []int{1, 2} {
		for _, reuse := range []bool{false, true} {
			name := fmt.Sprintf("pairs=%d/req=new", pairs)
			if reuse {
				name = fmt.Sprintf("pairs=%d/req=reused", pairs)
			}
			b.Run(name, func(b *testing.B) { messageRate(b, pairs, reuse) })
		}
	}
}

func messageRate(b *testing.B, pairs int, reuse bool) {
	const window = 64
	var (
		cpu     time.Duration // of the timed loop, read by rank 0
		phase   atomic.Int32  // 0 before rank 0's loop, 1 in it, 2 after
		windows atomic.Int64  // windows completed in phase 1, all pairs
	)
	err := endpoint.RunWith(endpoint.ThreadSingle, endpoint.Options{Workers: 2}, 2*pairs, func(ep *endpoint.Endpoint) error {
		c, err := comm.World[uint64](ep)
		if err != nil {
			return err
		}
		acks, err := comm.As[byte](c)
		if err != nil {
			return err
		}
		bufs := make([]uint64, window)
		reqs := make([]comm.Waitable, window)
		own := make([]comm.Request[uint64], window)
		for i := range own {
			reqs[i] = &own[i]
		}
		ack := make([]byte, 1)
		// start starts message i of a window: a send or a receive.
		start := func(i int, send bool, peer int) error {
			buf := bufs[i : i+1]
			switch {
			case reuse && send:
				return c.IsendInto(&own[i], buf, peer, 0)
			case reuse:
				return c.IrecvInto(&own[i], buf, peer, 0)
			}
			var r *comm.Request[uint64]
			var err error
			if send {
				r, err = c.Isend(buf, peer, 0)
			} else {
				r, err = c.Irecv(buf, peer, 0)
			}
			reqs[i] = r
			return err
		}
		me := c.Rank()
		if me >= pairs { // a receiver
			from := me - pairs
			for {
				for i := range bufs {
					if err := start(i, false, from); err != nil {
						return err
					}
				}
				if err := comm.WaitAll(reqs...); err != nil {
					return err
				}
				if bufs[0] == 0 {
					return nil
				}
				if err := acks.Send(ack, from, 1); err != nil {
					return err
				}
			}
		}
		to := me + pairs
		// window sends one window whose messages carry v (0 = stop) and,
		// unless it is the last, waits for its acknowledgement.
		window := func(v uint64) error {
			for i := range bufs {
				bufs[i] = v
				if err := start(i, true, to); err != nil {
					return err
				}
			}
			if err := comm.WaitAll(reqs...); err != nil || v == 0 {
				return err
			}
			_, err := acks.Recv(ack, to, 1)
			return err
		}
		if me == 0 {
			cpu0 := testenv.ProcessCPU()
			phase.Store(1)
			n := int64(0)
			for b.Loop() {
				if err := window(1); err != nil {
					return err
				}
				n++
			}
			phase.Store(2)
			windows.Add(n)
			cpu = testenv.ProcessCPU() - cpu0
			return window(0)
		}
		n := int64(0)
		for p := phase.Load(); p != 2; p = phase.Load() {
			if err := window(1); err != nil {
				return err
			}
			if p == 1 && phase.Load() == 1 {
				n++
			}
		}
		windows.Add(n)
		return window(0)
	})
	if err != nil {
		b.Fatal(err)
	}
	msgs := float64(windows.Load() * window)
	b.ReportMetric(msgs/b.Elapsed().Seconds(), "msgs/s")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/msgs, "ns/msg")
	b.ReportMetric(float64(cpu.Nanoseconds())/msgs, "cpu-ns/msg")
}

// A manyFibers contender places n fibers, n/2 pairs, on endpoints: fiber i
// registers with endpoint ep of a job of k endpoints at the given thread
// level, is rank `rank` there, and ping-pongs with rank partner on tag.
// Even fibers serve, odd ones answer.
type manyFibers interface {
	layout(n int) (level endpoint.ThreadLevel, k int, place func(i int) (ep, rank, partner, tag int))
}

// rankFibers: every fiber is a rank (k = n endpoints, ThreadSingle), and
// ranks 2i and 2i+1 are a pair, all on tag 0: the endpoints model.
type rankFibers struct{}

func (rankFibers) layout(n int) (endpoint.ThreadLevel, int, func(int) (int, int, int, int)) {
	return endpoint.ThreadSingle, n, func(i int) (ep, rank, partner, tag int) {
		return i, i, i ^ 1, 0
	}
}

// tagFibers: the n fibers share two ThreadMultiple endpoints, n/2 fibers
// registered with each; pair i is fiber i of rank 0 and fiber i of rank 1,
// and it talks on tag i: the threads-share-a-rank model of Dang et al. 2016b.
type tagFibers struct{}

func (tagFibers) layout(int) (endpoint.ThreadLevel, int, func(int) (int, int, int, int)) {
	return endpoint.ThreadMultiple, 2, func(i int) (ep, rank, partner, tag int) {
		return i & 1, i & 1, 1 - i&1, i / 2
	}
}

// runPairs builds the job of m's layout, parks every fiber at its start line
// (untimed), then runs a driver fiber that calls b.Loop: each op releases
// every pair for rounds round trips and waits until all are back. It
// returns the CPU time of the timed loop.
func runPairs(b *testing.B, m manyFibers, n, rounds int) (time.Duration, error) {
	level, k, place := m.layout(n)
	opts := endpoint.Options{MaxEndpoints: k + 1} // and the Init world's endpoint
	opts.Fiber.MaxFibersPerWorker = max(n+1, 512)
	// Each endpoint's matching table holds the keys pending at it at once:
	// one per fiber registered with it.
	opts.Match.Expected = n / k
	p, err := endpoint.Init(level, opts)
	if err != nil {
		return 0, err
	}
	eps, err := p.CreateEndpoints(k)
	if err != nil {
		return 0, errors.Join(err, p.Finalize())
	}
	var (
		starts    = make([]fiber.Event, n/2) // pair i's server waits on starts[i]; the driver signals
		parked    atomic.Int64               // Add by each fiber at its start line; the n-th signals allParked
		allParked fiber.Event
		finished  atomic.Int64 // Add by each server after its rounds; the last signals allDone
		allDone   fiber.Event
		stop      atomic.Bool // Store by the driver before the last start signals; Load by servers after them
		failed    atomic.Pointer[error]
	)
	for i := range n {
		e, rank, partner, tag := place(i)
		err := p.Scheduler().Spawn(func(f *fiber.Fiber) {
			err := func() error {
				h, err := eps[e].Register(f.Waiter())
				if err != nil {
					return err
				}
				defer h.Unregister()
				c, err := comm.New[uint64](h, h.World(), rank)
				if err != nil {
					return err
				}
				if parked.Add(1) == int64(n) {
					allParked.Signal()
				}
				if i&1 == 1 {
					return answer(c, partner, tag)
				}
				return serve(c, f, partner, tag, rounds, &starts[i/2], &stop, func() {
					if finished.Add(1) == int64(n/2) {
						allDone.Signal()
					}
				})
			}()
			if err != nil {
				failed.CompareAndSwap(nil, &err)
			}
		})
		if err != nil {
			return 0, errors.Join(err, p.Finalize())
		}
	}
	allParked.Wait(fiber.NewGoroutineWaiter())
	var cpu time.Duration
	err = p.Scheduler().Spawn(func(f *fiber.Fiber) {
		cpu0 := testenv.ProcessCPU()
		for b.Loop() {
			finished.Store(0)
			for i := range starts {
				starts[i].Signal()
			}
			f.Wait(&allDone)
			allDone.Reset()
		}
		cpu = testenv.ProcessCPU() - cpu0
		stop.Store(true)
		for i := range starts {
			starts[i].Signal()
		}
	})
	err = errors.Join(err, p.Scheduler().Wait())
	if e := failed.Load(); e != nil {
		err = errors.Join(err, *e)
	}
	return cpu, errors.Join(err, p.Finalize())
}

// serve is a pair's serving fiber: at each start signal it plays rounds
// round trips with its partner and calls done; when stop is set it sends
// the partner an empty message and returns. A failed round still calls
// done, so that the driver is not left waiting.
func serve(c *comm.Comm[uint64], f *fiber.Fiber, partner, tag, rounds int, start *fiber.Event, stop *atomic.Bool, done func()) error {
	ball := make([]uint64, 1)
	for {
		f.Wait(start)
		start.Reset()
		if stop.Load() {
			return c.Send(ball[:0], partner, tag)
		}
		err := func() error {
			for i := range rounds {
				ball[0] = uint64(i)
				if err := c.Send(ball, partner, tag); err != nil {
					return err
				}
				if _, err := c.Recv(ball, partner, tag); err != nil {
					return err
				}
				if ball[0] != uint64(i)+1 {
					return fmt.Errorf("round %d: got %d back", i, ball[0])
				}
			}
			return nil
		}()
		done()
		if err != nil {
			return err
		}
	}
}

// answer is a pair's answering fiber: it returns every ball one higher
// until an empty message says stop.
func answer(c *comm.Comm[uint64], partner, tag int) error {
	ball := make([]uint64, 1)
	for {
		st, err := c.Recv(ball, partner, tag)
		if err != nil || st.Count == 0 {
			return err
		}
		ball[0]++
		if err := c.Send(ball, partner, tag); err != nil {
			return err
		}
	}
}

// BenchmarkManyFibers runs N fibers as N/2 pairs, each pair ping-ponging
// 8-byte messages manyRounds round trips per op, all pairs at once, and
// reports ns per message (N·manyRounds messages per op). A driver fiber
// releases the pairs and waits for them; building the job and parking the
// fibers is not timed. ranks gives every fiber its own endpoint, which costs
// the endpoint's matching table (at least 32 KiB) per fiber; tags puts the
// fibers on two shared endpoints and tells pairs apart by tag.
func BenchmarkManyFibers(b *testing.B) {
	const manyRounds = 16
	impls := []struct {
		name string
		m    manyFibers
		max  int // largest N that fits in memory
	}{
		{"ranks", rankFibers{}, 100_000},
		{"tags", tagFibers{}, 1_000_000},
	}
	for _, impl := range impls {
		b.Run(impl.name, func(b *testing.B) {
			for _, n := range []int{8, 1000, 100_000, 1_000_000} {
				b.Run(fmt.Sprint(n), func(b *testing.B) {
					if n > impl.max {
						b.Skipf("%d endpoints of at least 32 KiB each do not fit in memory", n)
					}
					if n >= 100_000 && testing.Short() {
						b.Skip("large N skipped under -short")
					}
					if n >= 100_000 {
						// GC relaxed as for any 10^6-fiber program.
						defer debug.SetGCPercent(debug.SetGCPercent(400))
					}
					cpu, err := runPairs(b, impl.m, n, manyRounds)
					if err != nil {
						b.Fatal(err)
					}
					msgs := float64(b.N * n * manyRounds)
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/msgs, "ns/msg")
					b.ReportMetric(float64(cpu.Nanoseconds())/msgs, "cpu-ns/msg")
				})
			}
		})
	}
}
