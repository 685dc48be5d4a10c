package osu

import (
	"sync/atomic"
	"time"

	"github.com/fibermpi/fibermpi/comm"
	"github.com/fibermpi/fibermpi/fiber"
)

// OMB's tags.
const (
	tagLatency = 1   // latency's messages both ways
	tagData    = 100 // bw and mbw_mr data; bibw from rank 0
	tagAck     = 101 // bw and mbw_mr's 4-byte reply
	tagBack    = 10  // bibw from rank 1
	ackSize    = 4
)

// caller is one fiber or goroutine running a benchmark: its communicator,
// its buffers, its reusable requests and, for the one that prints, the
// printer.
type caller struct {
	c      *comm.Comm[byte]
	f64    *comm.Comm[float64] // reductions of timings
	thread int                 // latency_mt: index among the rank's callers
	team   *team               // latency_mt: the rank's callers
	out    *printer            // nil unless this caller prints

	sbuf, rbuf []byte
	sreqs      []comm.Request[byte]
	rreqs      []comm.Request[byte]
	swait      []comm.Waitable
	rwait      []comm.Waitable
}

// newCaller makes the buffers (the largest size, at least the 4-byte
// reply) and window requests a caller needs for cfg.
func newCaller(c *comm.Comm[byte], cfg Config, thread int, t *team, out *printer) (*caller, error) {
	f64, err := comm.As[float64](c)
	if err != nil {
		return nil, err
	}
	n := max(cfg.maxSize(), ackSize)
	if cfg.Bench == Barrier {
		n = 0
	}
	cl := &caller{c: c, f64: f64, thread: thread, team: t, out: out,
		sbuf: make([]byte, n), rbuf: make([]byte, n)}
	switch cfg.Bench.class() {
	case classBW:
		w := cfg.window()
		cl.sreqs, cl.rreqs = make([]comm.Request[byte], w), make([]comm.Request[byte], w)
		cl.swait, cl.rwait = make([]comm.Waitable, w), make([]comm.Waitable, w)
		for i := range w {
			cl.swait[i], cl.rwait[i] = &cl.sreqs[i], &cl.rreqs[i]
		}
	}
	return cl, nil
}

// touch fills the first size bytes of the buffers as OMB does ('a' to
// send, 'b' to receive), so every size starts with its pages mapped.
func (cl *caller) touch(size int) {
	for i := range size {
		cl.sbuf[i], cl.rbuf[i] = 'a', 'b'
	}
}

// micros converts a duration to microseconds.
func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// pingPong runs warmup then iterations round trips of buffers sbuf and
// rbuf with peer on tag: the initiator sends first. It returns the
// initiator's time for the timed round trips (zero for the other side).
// Blocking calls yield a fiber and park a goroutine.
func pingPong(c *comm.Comm[byte], peer, tag int, initiator bool, sbuf, rbuf []byte, warmup, iterations int) (time.Duration, error) {
	var t0 time.Time
	for i := range warmup + iterations {
		if initiator {
			if i == warmup {
				t0 = time.Now()
			}
			if err := c.Send(sbuf, peer, tag); err != nil {
				return 0, err
			}
			if _, err := c.Recv(rbuf, peer, tag); err != nil {
				return 0, err
			}
			continue
		}
		if _, err := c.Recv(rbuf, peer, tag); err != nil {
			return 0, err
		}
		if err := c.Send(sbuf, peer, tag); err != nil {
			return 0, err
		}
	}
	if !initiator || iterations == 0 {
		return 0, nil
	}
	return time.Since(t0), nil
}

// windows runs bw's loop between a sender and a receiver: per iteration
// the sender starts window sends of size bytes and waits for them, then
// for a 4-byte reply the receiver sends once its window of receives is
// complete. It returns the sender's time for the timed iterations.
func (cl *caller) windows(peer, size, window int, sender bool, warmup, iterations int) (time.Duration, error) {
	c := cl.c
	sbuf, rbuf := cl.sbuf[:size], cl.rbuf[:size]
	var t0 time.Time
	for i := range warmup + iterations {
		if sender {
			if i == warmup {
				t0 = time.Now()
			}
			for j := range window {
				if err := c.IsendInto(&cl.sreqs[j], sbuf, peer, tagData); err != nil {
					return 0, err
				}
			}
			if err := comm.WaitAll(cl.swait[:window]...); err != nil {
				return 0, err
			}
			if _, err := c.Recv(cl.rbuf[:ackSize], peer, tagAck); err != nil {
				return 0, err
			}
			continue
		}
		for j := range window {
			if err := c.IrecvInto(&cl.rreqs[j], rbuf, peer, tagData); err != nil {
				return 0, err
			}
		}
		if err := comm.WaitAll(cl.rwait[:window]...); err != nil {
			return 0, err
		}
		if err := c.Send(cl.sbuf[:ackSize], peer, tagAck); err != nil {
			return 0, err
		}
	}
	if !sender {
		return 0, nil
	}
	return time.Since(t0), nil
}

// biWindows runs bibw's loop: each iteration both ranks post window
// receives and window sends of size bytes, then wait for the sends and the
// receives. It returns rank 0's time for the timed iterations.
func (cl *caller) biWindows(peer, size, window int, warmup, iterations int) (time.Duration, error) {
	c := cl.c
	sbuf, rbuf := cl.sbuf[:size], cl.rbuf[:size]
	first := c.Rank() == 0
	in, out := tagBack, tagData
	if !first {
		in, out = tagData, tagBack
	}
	var t0 time.Time
	for i := range warmup + iterations {
		if first && i == warmup {
			t0 = time.Now()
		}
		for j := range window {
			if err := c.IrecvInto(&cl.rreqs[j], rbuf, peer, in); err != nil {
				return 0, err
			}
		}
		for j := range window {
			if err := c.IsendInto(&cl.sreqs[j], sbuf, peer, out); err != nil {
				return 0, err
			}
		}
		if err := comm.WaitAll(cl.swait[:window]...); err != nil {
			return 0, err
		}
		if err := comm.WaitAll(cl.rwait[:window]...); err != nil {
			return 0, err
		}
	}
	if !first {
		return 0, nil
	}
	return time.Since(t0), nil
}

// team makes the callers of one rank (latency_mt's fibers) meet, and keeps
// the rank's start and end times. Waiting yields a fiber and parks a
// goroutine.
type team struct {
	n      int32
	count  atomic.Int32 // arrivals in the current round; the last resets it before releasing
	events []fiber.Event
	t0, t1 time.Time // set by the last arrival (see wait); read after a wait
}

func newTeam(n int) *team { return &team{n: int32(n), events: make([]fiber.Event, n)} }

// wait returns once all n callers have called it; caller i waits with w.
// The last to arrive runs last (if not nil) before releasing the others,
// so what last writes is visible to every caller once wait returns.
func (t *team) wait(i int, w *fiber.Waiter, last func()) {
	if t.count.Add(1) == t.n {
		t.count.Store(0) // before any release: a released caller may arrive at the next round
		if last != nil {
			last()
		}
		for j := range t.events {
			if j != i {
				t.events[j].Signal()
			}
		}
		return
	}
	t.events[i].Wait(w)
	t.events[i].Reset() // its Signal fired it; the next round's comes only after our next Add
}

// share returns how many of the iterations 0..n-1 fall to caller k of f
// when they are dealt round-robin (k, k+f, k+2f, ...).
func share(n, k, f int) int {
	if k >= n {
		return 0
	}
	return (n - k + f - 1) / f
}
