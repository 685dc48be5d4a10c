package endpoint

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fibermpi/fibermpi/fiber"
	"github.com/fibermpi/fibermpi/rdma/inproc"
	"github.com/fibermpi/fibermpi/rdma/rdmatest"
	"github.com/fibermpi/fibermpi/trace"
)

// fastWatch reports a deadlock after 20 ms, to keep the tests short.
var fastWatch = Watch{Deadlock: 20e6}

// deadlock runs k ranks of fn in both kinds of Run with fastWatch, checks
// that the job failed with a *DeadlockError and that every rank's error
// was an *AbortError wrapping it, and returns the reports.
func deadlock(t *testing.T, k int, options func() Options, fn func(ep *Endpoint) error) []*DeadlockError {
	t.Helper()
	var out []*DeadlockError
	for _, goroutines := range []bool{false, true} {
		opts := options()
		opts.Watch = fastWatch
		errs := make([]error, k)
		body := func(ep *Endpoint) error {
			errs[ep.Rank()] = fn(ep)
			return errs[ep.Rank()]
		}
		var err error
		if goroutines {
			err = RunGoroutinesWith(ThreadSingle, opts, k, body)
		} else {
			err = RunWith(ThreadSingle, opts, k, body)
		}
		var d *DeadlockError
		if !errors.As(err, &d) || errors.Is(err, ErrAborted) {
			t.Fatalf("goroutines=%v: Run: %v; want a *DeadlockError", goroutines, err)
		}
		for r, e := range errs {
			if e != nil && (!errors.Is(e, ErrAborted) || !errors.Is(e, ErrDeadlock)) {
				t.Errorf("goroutines=%v: rank %d: %v; want an *AbortError wrapping the deadlock", goroutines, r, e)
			}
		}
		out = append(out, d)
	}
	return out
}

func noOptions() Options { return Options{} }

func recvFrom(ep *Endpoint, src, tag int) error {
	_, err := ep.Recv(ep.World(), src, tag, make([]byte, 8))
	return err
}

// TestDeadlockTwoRanks: both ranks Recv first. The report names each wait
// and the cycle.
func TestDeadlockTwoRanks(t *testing.T) {
	for _, d := range deadlock(t, 2, noOptions, func(ep *Endpoint) error {
		return recvFrom(ep, 1-ep.Rank(), 0)
	}) {
		if !slices.Equal(d.Cycle, []int{0, 1, 0}) || len(d.Waiting) != 2 || len(d.Idle) != 0 {
			t.Fatalf("report: %+v", d)
		}
		for r, w := range d.Waiting {
			want := Op{Context: 2, World: true, Peer: 1 - r, PeerRank: 1 - r, Tag: 0, Bytes: 8}
			if w.Rank != r || w.Call != "Recv" || len(w.Ops) != 1 || w.Ops[0] != want {
				t.Errorf("rank %d waits: %+v, want Recv %+v", r, w, want)
			}
		}
		msg := d.Error()
		for _, s := range []string{
			"endpoint: deadlock: every rank has waited",
			"rank 0 in Recv: receive from rank 1, tag 0, on the world (8 bytes)",
			"rank 1 in Recv: receive from rank 0, tag 0, on the world (8 bytes)",
			"wait-for cycle: rank 0 → rank 1 → rank 0",
		} {
			if !strings.Contains(msg, s) {
				t.Errorf("the report lacks %q:\n%s", s, msg)
			}
		}
	}
}

// TestDeadlockThreeRanks: a ring waiting the wrong way round, with a
// message queued that nobody receives, and a rendezvous send.
func TestDeadlockThreeRanks(t *testing.T) {
	for _, opts := range []func() Options{noOptions, func() Options { return Options{Transport: rdmatest.HideLocal(inproc.New())} }} {
		for _, d := range deadlock(t, 3, opts, func(ep *Endpoint) error {
			r := ep.Rank()
			switch r {
			case 0:
				if err := ep.Send(ep.World(), 0, 2, 7, []byte("unread")); err != nil {
					return err
				}
				return recvFrom(ep, 1, 0)
			case 1: // waits in a synchronous send to 2
				return ep.Ssend(ep.World(), 1, 2, 0, []byte("x"))
			}
			return recvFrom(ep, 0, 0) // rank 2, from 0 with tag 0
		}) {
			if !slices.Equal(d.Cycle, []int{0, 1, 2, 0}) {
				t.Errorf("cycle %v, want [0 1 2 0]\n%v", d.Cycle, d)
			}
			if w := d.Waiting[1]; w.Call != "Send" || len(w.Ops) != 1 || !w.Ops[0].Send || w.Ops[0].PeerRank != 2 {
				t.Errorf("rank 1: %+v, want Send to rank 2", w)
			}
			w := d.Waiting[2]
			var queued []Op
			for _, q := range w.Queued {
				if q.Tag == 7 {
					queued = append(queued, q)
				}
			}
			if len(queued) != 1 || queued[0].PeerRank != 0 || queued[0].Bytes != 6 || !queued[0].Message {
				t.Errorf("queued at rank 2: %+v, want rank 0's 6-byte message with tag 7", w.Queued)
			}
			if !strings.Contains(d.Error(), "queued, unmatched: a message from rank 0, tag 7, on the world (6 bytes)") {
				t.Errorf("the report lacks the queued message:\n%v", d)
			}
		}
	}
}

// TestDeadlockOnReturnedRank: a receive from a rank that has returned.
func TestDeadlockOnReturnedRank(t *testing.T) {
	for _, d := range deadlock(t, 3, noOptions, func(ep *Endpoint) error {
		switch ep.Rank() {
		case 0:
			return recvFrom(ep, 2, 4)
		case 1:
			return recvFrom(ep, AnySource, AnyTag)
		}
		return nil // rank 2 is done
	}) {
		if !slices.Equal(d.Idle, []int{2}) || d.Cycle != nil || len(d.Waiting) != 2 {
			t.Fatalf("report: %+v", d)
		}
		if op := d.Waiting[1].Ops[0]; op.Peer != AnySource || op.Tag != AnyTag {
			t.Errorf("rank 1's wait: %+v", op)
		}
		for _, s := range []string{
			"rank 0 in Recv: receive from rank 2, tag 4",
			"rank 1 in Recv: receive from any rank, any tag",
			"ranks with no caller (returned or never started): [2]",
		} {
			if !strings.Contains(d.Error(), s) {
				t.Errorf("the report lacks %q:\n%v", s, d)
			}
		}
	}
}

// TestDeadlockWaitProbe: waits other than the blocking Recv: Wait on an
// Irecv, WaitAny, Probe.
func TestDeadlockWaitProbe(t *testing.T) {
	for _, d := range deadlock(t, 3, noOptions, func(ep *Endpoint) error {
		w := ep.World()
		switch ep.Rank() {
		case 0:
			r, err := ep.Irecv(w, 1, 3, make([]byte, 8))
			if err != nil {
				return err
			}
			return ep.Wait(r)
		case 1:
			a, err := ep.Irecv(w, 2, 3, make([]byte, 8))
			if err != nil {
				return err
			}
			b, err := ep.Irecv(w, 2, 4, make([]byte, 8))
			if err != nil {
				return err
			}
			_, err = WaitAny(ep.Waiter(), a, b)
			return err
		}
		_, err := ep.Probe(w, 0, 3)
		return err
	}) {
		calls := []string{d.Waiting[0].Call, d.Waiting[1].Call, d.Waiting[2].Call}
		if !slices.Equal(calls, []string{"Wait", "Wait", "Probe"}) {
			t.Errorf("calls %v", calls)
		}
		if len(d.Waiting[1].Ops) != 2 {
			t.Errorf("rank 1 waits for %+v, want its two receives", d.Waiting[1].Ops)
		}
		if !slices.Equal(d.Cycle, []int{0, 1, 2, 0}) {
			t.Errorf("cycle %v\n%v", d.Cycle, d)
		}
	}
}

// TestNoDeadlockWhileComputing: a rank computing for many watchdog periods
// while the other waits for it is not a deadlock.
func TestNoDeadlockWhileComputing(t *testing.T) {
	for _, mode := range []func(ThreadLevel, Options, int, func(*Endpoint) error) error{RunWith, RunGoroutinesWith} {
		err := mode(ThreadSingle, Options{Watch: fastWatch}, 2, func(ep *Endpoint) error {
			if ep.Rank() == 0 {
				return recvFrom(ep, 1, 0)
			}
			// Compute (no fibermpi call) until the watchdog has looked
			// 20 times, five times its deadline.
			wd := ep.Proc().job.watch
			x := 1.0
			for start := wd.ticks.Load(); wd.ticks.Load() < start+20; {
				for range 1000 {
					x = x*1.0000001 + 1e-9
				}
			}
			return ep.Send(ep.World(), 1, 0, 0, []byte(fmt.Sprint(x)[:1]))
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestDeadlockOff: with the watchdog off the job waits; Deadlocked still
// reports the local state, and an Abort ends it.
func TestDeadlockOff(t *testing.T) {
	p, eps := newJob(t, ThreadSingle, Options{Workers: 1, Watch: Watch{Deadlock: -1}}, 2)
	done := make(chan error, 2)
	for _, ep := range eps {
		go func() {
			h, err := ep.Register(fiber.NewGoroutineWaiter())
			if err != nil {
				done <- err
				return
			}
			defer h.Unregister()
			done <- recvFrom(h, 1-h.Rank(), 0)
		}()
	}
	// Both callers blocked: until the second has registered, the state is
	// a deadlock of one caller waiting on a rank with none.
	for start := time.Now(); ; time.Sleep(time.Millisecond) {
		d, ok := p.Deadlocked()
		if ok && slices.Equal(d.Cycle, []int{0, 1, 0}) {
			break
		}
		if time.Since(start) > time.Minute {
			t.Fatalf("Deadlocked: %v %v", d, ok)
		}
	}
	stop := errors.New("stop")
	p.Abort(stop)
	for range 2 {
		if err := within(t, "the Recv", done); !errors.Is(err, stop) || errors.Is(err, ErrDeadlock) {
			t.Errorf("Recv: %v", err)
		}
	}
	if err := p.Finalize(); err != nil {
		t.Fatal(err)
	}
}

// TestTimedWaitIsNotDeadlock: a caller in a wait with a deadline is not
// blocked for good, so it is no deadlock while another caller waits on it.
func TestTimedWaitIsNotDeadlock(t *testing.T) {
	err := RunWith(ThreadSingle, Options{Watch: fastWatch}, 2, func(ep *Endpoint) error {
		w := ep.World()
		if ep.Rank() == 1 {
			return recvFrom(ep, 0, 0)
		}
		r, err := ep.Irecv(w, 1, 0, nil)
		if err != nil {
			return err
		}
		// Many deadlines long: the other rank waits all along.
		wd := ep.Proc().job.watch
		for start := wd.ticks.Load(); wd.ticks.Load() < start+20; {
			ctx, cancel := context.WithTimeout(context.Background(), 1e6)
			err := r.WaitForContext(ep.Waiter(), ctx)
			cancel()
			if !errors.Is(err, context.DeadlineExceeded) {
				return fmt.Errorf("WaitForContext: %v", err)
			}
		}
		r.Cancel()
		return ep.Send(w, 0, 1, 0, nil)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestDeadlockInTrace: with tracing on, the report's wait-for graph is in
// the trace, for cmd/fmpi-trace to draw.
func TestDeadlockInTrace(t *testing.T) {
	path := t.TempDir() + "/trace.json"
	err := RunWith(ThreadSingle, Options{Watch: fastWatch, Trace: path}, 2, func(ep *Endpoint) error {
		return recvFrom(ep, 1-ep.Rank(), 0)
	})
	if !errors.Is(err, ErrDeadlock) {
		t.Fatalf("Run: %v", err)
	}
	d, err := trace.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	w := d.Deadlock
	if w == nil || len(w.Edges) != 2 || !w.InCycle(0, 1) || !w.InCycle(1, 0) || !strings.Contains(w.Report, "wait-for cycle") {
		t.Fatalf("the trace's wait-for graph: %+v", w)
	}
}
