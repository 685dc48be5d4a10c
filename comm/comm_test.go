package comm

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/fibermpi/fibermpi/datatype"
	"github.com/fibermpi/fibermpi/endpoint"
	"github.com/fibermpi/fibermpi/fiber"
	"github.com/fibermpi/fibermpi/internal/invariants"
	"github.com/fibermpi/fibermpi/internal/testenv"
	"github.com/fibermpi/fibermpi/rdma/inproc"
	"github.com/fibermpi/fibermpi/rdma/rdmatest"
	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// limits: all rendezvous, default, all eager (for the sizes used here).
var limits = []int{-1, 0, 8192}

func run(t *testing.T, k int, fn func(t *testing.T, opts endpoint.Options)) {
	t.Helper()
	for _, lim := range limits {
		t.Run(fmt.Sprintf("eager=%d", lim), func(t *testing.T) {
			fn(t, endpoint.Options{EagerLimit: lim, Workers: 2})
		})
	}
	t.Run("remote/eager=-1", func(t *testing.T) {
		fn(t, endpoint.Options{EagerLimit: -1, Workers: 2, Transport: rdmatest.HideLocal(inproc.New())})
	})
}

type particle struct {
	X, Y, Z float64
	ID      int32
	Alive   bool
}

func TestTypedRoundTrip(t *testing.T) {
	run(t, 2, func(t *testing.T, opts endpoint.Options) {
		want := make([]particle, 500) // 16 KiB: rendezvous at the default limit
		for i := range want {
			want[i] = particle{X: float64(i), Y: -float64(i), Z: 0.5, ID: int32(i), Alive: i%2 == 0}
		}
		err := endpoint.RunWith(endpoint.ThreadSingle, opts, 2, func(ep *endpoint.Endpoint) error {
			c, err := World[particle](ep)
			if err != nil {
				return err
			}
			if c.Rank() == 0 {
				return c.Send(want, 1, 3)
			}
			got := make([]particle, 600)
			st, err := c.Recv(got, 0, 3)
			if err != nil {
				return err
			}
			if st.Count != len(want) || st.Source != 0 || st.Tag != 3 {
				return fmt.Errorf("status %+v", st)
			}
			if d := cmp.Diff(want, got[:st.Count]); d != "" {
				return fmt.Errorf("received particles differ (-want +got):\n%s", d)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}

// TestLayoutRedBlackRow sends every other cell of a row (the red cells of
// Snir 2009's SOR) and receives them into every other cell of another row.
func TestLayoutRedBlackRow(t *testing.T) {
	run(t, 2, func(t *testing.T, opts endpoint.Options) {
		const n = 4001 // odd: 2001 red cells
		red, err := datatype.Vector((n+1)/2, 1, 2, datatype.Float32)
		if err != nil {
			t.Fatal(err)
		}
		err = endpoint.RunWith(endpoint.ThreadSingle, opts, 2, func(ep *endpoint.Endpoint) error {
			c, err := World[float32](ep)
			if err != nil {
				return err
			}
			row := make([]float32, n)
			if c.Rank() == 0 {
				for i := range row {
					row[i] = float32(i)
				}
				return c.SendLayout(row, 1, red, 1, 0)
			}
			for i := range row {
				row[i] = -1
			}
			st, err := c.RecvLayout(row, 1, red, 0, 0)
			if err != nil {
				return err
			}
			if st.Count != (n+1)/2 {
				return fmt.Errorf("received %d elements, want %d", st.Count, (n+1)/2)
			}
			for i, v := range row {
				want := float32(-1)
				if i%2 == 0 {
					want = float32(i)
				}
				if v != want {
					return fmt.Errorf("row[%d] = %v, want %v", i, v, want)
				}
			}
			// A layout of another element type is refused.
			if err := c.SendLayout(row, 1, datatype.Float64, 0, 0); !errors.Is(err, datatype.ErrElemMismatch) {
				return fmt.Errorf("float64 layout for []float32: %v", err)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}

// TestSendrecvRing shifts values round a ring of fibers with Sendrecv,
// which must not deadlock whatever the protocol.
func TestSendrecvRing(t *testing.T) {
	run(t, 5, func(t *testing.T, opts endpoint.Options) {
		const k, n = 5, 3000 // 24 KB messages: rendezvous at the default
		err := endpoint.RunWith(endpoint.ThreadSingle, opts, k, func(ep *endpoint.Endpoint) error {
			c, err := World[int64](ep)
			if err != nil {
				return err
			}
			me := c.Rank()
			out := make([]int64, n)
			for i := range out {
				out[i] = int64(me*n + i)
			}
			in := make([]int64, n)
			st, err := c.Sendrecv(out, (me+1)%k, 7, in, (me+k-1)%k, 7)
			if err != nil {
				return err
			}
			from := (me + k - 1) % k
			if st.Source != from || in[0] != int64(from*n) || in[n-1] != int64(from*n+n-1) {
				return fmt.Errorf("rank %d got %d..%d from %d", me, in[0], in[n-1], st.Source)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}

// TestRequests covers Isend/Irecv futures: WaitAll, WaitAny over two
// endpoints and two element types, Test, Probe, Cancel, and truncation.
func TestRequests(t *testing.T) {
	run(t, 3, func(t *testing.T, opts endpoint.Options) {
		err := endpoint.RunWith(endpoint.ThreadSingle, opts, 3, func(ep *endpoint.Endpoint) error {
			ci, err := World[int32](ep)
			if err != nil {
				return err
			}
			cf, err := As[float64](ci)
			if err != nil {
				return err
			}
			switch ci.Rank() {
			case 1:
				return ci.Send([]int32{1, 2, 3}, 0, 11)
			case 2:
				if err := cf.Send([]float64{4.5}, 0, 12); err != nil {
					return err
				}
				return cf.Send(make([]float64, 10), 0, 13)
			}
			bi, bf := make([]int32, 3), make([]float64, 1)
			ri, err := ci.Irecv(bi, 1, 11)
			if err != nil {
				return err
			}
			rf, err := cf.Irecv(bf, 2, 12)
			if err != nil {
				return err
			}
			idx, err := WaitAny(ri, rf)
			if err != nil || idx < 0 {
				return fmt.Errorf("WaitAny: %d %v", idx, err)
			}
			if err := WaitAll(ri, rf); err != nil {
				return err
			}
			if !TestAll(ri, rf) || bi[2] != 3 || bf[0] != 4.5 {
				return fmt.Errorf("after WaitAll: %v %v", bi, bf)
			}
			st, err := cf.Probe(2, 13)
			if err != nil || st.Count != 10 || st.Bytes != 80 {
				return fmt.Errorf("Probe: %+v %v", st, err)
			}
			short := make([]float64, 4)
			st, err = cf.Recv(short, 2, 13)
			if !errors.Is(err, endpoint.ErrTruncate) || st.Count != 4 {
				return fmt.Errorf("truncated Recv: %+v %v", st, err)
			}
			rc, _ := ci.Irecv(bi, 1, 99)
			if _, done := rc.Test(); done || !rc.Cancel() {
				return errors.New("pending receive could not be cancelled")
			}
			if _, err := rc.Wait(); !errors.Is(err, endpoint.ErrCancelled) {
				return fmt.Errorf("cancelled receive: %v", err)
			}
			var nilReq *Request[int32]
			if _, err := nilReq.Wait(); !errors.Is(err, endpoint.ErrNilRequest) {
				return fmt.Errorf("nil request: %v", err)
			}
			if err := WaitAll(ri, nilReq); !errors.Is(err, endpoint.ErrNilRequest) {
				return fmt.Errorf("WaitAll with nil: %v", err)
			}
			var nilColl *CollRequest
			if err := WaitAll(ri, nilColl); !errors.Is(err, endpoint.ErrNilRequest) {
				return fmt.Errorf("WaitAll with a nil *CollRequest: %v", err)
			}
			if err := WaitAll(ri, nil); !errors.Is(err, endpoint.ErrNilRequest) {
				return fmt.Errorf("WaitAll with a nil Waitable: %v", err)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}

// goroutineRanks starts a ThreadMultiple process with k endpoints and
// returns a typed Comm per rank for goroutines; each must be used by one
// goroutine only (registration happens in the goroutine that uses it).
func goroutineRanks(t testing.TB, k int, opts endpoint.Options) (*endpoint.Process, []*endpoint.Endpoint) {
	t.Helper()
	p, err := endpoint.Init(endpoint.ThreadMultiple, opts)
	if err != nil {
		t.Fatal(err)
	}
	eps, err := p.CreateEndpoints(k)
	if err != nil {
		t.Fatal(err)
	}
	return p, eps
}

func register[T any](t testing.TB, ep *endpoint.Endpoint) *Comm[T] {
	h, err := ep.Register(fiber.NewGoroutineWaiter())
	if err != nil {
		t.Error(err)
		return nil
	}
	c, err := World[T](h)
	if err != nil {
		t.Error(err)
	}
	return c
}

func TestDoneAndWaitContext(t *testing.T) {
	p, eps := goroutineRanks(t, 2, endpoint.Options{Workers: 1})
	defer p.Finalize()
	c0 := register[byte](t, eps[0])
	r, err := c0.Irecv(make([]byte, 4), 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	if _, err := r.WaitContext(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitContext on a pending receive: %v", err)
	}
	sent := make(chan error, 1)
	go func() {
		c1 := register[byte](t, eps[1])
		sent <- c1.Send([]byte("ping"), 0, 0)
	}()
	select {
	case <-r.Done():
	case <-time.After(time.Minute):
		t.Fatal("Done never closed")
	}
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	st, err := r.WaitContext(context.Background())
	if err != nil || st.Count != 4 {
		t.Fatalf("after Done: %+v %v", st, err)
	}
}

// allocRanks skips an allocation test where allocations are not the
// program's (-race, -tags invariants), else returns two goroutine ranks of
// one process (one worker), finalized at the test's end.
func allocRanks(t *testing.T) []*endpoint.Endpoint {
	t.Helper()
	if testenv.RaceEnabled || invariants.Enabled {
		t.Skip("the race detector and the invariants checks allocate")
	}
	p, eps := goroutineRanks(t, 2, endpoint.Options{Workers: 1})
	t.Cleanup(func() { _ = p.Finalize() })
	return eps
}

// TestZeroAllocs checks the eager contiguous Send/Recv path allocates
// nothing: a goroutine rank echoes what the test's rank sends.
func TestZeroAllocs(t *testing.T) {
	eps := allocRanks(t)
	const rounds = 200
	done := make(chan struct{})
	go func() {
		defer close(done)
		c1 := register[float64](t, eps[1])
		buf := make([]float64, 1)
		for range rounds + 1 {
			if _, err := c1.Recv(buf, 0, 0); err != nil {
				t.Error(err)
				return
			}
			if err := c1.Send(buf, 0, 0); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	c0 := register[float64](t, eps[0])
	buf := []float64{3}
	allocs := testing.AllocsPerRun(rounds, func() {
		if err := c0.Send(buf, 1, 0); err != nil {
			t.Fatal(err)
		}
		if _, err := c0.Recv(buf, 1, 0); err != nil {
			t.Fatal(err)
		}
	})
	<-done
	if allocs != 0 {
		t.Fatalf("eager Send+Recv allocates %.1f times per round trip", allocs)
	}
	// Nonblocking: an eager Isend allocates nothing, an Irecv once (its
	// request, with the endpoint's request embedded).
	allocs = testing.AllocsPerRun(rounds, func() {
		r, err := c0.Isend(buf, 0, 5) // to itself, received at once
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c0.Recv(buf, 0, 5); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Wait(); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("eager Isend+Recv+Wait allocates %.1f times", allocs)
	}
	allocs = testing.AllocsPerRun(rounds, func() {
		r, err := c0.Irecv(buf, 0, 5)
		if err != nil {
			t.Fatal(err)
		}
		if err := c0.Send(buf, 0, 5); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Wait(); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 1 {
		t.Fatalf("Irecv+Wait allocates %.1f times, want 1", allocs)
	}
	// IrecvInto and IsendInto with requests the caller reuses: nothing.
	var rq, sq Request[float64]
	allocs = testing.AllocsPerRun(rounds, func() {
		if err := c0.IrecvInto(&rq, buf, 0, 6); err != nil {
			t.Fatal(err)
		}
		if err := c0.IsendInto(&sq, buf, 0, 6); err != nil {
			t.Fatal(err)
		}
		if err := WaitAll(&rq, &sq); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("IrecvInto+IsendInto+WaitAll allocates %.1f times", allocs)
	}
	var nilReq *Request[float64]
	select {
	case <-nilReq.Done():
	default:
		t.Fatal("a nil request's Done channel is not closed")
	}
}

// TestManyFiberPairs: 10^5 fibers (fewer under -race or -short), each a
// rank, each pair exchanging messages.
func TestManyFiberPairs(t *testing.T) {
	k := min(100_000, testenv.MaxGoroutines())
	if testing.Short() {
		k = min(k, 2000)
	}
	const rounds = 3
	err := endpoint.RunWith(endpoint.ThreadSingle, endpoint.Options{Workers: 2}, k, func(ep *endpoint.Endpoint) error {
		c, err := World[int64](ep)
		if err != nil {
			return err
		}
		me := c.Rank()
		peer := me ^ 1
		buf := []int64{0}
		for r := range rounds {
			if me%2 == 0 {
				buf[0] = int64(me*rounds + r)
				if err := c.Send(buf, peer, r); err != nil {
					return err
				}
				if _, err := c.Recv(buf, peer, r); err != nil {
					return err
				}
				if buf[0] != int64(me*rounds+r)+1 {
					return fmt.Errorf("rank %d round %d: got %d", me, r, buf[0])
				}
			} else {
				if _, err := c.Recv(buf, peer, r); err != nil {
					return err
				}
				buf[0]++
				if err := c.Send(buf, peer, r); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestThreadMultipleGoroutines: many goroutines share one ThreadMultiple
// endpoint, each with its own registration, talking to another.
func TestThreadMultipleGoroutines(t *testing.T) {
	p, eps := goroutineRanks(t, 2, endpoint.Options{Workers: 1})
	defer p.Finalize()
	const g, per = 8, 50
	var wg sync.WaitGroup
	for i := range g {
		wg.Go(func() {
			c := register[int](t, eps[0])
			for j := range per {
				if err := c.Send([]int{i*per + j}, 1, i); err != nil {
					t.Error(err)
					return
				}
			}
		})
		wg.Go(func() {
			c := register[int](t, eps[1])
			buf := []int{0}
			for j := range per {
				if _, err := c.Recv(buf, 0, i); err != nil {
					t.Error(err)
					return
				}
				if buf[0] != i*per+j {
					t.Errorf("tag %d: got %d, want %d (order)", i, buf[0], i*per+j)
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestBadConstruction(t *testing.T) {
	p, eps := goroutineRanks(t, 2, endpoint.Options{Workers: 1})
	defer p.Finalize()
	if _, err := World[int](eps[0]); !errors.Is(err, endpoint.ErrNotRegistered) {
		t.Errorf("World on an unregistered endpoint: %v", err)
	}
	h, _ := eps[0].Register(fiber.NewGoroutineWaiter())
	if _, err := World[string](h); !errors.Is(err, datatype.ErrUnsupported) {
		t.Errorf("World[string]: %v", err)
	}
	if _, err := New[int](h, h.World(), 5); !errors.Is(err, endpoint.ErrRank) {
		t.Errorf("New with rank 5 of 2: %v", err)
	}
}

// TestRequestReuse runs windows of IrecvInto/IsendInto over the same
// requests, every eager limit, and checks every message and status; then
// the bad uses: a pending request, a nil one, a failed start.
func TestRequestReuse(t *testing.T) {
	const window, windows = 16, 50
	run(t, 2, func(t *testing.T, opts endpoint.Options) {
		err := endpoint.RunWith(endpoint.ThreadSingle, opts, 2, func(ep *endpoint.Endpoint) error {
			c, err := World[int64](ep)
			if err != nil {
				return err
			}
			var reqs [window]Request[int64]
			ws := make([]Waitable, window)
			bufs := make([][]int64, window)
			for i := range bufs {
				bufs[i] = make([]int64, 1+i*200) // up to 24 KiB: both protocols at the default limit
				ws[i] = &reqs[i]
			}
			for k := range int64(windows) {
				for i, buf := range bufs {
					if c.Rank() == 0 {
						for j := range buf {
							buf[j] = k*1000 + int64(i+j)
						}
						err = c.IsendInto(&reqs[i], buf, 1, i)
					} else {
						clear(buf)
						err = c.IrecvInto(&reqs[i], buf, 0, i)
					}
					if err != nil {
						return fmt.Errorf("window %d, request %d: %w", k, i, err)
					}
				}
				if err := WaitAll(ws...); err != nil {
					return err
				}
				if c.Rank() == 0 {
					continue
				}
				for i, buf := range bufs {
					st, ok := reqs[i].Test()
					if !ok || st.Count != len(buf) || st.Source != 0 || st.Tag != i {
						return fmt.Errorf("window %d, request %d: status %+v, %v", k, i, st, ok)
					}
					for j, v := range buf {
						if v != k*1000+int64(i+j) {
							return fmt.Errorf("window %d, request %d: element %d is %d", k, i, j, v)
						}
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})

	p, eps := goroutineRanks(t, 2, endpoint.Options{Workers: 1})
	defer p.Finalize()
	c0 := register[byte](t, eps[0])
	var q Request[byte]
	buf := make([]byte, 4)
	if err := c0.IrecvInto(nil, buf, 1, 0); !errors.Is(err, endpoint.ErrNilRequest) {
		t.Fatalf("IrecvInto(nil): %v", err)
	}
	if err := c0.IrecvInto(&q, buf, 5, 0); !errors.Is(err, endpoint.ErrRank) {
		t.Fatalf("IrecvInto from rank 5 of 2: %v", err)
	}
	if err := c0.IrecvInto(&q, buf, 1, 0); err != nil { // the failed start left q reusable
		t.Fatalf("IrecvInto after a failed start: %v", err)
	}
	done := q.Done() // taken before the message arrives
	if err := c0.IrecvInto(&q, buf, 1, 1); !errors.Is(err, endpoint.ErrRequestActive) {
		t.Fatalf("IrecvInto on a pending request: %v", err)
	}
	if err := c0.IsendInto(&q, buf, 1, 1); !errors.Is(err, endpoint.ErrRequestActive) {
		t.Fatalf("IsendInto on a pending request: %v", err)
	}
	c1 := register[byte](t, eps[1])
	for i := range byte(2) {
		if err := c1.Send([]byte{i, 1, 2, 3}, 0, int(i)); err != nil {
			t.Fatal(err)
		}
	}
	<-done
	if st, err := q.Wait(); err != nil || st.Tag != 0 || buf[0] != 0 {
		t.Fatalf("the pending receive: %+v %v, buf %v", st, err, buf)
	}
	// Reused after Done was taken: the new request's channel is its own.
	if err := c0.IrecvInto(&q, buf, 1, 1); err != nil {
		t.Fatal(err)
	}
	<-q.Done()
	if st, err := q.Wait(); err != nil || st.Tag != 1 || buf[0] != 1 {
		t.Fatalf("the reused receive: %+v %v, buf %v", st, err, buf)
	}
}

// TestRequestReuseDone reuses one receive request as fast as it completes,
// taking its Done channel each time, while another goroutine sends: a
// completion still finishing when the request is reused must not close the
// next receive's channel early (nor race, under -race).
func TestRequestReuseDone(t *testing.T) {
	const rounds = 2000
	p, eps := goroutineRanks(t, 2, endpoint.Options{Workers: 1})
	defer p.Finalize()
	sent := make(chan error, 1)
	go func() {
		c1 := register[int32](t, eps[1])
		for i := range int32(rounds) {
			if err := c1.Send([]int32{i}, 0, 0); err != nil {
				sent <- err
				return
			}
		}
		sent <- nil
	}()
	c0 := register[int32](t, eps[0])
	var q Request[int32]
	buf := make([]int32, 1)
	for i := range int32(rounds) {
		if err := c0.IrecvInto(&q, buf, 1, 0); err != nil {
			t.Fatal(err)
		}
		<-q.Done()
		st, ok := q.Test()
		if !ok {
			t.Fatalf("round %d: Done closed before the receive completed", i)
		}
		if st.Err != nil || buf[0] != i {
			t.Fatalf("round %d: %+v, got %d", i, st, buf[0])
		}
	}
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
}

// TestBlockingByMessagesAllocatesNothing: a blocking Barrier or small
// Allreduce by messages reuses its communicator's schedule, its transfers
// and its requests (sched.release; coll_now.go runs them on the caller's
// stack): once a communicator has run one, the next allocate nothing, at
// either rank.
func TestBlockingByMessagesAllocatesNothing(t *testing.T) {
	sum := Sum[float64]()
	send := []float64{1, 2} // only read
	for _, tc := range []struct {
		name string
		call func(c *Comm[float64], recv []float64) error
	}{
		{"Barrier", func(c *Comm[float64], _ []float64) error { return c.Barrier() }},
		{"Allreduce", func(c *Comm[float64], recv []float64) error { return c.Allreduce(send, recv, sum) }},
		{"Bcast", func(c *Comm[float64], recv []float64) error { return c.Bcast(recv, 1) }},
		{"Reduce", func(c *Comm[float64], recv []float64) error { return c.Reduce(send, recv, sum, 0) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eps := allocRanks(t)
			const rounds = 100
			done := make(chan error, 1)
			go func() {
				c1 := register[float64](t, eps[1])
				usePath(c1, CollMessages)
				recv := make([]float64, len(send))
				for range rounds + 2 { // the warm-up, AllocsPerRun's own, the rounds
					if err := tc.call(c1, recv); err != nil {
						done <- err
						return
					}
				}
				done <- nil
			}()
			c0 := register[float64](t, eps[0])
			usePath(c0, CollMessages)
			recv := make([]float64, len(send))
			if err := tc.call(c0, recv); err != nil {
				t.Fatal(err)
			}
			allocs := testing.AllocsPerRun(rounds, func() {
				if err := tc.call(c0, recv); err != nil {
					t.Fatal(err)
				}
			})
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if allocs != 0 {
				t.Fatalf("a blocking %s by messages allocates %.1f times", tc.name, allocs)
			}
		})
	}
}

// TestReleasedScheduleHoldsNoLargeBuffer: after a collective whose
// vectors exceed arenaKeep the communicator keeps its schedule, but
// neither the requests that still point at the caller's buffers nor the
// large arena; after a barrier it keeps its requests for the next.
func TestReleasedScheduleHoldsNoLargeBuffer(t *testing.T) {
	p, eps := goroutineRanks(t, 2, endpoint.Options{Workers: 1})
	defer p.Finalize()
	const n = 2 * arenaKeep / 8 // float64s: twice arenaKeep bytes
	done := make(chan error, 1)
	go func() {
		c1 := register[float64](t, eps[1])
		usePath(c1, CollMessages)
		buf := make([]float64, n)
		err := c1.Allreduce(buf, buf, Sum[float64]())
		if err == nil {
			err = c1.Barrier()
		}
		done <- err
	}()
	c0 := register[float64](t, eps[0])
	usePath(c0, CollMessages)
	buf := make([]float64, n)
	if err := c0.Allreduce(buf, buf, Sum[float64]()); err != nil {
		t.Fatal(err)
	}
	free := c0.st().coll.free
	switch {
	case free == nil:
		t.Fatal("the allreduce's schedule was not kept")
	case free.rq != nil:
		t.Errorf("after a %d-byte allreduce the kept schedule holds %d requests (and their buffers)", 8*n, len(free.rq))
	case len(free.arena)*8 > arenaKeep:
		t.Errorf("the kept schedule holds a %d-byte arena, more than %d", len(free.arena)*8, arenaKeep)
	}
	if err := c0.Barrier(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if free := c0.st().coll.free; free == nil || len(free.rq) == 0 {
		t.Error("after a barrier the kept schedule has no requests to reuse")
	}
}
