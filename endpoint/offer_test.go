package endpoint

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/fibermpi/fibermpi/fiber"
	"github.com/fibermpi/fibermpi/packet"
	"github.com/fibermpi/fibermpi/rdma"
	"github.com/fibermpi/fibermpi/rdma/inproc"
)

// offerJob is two goroutine-registered endpoints over tr, at ThreadSingle,
// with progress only where the test drives it.
func offerJob(t *testing.T, opts Options) (*Process, [2]*Endpoint) {
	t.Helper()
	opts.Workers, opts.Progress = 1, ProgressCaller
	p, eps := newJob(t, ThreadSingle, opts, 2)
	var h [2]*Endpoint
	for i, ep := range eps {
		var err error
		if h[i], err = ep.Register(fiber.NewGoroutineWaiter()); err != nil {
			p.Finalize()
			t.Fatal(err)
		}
	}
	return p, h
}

// A receive posted before its large message offers its buffer: the
// transfer is RTR, Put, Done, with no RTS. Posted after, it is RTS first; a
// wildcard receive never offers.
func TestOfferSkipsRTS(t *testing.T) {
	tr := newRemote()
	p, h := offerJob(t, Options{Transport: tr})
	defer p.Finalize()
	w := h[0].World()
	data := pattern(100_000, 1)
	exchange := func(recvFirst bool, src int) map[packet.Kind]int {
		t.Helper()
		buf := make([]byte, len(data))
		var r *Request
		var err error
		if recvFirst {
			if r, err = h[1].Irecv(w, src, 4, buf); err != nil {
				t.Fatal(err)
			}
		}
		s, err := h[0].Isend(w, 0, 1, 4, data)
		if err != nil {
			t.Fatal(err)
		}
		if !recvFirst {
			if r, err = h[1].Irecv(w, src, 4, buf); err != nil {
				t.Fatal(err)
			}
		}
		if err := h[0].Wait(s); err != nil {
			t.Fatal(err)
		}
		if err := h[1].Wait(r); err != nil || !bytes.Equal(buf, data) || r.Status().Count != len(data) || r.Status().Source != 0 || r.Status().Tag != 4 {
			t.Fatalf("receive: %v, status %+v, data equal %v", err, r.Status(), bytes.Equal(buf, data))
		}
		return tr.count()
	}
	for _, c := range []struct {
		name      string
		recvFirst bool
		src       int
		want      map[packet.Kind]int
	}{
		{"posted first", true, 0, map[packet.Kind]int{kindOffer: 1, packet.KindDone: 1}},
		{"posted after", false, 0, map[packet.Kind]int{packet.KindRTS: 1, packet.KindRTR: 1, packet.KindDone: 1}},
		{"wildcard posted first", true, AnySource, map[packet.Kind]int{packet.KindRTS: 1, packet.KindRTR: 1, packet.KindDone: 1}},
	} {
		if got := exchange(c.recvFirst, c.src); fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s: packets %v, want %v", c.name, got, c.want)
		}
	}
}

// mover is remote with a rendezvous of its own (rdma.Mover), as rdma/mpi:
// SendMoved sends the RTS and keeps the bytes under a token, TakeMoved
// copies them into the receive's buffer, and both sides' PutDone run from
// the next Progress. With moves false it moves nothing (Moves, and
// SendMoved says ErrAgain), as rdma/mpi with Config.NoMove.
type mover struct {
	*remote
	moves bool
	mu    sync.Mutex
	next  uint64
	held  map[uint64]movedBytes
	done  []func(w int)
}

type movedBytes struct {
	data []byte
	done rdma.PutDone
}

func newMover(moves bool) *mover {
	return &mover{remote: newRemote(), moves: moves, held: make(map[uint64]movedBytes)}
}

func (m *mover) Moves() bool { return m.moves }

func (m *mover) SendMoved(w int, to rdma.Addr, pk *packet.Packet, data []byte, done rdma.PutDone) error {
	if !m.moves {
		return rdma.ErrAgain
	}
	m.mu.Lock()
	m.next++
	token := m.next
	m.held[token] = movedBytes{data, done}
	m.mu.Unlock()
	pk.RecvID = token
	if err := m.remote.Send(w, to, pk); err != nil {
		m.mu.Lock()
		delete(m.held, token)
		m.mu.Unlock()
		return err
	}
	return nil
}

func (m *mover) TakeMoved(w int, from rdma.Addr, token uint64, buf []byte, size int, done rdma.PutDone) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.held[token]
	if !ok || len(b.data) != size {
		return fmt.Errorf("no moved message %d of %d bytes", token, size)
	}
	delete(m.held, token)
	copy(buf, b.data)
	m.done = append(m.done, func(w int) { b.done.PutDone(w, nil) }, func(w int) { done.PutDone(w, nil) })
	return nil
}

func (m *mover) Progress(w int) int {
	m.mu.Lock()
	done := m.done
	m.done = nil
	m.mu.Unlock()
	for _, f := range done {
		f(w)
	}
	return len(done) + m.remote.Progress(w)
}

// A receive posted before its large message offers nothing to a sender
// whose transport moves the message itself (rdma.Mover.Moves): the RTS
// alone travels, and the transport moves the bytes. The same transport
// moving nothing (rdma/mpi's FIBERMPI_MPI_RENDEZVOUS=put) gets the offer,
// the Put and the Done.
func TestOfferNotToMovers(t *testing.T) {
	for _, c := range []struct {
		moves bool
		want  map[packet.Kind]int
	}{
		{true, map[packet.Kind]int{packet.KindRTS: 1}},
		{false, map[packet.Kind]int{kindOffer: 1, packet.KindDone: 1}},
	} {
		t.Run(fmt.Sprintf("moves=%v", c.moves), func(t *testing.T) {
			tr := newMover(c.moves)
			p, h := offerJob(t, Options{Transport: tr})
			defer p.Finalize()
			w := h[0].World()
			data := pattern(100_000, 3)
			buf := make([]byte, len(data))
			r, err := h[1].Irecv(w, 0, 4, buf)
			if err != nil {
				t.Fatal(err)
			}
			if r.offered == c.moves {
				t.Errorf("receive offered %v, want %v", r.offered, !c.moves)
			}
			s, err := h[0].Isend(w, 0, 1, 4, data)
			if err != nil {
				t.Fatal(err)
			}
			if err := h[0].Wait(s); err != nil {
				t.Fatal(err)
			}
			if err := h[1].Wait(r); err != nil || !bytes.Equal(buf, data) || r.Status().Count != len(data) {
				t.Fatalf("receive: %v, status %+v, data equal %v", err, r.Status(), bytes.Equal(buf, data))
			}
			if got := tr.count(); fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Errorf("packets %v, want %v", got, c.want)
			}
		})
	}
}

// An offered buffer takes a message of any size: smaller (the count says
// so), empty, or larger (truncation, both sizes, the message consumed).
func TestOfferSizes(t *testing.T) {
	p, h := offerJob(t, Options{Transport: newRemote()})
	defer p.Finalize()
	w := h[0].World()
	for _, n := range []int{0, 10, 9000, 20_000} {
		buf := make([]byte, 10_000)
		r, err := h[1].Irecv(w, 0, 1, buf)
		if err != nil {
			t.Fatal(err)
		}
		if !r.offered {
			t.Fatalf("%d bytes: the receive was not offered", n)
		}
		if err := h[0].Send(w, 0, 1, 1, pattern(n, n)); err != nil {
			t.Fatal(err)
		}
		err = h[1].Wait(r)
		st := r.Status()
		got := min(n, len(buf))
		if st.Count != got || !bytes.Equal(buf[:got], pattern(n, n)[:got]) {
			t.Fatalf("%d bytes: status %+v", n, st)
		}
		var te *TruncateError
		if n > len(buf) {
			if !errors.As(err, &te) || te.Have != len(buf) || te.Got != n {
				t.Fatalf("%d bytes into %d: %v", n, len(buf), err)
			}
		} else if err != nil {
			t.Fatalf("%d bytes: %v", n, err)
		}
	}
}

// A stale offer: the sender sent a message before the offer reached it, and
// that message matched the offered receive; the sender must drop the offer,
// and the next message must go through the matching table, in order.
func TestOfferStale(t *testing.T) {
	tr := &queued{Transport: inproc.New()}
	p, h := offerJob(t, Options{Transport: tr})
	defer p.Finalize()
	w := h[0].World()
	first, err := h[0].Isend(w, 0, 1, 2, pattern(10, 1)) // queued, not delivered
	if err != nil {
		t.Fatal(err)
	}
	buf1 := make([]byte, 10_000)
	r1, err := h[1].Irecv(w, 0, 2, buf1) // offers: the receiver has counted nothing
	if err != nil {
		t.Fatal(err)
	}
	for tr.Progress(packet.NoWorker) > 0 {
	}
	if !r1.Test() || r1.Status().Count != 10 || !bytes.Equal(buf1[:10], pattern(10, 1)) {
		t.Fatalf("the first message did not complete the first receive: %+v", r1.Status())
	}
	if o := h[0].c.off; o.dropped.Load() != 1 || o.kept.Load() != 0 || o.held() != 0 {
		t.Fatalf("sender kept %d, dropped %d, holds %d offers; want the stale offer dropped", o.kept.Load(), o.dropped.Load(), o.held())
	}
	// The next message goes by RTS to the next receive.
	second, err := h[0].Isend(w, 0, 1, 2, pattern(9000, 2))
	if err != nil {
		t.Fatal(err)
	}
	buf2 := make([]byte, 10_000)
	r2, err := h[1].Irecv(w, 0, 2, buf2)
	if err != nil {
		t.Fatal(err)
	}
	if err := WaitAll(h[0].Waiter(), first, second); err != nil {
		t.Fatal(err)
	}
	if err := h[1].Wait(r2); err != nil || r2.Status().Count != 9000 || !bytes.Equal(buf2[:9000], pattern(9000, 2)) {
		t.Fatalf("second receive: %v %+v", err, r2.Status())
	}
}

// TestOfferStress streams messages of mixed sizes on one tag through the
// queued transport, with progress from idle workers, while the receiver
// keeps windows of exact receives posted and cancels some: offers go fresh
// and stale and are withdrawn, and every message must arrive once, in order.
func TestOfferStress(t *testing.T) {
	const n, window = 400, 4
	for _, c := range []struct{ lim, qlim int }{{-1, 0}, {0, 0}, {0, 3}} {
		lim := c.lim
		t.Run(fmt.Sprintf("eager=%d/queue=%d", lim, c.qlim), func(t *testing.T) {
			opts := Options{Workers: 2, EagerLimit: lim, Transport: &queued{Transport: inproc.New(), limit: c.qlim}}
			var offers *offers
			err := RunWith(ThreadSingle, opts, 2, func(ep *Endpoint) error {
				w := ep.World()
				size := func(i int) int { return []int{4, 9000, 20_000, 100}[i%4] }
				if ep.Rank() == 0 {
					offers = ep.c.off
					for i := range n {
						if err := ep.Send(w, 0, 1, 7, pattern(size(i), i)); err != nil {
							return err
						}
					}
					return nil
				}
				// Every third window cancels its last receive at once,
				// racing the sender for its offer: that receive gets the
				// next message or none, and the stream stays in order.
				next := 0
				for k := 0; next < n; k++ {
					m := min(window, n-next)
					reqs := make([]*Request, m)
					bufs := make([][]byte, m)
					for j := range m {
						bufs[j] = make([]byte, 20_000)
						var err error
						if reqs[j], err = ep.Irecv(w, 0, 7, bufs[j]); err != nil {
							return err
						}
					}
					if k%3 == 2 {
						reqs[m-1].Cancel()
					}
					for j, r := range reqs {
						err := ep.Wait(r)
						if errors.Is(err, ErrCancelled) && j == m-1 && k%3 == 2 {
							continue
						}
						if err != nil {
							return fmt.Errorf("message %d: %w", next, err)
						}
						if sz := size(next); r.Status().Count != sz || !bytes.Equal(bufs[j][:sz], pattern(sz, next)) {
							return fmt.Errorf("receive for message %d got another: status %+v", next, r.Status())
						}
						next++
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if offers.kept.Load() == 0 {
				t.Fatal("no offer was ever used")
			}
			t.Logf("offers kept %d, dropped %d", offers.kept.Load(), offers.dropped.Load())
		})
	}
}

// Cancelling an offered receive withdraws the offer: unused, the receive
// completes cancelled and the sender's next message goes to the next
// receive; already used (its Done on the way), the receive completes with
// the message; dropped as stale, the receive is cancelled in the table.
func TestOfferWithdraw(t *testing.T) {
	tr := &queued{Transport: inproc.New()}
	p, h := offerJob(t, Options{Transport: tr})
	defer p.Finalize()
	w := h[0].World()
	deliver := func() {
		for tr.Progress(packet.NoWorker) > 0 {
		}
	}
	// Unused.
	r1, err := h[1].Irecv(w, 0, 5, make([]byte, 10_000))
	if err != nil {
		t.Fatal(err)
	}
	deliver() // the offer reaches the sender, which keeps it
	if !r1.offered || h[0].c.off.held() != 1 {
		t.Fatalf("offered %v, sender holds %d offers", r1.offered, h[0].c.off.held())
	}
	for range 2 { // the second Cancel sends no second withdrawal
		if !r1.Cancel() {
			t.Fatal("Cancel of an offered receive reported false")
		}
	}
	deliver()
	if err := h[1].Wait(r1); !errors.Is(err, ErrCancelled) || h[0].c.off.held() != 0 {
		t.Fatalf("withdrawn receive: %v, sender holds %d offers", err, h[0].c.off.held())
	}
	buf := make([]byte, 10_000)
	s, err := h[0].Isend(w, 0, 1, 5, pattern(9000, 5)) // goes by RTS now
	if err != nil {
		t.Fatal(err)
	}
	r2, err := h[1].Irecv(w, 0, 5, buf)
	if err != nil {
		t.Fatal(err)
	}
	if err := WaitAll(h[0].Waiter(), s); err != nil {
		t.Fatal(err)
	}
	if err := h[1].Wait(r2); err != nil || !bytes.Equal(buf[:9000], pattern(9000, 5)) {
		t.Fatalf("the message after a withdrawal: %v %+v", err, r2.Status())
	}
	// Used: the send took the offer and its Done is queued before the
	// withdrawal reaches the sender.
	r3, err := h[1].Irecv(w, 0, 6, buf)
	if err != nil {
		t.Fatal(err)
	}
	deliver()
	if _, err := h[0].Isend(w, 0, 1, 6, pattern(100, 6)); err != nil {
		t.Fatal(err)
	}
	if !r3.Cancel() {
		t.Fatal("Cancel of a pending offered receive reported false")
	}
	deliver()
	if err := h[1].Wait(r3); err != nil || r3.Status().Count != 100 || !bytes.Equal(buf[:100], pattern(100, 6)) {
		t.Fatalf("an offer used before its withdrawal: %v %+v", err, r3.Status())
	}
	// Stale: a message was in flight when the receive offered; Cancel
	// races with it, and exactly one of them wins.
	s4, err := h[0].Isend(w, 0, 1, 7, pattern(10, 7))
	if err != nil {
		t.Fatal(err)
	}
	r4, err := h[1].Irecv(w, 0, 7, buf)
	if err != nil {
		t.Fatal(err)
	}
	if !r4.Cancel() {
		t.Fatal("Cancel of a pending offered receive reported false")
	}
	deliver()
	if err := h[1].Wait(r4); err != nil || r4.Status().Count != 10 {
		t.Fatalf("a stale offer's receive: %v %+v", err, r4.Status())
	}
	if err := h[0].Wait(s4); err != nil {
		t.Fatal(err)
	}
	r5, err := h[1].Irecv(w, 0, 7, buf)
	if err != nil {
		t.Fatal(err)
	}
	deliver()
	if !r5.Cancel() {
		t.Fatal("Cancel reported false")
	}
	deliver()
	if err := h[1].Wait(r5); !errors.Is(err, ErrCancelled) {
		t.Fatalf("cancelled receive: %v", err)
	}
	if o := h[0].c.off; o.held() != 0 || o.inUseCount() != 0 {
		t.Fatalf("sender left with %d offers, %d in use", o.held(), o.inUseCount())
	}
}
