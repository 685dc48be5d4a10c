package endpoint

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/fibermpi/fibermpi/fiber"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// eagerLimits runs every protocol test all-rendezvous (-1), with the
// default, and all-eager for the sizes used (the full payload).
var eagerLimits = []int{-1, 0, 8192}

func forEachLimit(t *testing.T, fn func(t *testing.T, opts Options)) {
	for _, lim := range eagerLimits {
		t.Run(fmt.Sprintf("eager=%d", lim), func(t *testing.T) {
			fn(t, Options{EagerLimit: lim, Workers: 2})
		})
	}
}

// newJob starts a process at level with k endpoints, not yet registered;
// the caller finalizes it.
func newJob(t testing.TB, level ThreadLevel, opts Options, k int) (*Process, []*Endpoint) {
	t.Helper()
	p, err := Init(level, opts)
	if err != nil {
		t.Fatal(err)
	}
	eps, err := p.CreateEndpoints(k)
	if err != nil {
		p.Finalize()
		t.Fatal(err)
	}
	return p, eps
}

func pattern(n, seed int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + seed)
	}
	return b
}

func TestPingPong(t *testing.T) {
	forEachLimit(t, func(t *testing.T, opts Options) {
		sizes := []int{0, 1, 8, 1000, 8192, 8193, 100_000}
		err := RunWith(ThreadSingle, opts, 2, func(ep *Endpoint) error {
			w := ep.World()
			me, peer := ep.Rank(), 1-ep.Rank()
			for i, n := range sizes {
				if me == 0 {
					if err := ep.Send(w, me, peer, i, pattern(n, i)); err != nil {
						return err
					}
					buf := make([]byte, n)
					st, err := ep.Recv(w, peer, i, buf)
					if err != nil {
						return err
					}
					if st.Count != n || st.Source != int32(peer) || st.Tag != int32(i) {
						return fmt.Errorf("size %d: status %+v", n, st)
					}
					if !bytes.Equal(buf, pattern(n, i+1)) {
						return fmt.Errorf("size %d: echo differs", n)
					}
				} else {
					buf := make([]byte, n)
					if _, err := ep.Recv(w, peer, i, buf); err != nil {
						return err
					}
					if !bytes.Equal(buf, pattern(n, i)) {
						return fmt.Errorf("size %d: data differs", n)
					}
					if err := ep.Send(w, me, peer, i, pattern(n, i+1)); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}

// TestOrderAndWildcards sends many messages from several ranks to rank 0,
// which receives them with wildcards: per (source, tag) they must arrive in
// the order sent.
func TestOrderAndWildcards(t *testing.T) {
	forEachLimit(t, func(t *testing.T, opts Options) {
		const ranks, per = 4, 50
		err := RunWith(ThreadSingle, opts, ranks, func(ep *Endpoint) error {
			w := ep.World()
			me := ep.Rank()
			if me != 0 {
				reqs := make([]*Request, 0, per)
				for i := range per {
					msg := fmt.Appendf(nil, "%d:%d", me, i)
					if i%7 == 0 {
						msg = append(msg, make([]byte, 9000)...) // rendezvous-sized
					}
					r, err := ep.Isend(w, me, 0, i%3, msg)
					if err != nil {
						return err
					}
					reqs = append(reqs, r)
				}
				return WaitAll(ep.Waiter(), reqs...)
			}
			next := make(map[int]int) // source → next index expected
			for range (ranks - 1) * per {
				buf := make([]byte, 10_000)
				st, err := ep.Recv(w, AnySource, AnyTag, buf)
				if err != nil {
					return err
				}
				var src, idx int
				if _, err := fmt.Sscanf(string(bytes.TrimRight(buf[:min(st.Count, 16)], "\x00")), "%d:%d", &src, &idx); err != nil {
					return fmt.Errorf("parse %q: %v", buf[:min(st.Count, 16)], err)
				}
				if src != int(st.Source) || idx%3 != int(st.Tag) {
					return fmt.Errorf("status %+v for message %d:%d", st, src, idx)
				}
				if idx != next[src] {
					return fmt.Errorf("from %d got message %d, want %d (overtaken)", src, idx, next[src])
				}
				next[src]++
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}

func TestTruncation(t *testing.T) {
	forEachLimit(t, func(t *testing.T, opts Options) {
		err := RunWith(ThreadSingle, opts, 2, func(ep *Endpoint) error {
			w := ep.World()
			if ep.Rank() == 0 {
				if err := ep.Send(w, 0, 1, 5, pattern(100, 1)); err != nil {
					return err
				}
				return ep.Send(w, 0, 1, 6, []byte("after"))
			}
			buf := make([]byte, 10)
			st, err := ep.Recv(w, 0, 5, buf)
			var te *TruncateError
			if !errors.As(err, &te) || !errors.Is(err, ErrTruncate) || te.Have != 10 || te.Got != 100 {
				return fmt.Errorf("Recv into short buffer: %v, want TruncateError{10, 100}", err)
			}
			if st.Count != 10 || !bytes.Equal(buf, pattern(100, 1)[:10]) {
				return fmt.Errorf("truncated receive holds %v (count %d)", buf, st.Count)
			}
			// The truncated message was consumed; the next one is intact.
			buf = make([]byte, 5)
			if _, err := ep.Recv(w, 0, 6, buf); err != nil || string(buf) != "after" {
				return fmt.Errorf("next message: %q, %v", buf, err)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}

func TestBadInput(t *testing.T) {
	err := Run(2, func(ep *Endpoint) error {
		w := ep.World()
		checks := []struct {
			name string
			err  error
			want error
		}{
			{"send to rank 2", ep.Send(w, ep.Rank(), 2, 0, nil), ErrRank},
			{"send to rank -1", ep.Send(w, ep.Rank(), -1, 0, nil), ErrRank},
			{"negative tag", ep.Send(w, ep.Rank(), 0, -3, nil), ErrTag},
			{"tag too big", ep.Send(w, ep.Rank(), 0, MaxTag+1, nil), ErrTag},
			{"AnyTag on send", ep.Send(w, ep.Rank(), 0, AnyTag, nil), ErrTag},
			{"wait nil", ep.Wait(nil), ErrNilRequest},
		}
		_, err := ep.Recv(w, 7, 0, nil)
		checks = append(checks, struct {
			name string
			err  error
			want error
		}{"recv from rank 7", err, ErrRank})
		for _, c := range checks {
			if !errors.Is(c.err, c.want) {
				return fmt.Errorf("%s: %v, want %v", c.name, c.err, c.want)
			}
		}
		// A second registration at ThreadSingle is refused.
		if _, err := ep.Register(fiber.NewGoroutineWaiter()); !errors.Is(err, ErrThreadLevel) {
			return fmt.Errorf("second Register at ThreadSingle: %v", err)
		}
		// The endpoint still works after all that.
		peer := 1 - ep.Rank()
		if err := ep.Send(w, ep.Rank(), peer, 1, []byte{byte(ep.Rank())}); err != nil {
			return err
		}
		buf := make([]byte, 1)
		if _, err := ep.Recv(w, peer, 1, buf); err != nil || buf[0] != byte(peer) {
			return fmt.Errorf("after bad input: %v %v", buf, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestUnregisteredAndFinalized(t *testing.T) {
	p, eps := newJob(t, ThreadMultiple, Options{Workers: 1}, 2)
	w := eps[0].World()
	if err := eps[0].Send(w, 0, 1, 0, nil); !errors.Is(err, ErrNotRegistered) {
		t.Fatalf("send on unregistered handle: %v", err)
	}
	a, err := eps[0].Register(fiber.NewGoroutineWaiter())
	if err != nil {
		t.Fatal(err)
	}
	b, err := eps[1].Register(fiber.NewGoroutineWaiter())
	if err != nil {
		t.Fatal(err)
	}
	// Goroutines, not fibers: a pending receive, then its message.
	r, err := b.Irecv(w, 0, 9, make([]byte, 3))
	if err != nil {
		t.Fatal(err)
	}
	if r.Test() {
		t.Fatal("receive complete before any send")
	}
	if err := a.Send(w, 0, 1, 9, []byte("abc")); err != nil {
		t.Fatal(err)
	}
	if err := b.Wait(r); err != nil || string(r.buf) != "abc" {
		t.Fatalf("receive: %q %v", r.buf, err)
	}
	// Cancel a receive nobody sends to.
	r2, _ := b.Irecv(w, 0, 10, make([]byte, 3))
	if !r2.Cancel() || !errors.Is(b.Wait(r2), ErrCancelled) || r2.Cancel() {
		t.Fatal("cancel of a pending receive failed")
	}
	if err := a.Unregister(); err != nil {
		t.Fatal(err)
	}
	if err := a.Send(w, 0, 1, 0, nil); !errors.Is(err, ErrNotRegistered) {
		t.Fatalf("send after Unregister: %v", err)
	}
	if err := p.Finalize(); err != nil {
		t.Fatal(err)
	}
	if err := b.Send(w, 1, 0, 0, nil); !errors.Is(err, ErrFinalized) {
		t.Fatalf("send after Finalize: %v", err)
	}
	if err := p.Finalize(); !errors.Is(err, ErrFinalized) {
		t.Fatalf("second Finalize: %v", err)
	}
}

// TestFig2NoDeadlock is Gropp and Thakur 2007 Fig. 2: two processes, two threads each;
// on each process one thread receives from the other process and then the
// other thread sends to it. With a blocking receive that held a lock, one
// thread order deadlocks; here every order must finish. Each process is
// one ThreadMultiple endpoint used by two goroutines.
func TestFig2NoDeadlock(t *testing.T) {
	for order := range 4 {
		p, eps := newJob(t, ThreadMultiple, Options{Workers: 1}, 2)
		w := eps[0].World()
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		for proc := range 2 {
			recvFirst := (order>>proc)&1 == 0
			recvT := func() {
				defer wg.Done()
				h, err := eps[proc].Register(fiber.NewGoroutineWaiter())
				if err != nil {
					errs <- err
					return
				}
				buf := make([]byte, 1)
				_, err = h.Recv(w, 1-proc, 0, buf)
				errs <- err
			}
			sendT := func() {
				defer wg.Done()
				h, err := eps[proc].Register(fiber.NewGoroutineWaiter())
				if err != nil {
					errs <- err
					return
				}
				errs <- h.Send(w, proc, 1-proc, 0, []byte{1})
			}
			wg.Add(2)
			if recvFirst {
				go recvT()
				go sendT()
			} else {
				go sendT()
				go recvT()
			}
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("order %d: %v", order, err)
			}
		}
		if err := p.Finalize(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestMaxEndpoints(t *testing.T) {
	p, err := Init(ThreadSingle, Options{Workers: 1, MaxEndpoints: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Finalize()
	if p.MaxEndpoints() != 3 {
		t.Fatalf("MaxEndpoints() = %d", p.MaxEndpoints())
	}
	if _, err := p.CreateEndpoints(2); err != nil {
		t.Fatal(err)
	}
	if _, err := p.CreateEndpoints(2); !errors.Is(err, ErrEndpoints) {
		t.Fatalf("CreateEndpoints past MaxEndpoints: %v", err)
	}
	if _, err := p.CreateEndpoints(1); err != nil {
		t.Fatalf("the last allowed endpoint: %v", err)
	}
	if _, err := p.CreateEndpoints(0); !errors.Is(err, ErrEndpoints) {
		t.Fatalf("CreateEndpoints(0): %v", err)
	}
}

// TestCallerRequests: IsendInto and IrecvInto use the caller's requests
// (rendezvous) or none at all (sends complete on return).
func TestCallerRequests(t *testing.T) {
	forEachLimit(t, func(t *testing.T, opts Options) {
		err := RunWith(ThreadSingle, opts, 2, func(ep *Endpoint) error {
			w := ep.World()
			if ep.Rank() == 0 {
				var mine Request
				r, err := ep.IsendInto(&mine, w, 0, 1, 3, pattern(9000, 3))
				if err != nil {
					return err
				}
				// An eager send, or one that found its receive posted in
				// this process, is complete at once and needs no request.
				if r != &mine && !r.Test() || r == &mine && ep.isEager(make([]byte, 9000), false) {
					return fmt.Errorf("IsendInto returned %p (complete: %v), own request %p", r, r.Test(), &mine)
				}
				return ep.Wait(r)
			}
			var mine Request
			buf := make([]byte, 9000)
			if err := ep.IrecvInto(&mine, w, 0, 3, buf); err != nil {
				return err
			}
			if err := ep.Wait(&mine); err != nil || !bytes.Equal(buf, pattern(9000, 3)) {
				return fmt.Errorf("IrecvInto: %v", err)
			}
			if err := ep.IrecvInto(nil, w, 0, 3, buf); !errors.Is(err, ErrNilRequest) {
				return fmt.Errorf("IrecvInto(nil): %v", err)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}

// TestRunGoroutines runs ranks on plain goroutines and reports each rank's
// error with its rank.
func TestRunGoroutines(t *testing.T) {
	err := RunGoroutinesWith(ThreadSingle, Options{Workers: 1}, 3, func(ep *Endpoint) error {
		if ep.Waiter().Fiber() != nil {
			return errors.New("a goroutine rank has a fiber waiter")
		}
		return pingPongAll(ep)
	})
	if err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err = RunGoroutinesWith(ThreadSingle, Options{Workers: 1}, 3, func(ep *Endpoint) error {
		if ep.Rank() == 2 {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "rank 2") {
		t.Fatalf("RunGoroutines error = %v, want boom from rank 2", err)
	}
}

// pingPongAll has rank 0 exchange one message with every other rank.
func pingPongAll(ep *Endpoint) error {
	w := ep.World()
	buf := make([]byte, 1)
	if ep.Rank() != 0 {
		if _, err := ep.Recv(w, 0, 0, buf); err != nil {
			return err
		}
		return ep.Send(w, ep.Rank(), 0, 0, buf)
	}
	for r := 1; r < ep.Size(); r++ {
		if err := ep.Send(w, 0, r, 0, []byte{byte(r)}); err != nil {
			return err
		}
		if _, err := ep.Recv(w, r, 0, buf); err != nil || buf[0] != byte(r) {
			return fmt.Errorf("echo from %d: %v %v", r, buf, err)
		}
	}
	return nil
}
