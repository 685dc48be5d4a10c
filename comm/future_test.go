package comm

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/fibermpi/fibermpi/endpoint"
)

// TestCollDoneSelect: a goroutine rank selects on a nonblocking
// Allreduce's Done channel without calling anything else: the collective
// completes on its own (its progress goroutine), at every size and in
// every rank mode, with the right sum; Test and Wait then agree, and a
// second Done is the same channel.
func TestCollDoneSelect(t *testing.T) {
	for _, m := range rankModes {
		for _, k := range []int{1, 2, 3, 5, 8} {
			t.Run(fmt.Sprintf("%s/p=%d", m.name, k), func(t *testing.T) {
				err := m.run(k, func(ep *endpoint.Endpoint) error {
					c, err := World[int](ep)
					if err != nil {
						return err
					}
					send := make([]int, 3000) // several packets: rendezvous in some modes
					for i := range send {
						send[i] = c.Rank() + i
					}
					recv := make([]int, len(send))
					q, err := c.Iallreduce(send, recv, Sum[int]())
					if err != nil {
						return err
					}
					if ep.Waiter().Fiber() != nil {
						// A fiber waits its way; Done still works for a
						// goroutine that watches it.
						ch := q.Done()
						if err := q.Wait(); err != nil {
							return err
						}
						<-ch // closed already: Wait returned after the end
					} else {
						select {
						case <-q.Done():
						case <-time.After(time.Minute):
							return errors.New("Allreduce's Done not closed after a minute")
						}
					}
					if d := q.Done(); d != q.Done() {
						return errors.New("Done returned different channels")
					}
					if ok, err := q.Test(); !ok || err != nil {
						return fmt.Errorf("Test after Done: %v %v", ok, err)
					}
					if err := q.Wait(); err != nil {
						return err
					}
					for i, v := range recv {
						if want := k*(k-1)/2 + k*i; v != want {
							return fmt.Errorf("recv[%d] = %d, want %d", i, v, want)
						}
					}
					// The communicator goes on working after the handoff.
					return c.Barrier()
				})
				if err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// TestWaitMixed: WaitAny and WaitAll over a point-to-point receive and a
// nonblocking collective (handed over or not), WaitAllContext with a
// context that ends, and WaitAll's per-request errors.
func TestWaitMixed(t *testing.T) {
	for _, handed := range []bool{false, true} {
		t.Run(fmt.Sprintf("handed=%v", handed), func(t *testing.T) {
			err := runGoroutines(3, endpoint.Options{}, func(ep *endpoint.Endpoint) error {
				c, err := World[int](ep)
				if err != nil {
					return err
				}
				buf := make([]int, 1)
				rr, err := c.Irecv(buf, (c.Rank()+2)%3, 7)
				if err != nil {
					return err
				}
				sum := make([]int, 1)
				q, err := c.Iallreduce([]int{c.Rank() + 1}, sum, Sum[int]())
				if err != nil {
					return err
				}
				if handed {
					q.Done()
				}
				// The message comes only after the collective, so the
				// first to complete is the collective.
				if i, err := WaitAny(rr, q); i != 1 || err != nil {
					return fmt.Errorf("WaitAny = %d, %v, want 1 (the collective)", i, err)
				}
				if sum[0] != 6 {
					return fmt.Errorf("sum = %d", sum[0])
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
				defer cancel()
				if err := WaitAllContext(ctx, rr, q); !errors.Is(err, context.DeadlineExceeded) {
					return fmt.Errorf("WaitAllContext before the send: %v", err)
				}
				if err := c.Barrier(); err != nil { // nobody sends before all have timed out
					return err
				}
				if err := c.Send([]int{c.Rank()}, (c.Rank()+1)%3, 7); err != nil {
					return err
				}
				if err := WaitAll(q, rr); err != nil {
					return err
				}
				if buf[0] != (c.Rank()+2)%3 {
					return fmt.Errorf("received %d", buf[0])
				}
				// Per-request errors: a truncated receive among good ones.
				if err := c.Send([]int{1, 2}, (c.Rank()+1)%3, 8); err != nil {
					return err
				}
				short := make([]int, 1)
				bad, err := c.Irecv(short, (c.Rank()+2)%3, 8)
				if err != nil {
					return err
				}
				q2, err := c.Ibarrier()
				if err != nil {
					return err
				}
				err = WaitAll(q2, bad)
				var we *WaitError
				if !errors.As(err, &we) || len(we.Errs) != 2 || we.Errs[0] != nil || !errors.Is(we.Errs[1], ErrTruncate) {
					return fmt.Errorf("WaitAll with a truncated receive: %v", err)
				}
				var te *TruncateError
				if !errors.Is(err, ErrTruncate) || !errors.As(err, &te) || te.Got != 16 {
					return fmt.Errorf("WaitError does not unwrap to the TruncateError: %v", err)
				}
				// Again, now that both are complete: point-to-point
				// requests all complete take WaitAll's one-pass path,
				// which must say the same.
				sent, err := c.Isend([]int{7}, (c.Rank()+1)%3, 9)
				if err != nil {
					return err
				}
				err = WaitAll(sent, bad)
				if !errors.As(err, &we) || len(we.Errs) != 2 || we.Errs[0] != nil || !errors.Is(we.Errs[1], ErrTruncate) {
					return fmt.Errorf("WaitAll of complete requests with a truncated receive: %v", err)
				}
				if _, err := c.Recv(short, (c.Rank()+2)%3, 9); err != nil {
					return err
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestCollWaitContext: a collective that one rank joins late times out at
// the others with the context's error, stays pending, and completes when
// waited for again.
func TestCollWaitContext(t *testing.T) {
	for _, m := range rankModes {
		t.Run(m.name, func(t *testing.T) {
			err := m.run(3, func(ep *endpoint.Endpoint) error {
				c, err := World[int](ep)
				if err != nil {
					return err
				}
				if c.Rank() == 2 {
					// Joins once both others have timed out.
					for range 2 {
						if _, err := c.Recv(nil, AnySource, 1); err != nil {
							return err
						}
					}
				}
				q, err := c.Ibarrier()
				if err != nil {
					return err
				}
				if c.Rank() != 2 {
					ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
					err := q.WaitContext(ctx)
					cancel()
					if !errors.Is(err, context.DeadlineExceeded) {
						return fmt.Errorf("WaitContext before rank 2 joined: %v", err)
					}
					if ok, _ := q.Test(); ok {
						return errors.New("barrier complete without rank 2")
					}
					if err := c.Send(nil, 2, 1); err != nil {
						return err
					}
				}
				return q.WaitContext(context.Background())
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestCommProcNull: a ring exchange in which the ends have ProcNull
// neighbours runs the same code at every rank.
func TestCommProcNull(t *testing.T) {
	err := endpoint.Run(4, func(ep *endpoint.Endpoint) error {
		c, err := World[float64](ep)
		if err != nil {
			return err
		}
		left, right := c.Rank()-1, c.Rank()+1
		if left < 0 {
			left = ProcNull
		}
		if right >= c.Size() {
			right = ProcNull
		}
		got := []float64{-1}
		st, err := c.Sendrecv([]float64{float64(c.Rank())}, right, 0, got, left, 0)
		if err != nil {
			return err
		}
		if left == ProcNull {
			if st.Source != ProcNull || st.Tag != AnyTag || st.Count != 0 || got[0] != -1 {
				return fmt.Errorf("from ProcNull: %+v, %v", st, got)
			}
			return nil
		}
		if st.Source != left || got[0] != float64(left) {
			return fmt.Errorf("from %d: %+v, %v", left, st, got)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
