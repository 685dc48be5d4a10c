package endpoint

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/fibermpi/fibermpi/fiber"
)

// payload is message i's content: its size crosses the eager limit for
// some i, so both protocols are held and received.
func payload(i int) []byte {
	n := []int{0, 1, 100, 8 << 10, 8<<10 + 1, 64 << 10}[i%6]
	b := make([]byte, n)
	for j := range b {
		b[j] = byte(i + j)
	}
	return b
}

// TestMprobe: Mprobe with wildcards and exact keys gets each message once,
// in order, eager and rendezvous, on fibers and goroutines; Mrecv into the
// size it reported gets the data; a second Mrecv fails; a short buffer
// truncates as Recv does.
func TestMprobe(t *testing.T) {
	for _, run := range []struct {
		name string
		fn   func(ThreadLevel, Options, int, func(*Endpoint) error) error
	}{{"fibers", RunWith}, {"goroutines", RunGoroutinesWith}} {
		t.Run(run.name, func(t *testing.T) {
			const n = 12
			err := run.fn(ThreadSingle, Options{}, 2, func(ep *Endpoint) error {
				w := ep.World()
				if ep.Rank() == 1 {
					for i := range n {
						if err := ep.Send(w, 1, 0, i, payload(i)); err != nil {
							return err
						}
					}
					return nil
				}
				for i := range n {
					src, tag := AnySource, AnyTag
					if i%2 == 1 {
						src, tag = 1, i
					}
					m, err := ep.Mprobe(w, src, tag)
					if err != nil {
						return err
					}
					st := m.Status()
					want := payload(i)
					if st.Source != 1 || int(st.Tag) != i || st.Count != len(want) {
						return fmt.Errorf("message %d: status %+v, want source 1 tag %d count %d", i, st, i, len(want))
					}
					if i == n-1 { // truncated, as Recv would be
						buf := make([]byte, 3)
						_, err := ep.Mrecv(m, buf)
						var te *TruncateError
						if !errors.As(err, &te) || te.Got != len(want) || !bytes.Equal(buf, want[:3]) {
							return fmt.Errorf("short Mrecv: %v, %v", err, buf)
						}
						continue
					}
					buf := make([]byte, st.Count)
					rst, err := ep.Mrecv(m, buf)
					if err != nil || rst.Count != len(want) || rst.Tag != int32(i) || !bytes.Equal(buf, want) {
						return fmt.Errorf("Mrecv %d: %+v %v, data equal %v", i, rst, err, bytes.Equal(buf, want))
					}
					if _, err := ep.Mrecv(m, buf); !errors.Is(err, ErrMessageUsed) {
						return fmt.Errorf("second Mrecv: %v, want ErrMessageUsed", err)
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestImprobe: Improbe finds nothing and changes nothing when no message
// matches (a later Recv still gets the message); it finds a message once
// sent; ProcNull gives a message that receives nothing.
func TestImprobe(t *testing.T) {
	err := RunWith(ThreadSingle, Options{}, 2, func(ep *Endpoint) error {
		w := ep.World()
		if ep.Rank() == 1 {
			if _, err := ep.Recv(w, 0, 9, nil); err != nil { // go-ahead
				return err
			}
			if err := ep.Send(w, 1, 0, 1, []byte("one")); err != nil {
				return err
			}
			return ep.Send(w, 1, 0, 2, []byte("two"))
		}
		if m, ok, err := ep.Improbe(w, AnySource, AnyTag); ok || err != nil || m != nil {
			return fmt.Errorf("Improbe before any send: %v %v %v", m, ok, err)
		}
		if err := ep.Send(w, 0, 1, 9, nil); err != nil {
			return err
		}
		var m *Message
		for {
			var ok bool
			var err error
			if m, ok, err = ep.Improbe(w, 1, 2); err != nil {
				return err
			}
			if ok {
				break
			}
			ep.Waiter().Fiber().Yield()
		}
		// Tag 1 came first but was not asked for: an ordinary Recv gets it.
		buf := make([]byte, 3)
		if _, err := ep.Recv(w, 1, AnyTag, buf); err != nil || string(buf) != "one" {
			return fmt.Errorf("Recv after Improbe of tag 2: %q %v", buf, err)
		}
		if _, err := ep.Mrecv(m, buf); err != nil || string(buf) != "two" {
			return fmt.Errorf("Mrecv: %q %v", buf, err)
		}
		null, ok, err := ep.Improbe(w, ProcNull, AnyTag)
		if !ok || err != nil {
			return fmt.Errorf("Improbe(ProcNull): %v %v", ok, err)
		}
		buf[0] = 'x'
		st, err := ep.Mrecv(null, buf)
		if err != nil || st.Source != ProcNull || st.Count != 0 || buf[0] != 'x' {
			return fmt.Errorf("Mrecv of ProcNull: %+v %v %q", st, err, buf)
		}
		if _, err := ep.Mprobe(w, 5, 0); !errors.Is(err, ErrRank) {
			return fmt.Errorf("Mprobe(rank 5): %v, want ErrRank", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestMprobeRace: two callers of one endpoint (ThreadMultiple) both loop
// on Mprobe(AnySource, AnyTag) then Mrecv into the size it reported,
// while two senders send; every message reaches exactly one of them, whole.
// With Probe then Recv the same loop could receive a message of another
// size than it probed. Run with goroutine callers and with fiber callers.
func TestMprobeRace(t *testing.T) {
	for _, fibers := range []bool{false, true} {
		t.Run(fmt.Sprint("fibers=", fibers), func(t *testing.T) {
			p, err := Init(ThreadMultiple, Options{Workers: 2})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Finalize()
			eps, err := p.CreateEndpoints(3)
			if err != nil {
				t.Fatal(err)
			}
			const perSender, stop = 60, 1000
			got := make([][]int, 2) // tags each receiver got, as sender*perSender+i
			errs := make([]error, 4)
			var wg sync.WaitGroup
			receive := func(k int, h *Endpoint) error {
				for {
					m, err := h.Mprobe(h.World(), AnySource, AnyTag)
					if err != nil {
						return err
					}
					st := m.Status()
					buf := make([]byte, st.Count)
					rst, err := h.Mrecv(m, buf)
					if err != nil {
						return err
					}
					if rst.Tag == stop {
						return nil
					}
					id := int(rst.Source-1)*perSender + int(rst.Tag)
					if rst.Count != st.Count || !bytes.Equal(buf, payload(id)) {
						return fmt.Errorf("message %d: %d bytes, probed %d, content right %v", id, rst.Count, st.Count, bytes.Equal(buf, payload(id)))
					}
					got[k] = append(got[k], id)
				}
			}
			send := func(s int, h *Endpoint) error {
				for i := range perSender {
					if err := h.Send(h.World(), s, 0, i, payload((s-1)*perSender+i)); err != nil {
						return err
					}
				}
				return h.Send(h.World(), s, 0, stop, nil) // one stop each: two receivers
			}
			start := func(i int, ep *Endpoint, fn func(*Endpoint) error) {
				wg.Add(1)
				body := func(w *fiber.Waiter) {
					defer wg.Done()
					h, err := ep.Register(w)
					if err != nil {
						errs[i] = err
						return
					}
					defer h.Unregister()
					errs[i] = fn(h)
				}
				if !fibers {
					go body(fiber.NewGoroutineWaiter())
					return
				}
				if err := p.Scheduler().Spawn(func(f *fiber.Fiber) { body(f.Waiter()) }); err != nil {
					errs[i] = err
					wg.Done()
				}
			}
			start(0, eps[0], func(h *Endpoint) error { return receive(0, h) })
			start(1, eps[0], func(h *Endpoint) error { return receive(1, h) })
			start(2, eps[1], func(h *Endpoint) error { return send(1, h) })
			start(3, eps[2], func(h *Endpoint) error { return send(2, h) })
			done := make(chan struct{})
			go func() { wg.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(time.Minute):
				p.Abort(errors.New("TestMprobeRace: stuck"))
				<-done
			}
			if err := errors.Join(errs...); err != nil {
				t.Fatal(err)
			}
			seen := make([]int, 2*perSender)
			for _, ids := range got {
				for _, id := range ids {
					seen[id]++
				}
			}
			for id, n := range seen {
				if n != 1 {
					t.Errorf("message %d received %d times", id, n)
				}
			}
			// Each sender's messages reach the receivers in the order sent
			// (non-overtaking), whichever receiver got each.
			for k, ids := range got {
				last := []int{-1, -1}
				for _, id := range ids {
					s := id / perSender
					if id <= last[s] {
						t.Errorf("receiver %d: message %d after %d", k, id, last[s])
					}
					last[s] = id
				}
			}
		})
	}
}
