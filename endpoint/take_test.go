//go:build linux

package endpoint_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/fibermpi/fibermpi/endpoint"
	"github.com/fibermpi/fibermpi/fiber"
	"github.com/fibermpi/fibermpi/internal/invariants"
	"github.com/fibermpi/fibermpi/internal/jobtest"
	"github.com/fibermpi/fibermpi/internal/testenv"
)

// inJob runs run in each of two processes simulated in this OS process and
// joined by shared memory (rdma/shm), with workers fiber workers each and
// progress from the workers (ProgressIdle).
func inJob(t *testing.T, workers int, run func(p *endpoint.Process) error) {
	t.Helper()
	boots := jobtest.NewMemJob(2)
	errs := make(chan error, 2)
	for i := range 2 {
		go func() {
			errs <- func() error {
				p, err := endpoint.Init(endpoint.ThreadMultiple, endpoint.Options{Workers: workers, Bootstrap: boots[i]})
				if err != nil {
					return err
				}
				defer p.Finalize()
				if err := run(p); err != nil {
					return fmt.Errorf("process %d: %w", i, err)
				}
				return nil
			}()
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// inTakeJob runs body as the one fiber of each of two processes (inJob),
// so that a blocking Recv, alone on its worker, may take its message from
// the ring itself.
func inTakeJob(t *testing.T, body func(h *endpoint.Endpoint) error) {
	t.Helper()
	inJob(t, 1, func(p *endpoint.Process) error { return runOn(p, 0, body) })
}

func word(b []byte) uint64 { return binary.LittleEndian.Uint64(b) }

func put(v uint64) []byte {
	b := make([]byte, 8)
	binary.LittleEndian.PutUint64(b, v)
	return b
}

// A ping-pong between two processes: the blocking Recvs take their
// messages from the ring (takeRecv), each the one it should get.
func TestTakeRecvPingPong(t *testing.T) {
	const rounds = 2000
	var took uint64
	inTakeJob(t, func(h *endpoint.Endpoint) error {
		if err := pingPong(h, rounds); err != nil {
			return err
		}
		w, me := h.World(), h.Rank()
		buf := make([]byte, 8)
		if me == 1 {
			took = endpoint.Takes(h)
		}
		// The rounds allocate nothing: process 1 counts the job's
		// allocations over rounds more, process 0 plays its part.
		var before, after runtime.MemStats
		if me == 1 {
			runtime.ReadMemStats(&before)
		}
		out := make([]byte, 8)
		for i := range uint64(rounds) {
			if me == 0 {
				binary.LittleEndian.PutUint64(out, i)
				if err := h.Send(w, 0, 1, 3, out); err != nil {
					return err
				}
			}
			if _, err := h.Recv(w, 1-me, 3, buf); err != nil {
				return err
			}
			if me == 1 {
				if err := h.Send(w, me, 0, 3, buf); err != nil {
					return err
				}
			}
		}
		if me == 1 && !testenv.RaceEnabled && !invariants.Enabled {
			runtime.ReadMemStats(&after)
			// A few allocations of the runtime's own may fall in the window.
			if n := after.Mallocs - before.Mallocs; n > 5 {
				return fmt.Errorf("%d round trips allocated %d times", rounds, n)
			}
		}
		// Both Recvs are a fiber's alone on its worker, from another
		// process over shared memory: they must be able to take.
		if !endpoint.CanTake(h, 1-me) {
			return errors.New("CanTake is false for a fiber alone on its worker, receiving over shared memory")
		}
		return untilTaken(h, true)
	})
	t.Logf("process 1 took %d of the first %d messages from the ring itself", took, rounds)
}

// What comes first is never passed over: a message of another tag at the
// ring's head, messages of the key that wait in the matching table, a
// wildcard receive and an exact receive posted before, a message longer
// than the buffer.
func TestTakeRecvOrder(t *testing.T) {
	inTakeJob(t, takeOrder)
}

// TestJobTake runs TestTakeRecvOrder's exchanges, then a ping-pong, over
// every transport of the multi-transport suite (and, under an MPI's
// launcher, over rdma/mpi: scripts/test-mpi.sh). Where the transport lets
// a receiver take its messages (rdma.EagerTaker), the ping-pong's Recvs
// take some of them.
func TestJobTake(t *testing.T) {
	jobtest.Run(t, 2, endpoint.ThreadSingle, func(h *endpoint.Endpoint) error {
		if err := takeOrder(h); err != nil {
			return err
		}
		if err := pingPong(h, 500); err != nil {
			return err
		}
		return untilTaken(h, false)
	})
}

// takeWait bounds untilTaken.
const takeWait = 15 * time.Second

// untilTaken plays more ping-pong rounds (as pingPong) until each of ranks
// 0 and 1 whose Recvs may take their messages from the transport (both if
// must, else those for which endpoint.CanTake holds) has taken one, and
// fails if that has not happened within takeWait. Whether a Recv takes its
// message depends on timing: it looks at the transport a bounded number
// of times, and a loaded machine, or the slower path of an invariants
// build, may keep the answer away longer (a run of thousands of rounds
// then takes none), so the tests ask that the way be taken, not how
// often. Rank 0 says in each message whether it still waits for a take;
// rank 1 decides, and says in its answer whether to go on (0), that both
// have taken (1), or that it gave up (2).
func untilTaken(h *endpoint.Endpoint, must bool) error {
	w, me := h.World(), h.Rank()
	waits := func() uint64 {
		if (must || endpoint.CanTake(h, 1-me)) && endpoint.Takes(h) == 0 {
			return 1
		}
		return 0
	}
	buf := make([]byte, 8)
	start := time.Now()
	for i := uint64(0); ; i++ {
		if me == 0 {
			if err := h.Send(w, 0, 1, 5, put(i<<1|waits())); err != nil {
				return err
			}
		}
		st, err := h.Recv(w, 1-me, 5, buf)
		if err != nil {
			return err
		}
		if st.Source != int32(1-me) || st.Tag != 5 || st.Count != 8 {
			return fmt.Errorf("round %d: status %+v", i, st)
		}
		v := word(buf)
		if me == 0 {
			switch v {
			case 0:
				continue
			case 1:
				return nil
			case 2:
				return fmt.Errorf("no take in %d rounds: rank 1 gave up", i+1)
			}
			return fmt.Errorf("round %d: answer %d", i, v)
		}
		if v>>1 != i {
			return fmt.Errorf("round %d: got round %d", i, v>>1)
		}
		var answer uint64
		switch {
		case v&1 == 0 && waits() == 0:
			answer = 1
		case time.Since(start) > takeWait:
			answer = 2
		}
		if err := h.Send(w, 1, 0, 5, put(answer)); err != nil {
			return err
		}
		switch answer {
		case 1:
			return nil
		case 2:
			return fmt.Errorf("Recvs that could take their messages from the transport took none in %d rounds (%v): rank 0 waiting %t, rank 1 waiting %t", i+1, takeWait, v&1 == 1, waits() == 1)
		}
	}
}

// pingPong runs rounds round trips of 8-byte messages of tag 3 between
// ranks 0 and 1 of h's world, rank 0 sending first, and checks every
// message received: its source, tag, length and round.
func pingPong(h *endpoint.Endpoint, rounds uint64) error {
	w, me := h.World(), h.Rank()
	buf := make([]byte, 8)
	for i := range rounds {
		if me == 0 {
			if err := h.Send(w, 0, 1, 3, put(i)); err != nil {
				return err
			}
		}
		st, err := h.Recv(w, 1-me, 3, buf)
		if err != nil {
			return err
		}
		if st.Source != int32(1-me) || st.Tag != 3 || st.Count != 8 || word(buf) != i {
			return fmt.Errorf("round %d: got %d, status %+v", i, word(buf), st)
		}
		if me == 1 {
			if err := h.Send(w, me, 0, 3, put(i)); err != nil {
				return err
			}
		}
	}
	return nil
}

// takeOrder is TestTakeRecvOrder's body, for ranks 0 and 1 of a world of
// two processes.
func takeOrder(h *endpoint.Endpoint) error {
	w, me := h.World(), h.Rank()
	if me == 0 {
		// 1. Tag 1 then tag 2 twice.
		for i, tag := range []int{1, 2, 2} {
			if err := h.Send(w, 0, 1, tag, put(uint64(10+i))); err != nil {
				return err
			}
		}
		// 2. 100 messages of tag 4.
		for i := range uint64(100) {
			if err := h.Send(w, 0, 1, 4, put(100+i)); err != nil {
				return err
			}
		}
		// 3, 4, 5: on cue, one each.
		for _, v := range []uint64{50, 51, 60, 61, 70} {
			if _, err := h.Recv(w, 1, 99, nil); err != nil {
				return err
			}
			if err := h.Send(w, 0, 1, int(v/10), put(v)); err != nil {
				return err
			}
		}
		return nil
	}
	buf := make([]byte, 8)
	recv := func(tag int, want uint64) error {
		st, err := h.Recv(w, 0, tag, buf)
		if err != nil {
			return fmt.Errorf("Recv tag %d: %w", tag, err)
		}
		if st.Count != 8 || st.Tag != int32(tag) || word(buf) != want {
			return fmt.Errorf("Recv tag %d: got %d, status %+v; want %d", tag, word(buf), st, want)
		}
		return nil
	}
	// 1. The tag-1 message at the head goes to the table; the Recv
	// of tag 2 gets the first tag-2 message, then tag 1, then the
	// second tag 2.
	if err := recv(2, 11); err != nil {
		return err
	}
	if err := recv(1, 10); err != nil {
		return err
	}
	if err := recv(2, 12); err != nil {
		return err
	}
	// 2. Part of the tag-4 messages are delivered into the table by
	// progress (the waits of an unrelated receive), part stay in the
	// ring: they are received in the order sent.
	var other endpoint.Request
	if err := h.IrecvInto(&other, w, 0, 50, buf); err != nil {
		return err
	}
	for range 20 {
		if other.Test() {
			return errors.New("a receive of tag 50 completed")
		}
	}
	for i := range uint64(100) {
		if err := recv(4, 100+i); err != nil {
			return err
		}
	}
	if !other.Cancel() {
		return errors.New("the receive of tag 50 could not be cancelled")
	}
	if err := h.Wait(&other); !errors.Is(err, endpoint.ErrCancelled) {
		return fmt.Errorf("the cancelled receive of tag 50: %v", err)
	}
	// 3, 4. A receive posted first, a wildcard one, then an exact one,
	// gets the first message of its tag; the Recv the second.
	for _, pf := range []struct {
		what          string
		src, tag      int
		first, second uint64
	}{
		{"a wildcard receive posted first", endpoint.AnySource, 5, 50, 51},
		{"an exact receive posted first", 0, 6, 60, 61},
	} {
		var first endpoint.Request
		fbuf := make([]byte, 8)
		if err := h.IrecvInto(&first, w, pf.src, pf.tag, fbuf); err != nil {
			return err
		}
		for range 2 {
			if err := h.Send(w, me, 0, 99, nil); err != nil {
				return err
			}
		}
		if err := recv(pf.tag, pf.second); err != nil {
			return err
		}
		if err := h.Wait(&first); err != nil || word(fbuf) != pf.first {
			return fmt.Errorf("%s: %v, got %d, want %d", pf.what, err, word(fbuf), pf.first)
		}
	}
	// 5. A message longer than the buffer truncates.
	if err := h.Send(w, me, 0, 99, nil); err != nil {
		return err
	}
	short := make([]byte, 4)
	st, err := h.Recv(w, 0, 7, short)
	var te *endpoint.TruncateError
	if !errors.As(err, &te) || st.Count != 4 || binary.LittleEndian.Uint32(short) != 70 {
		return fmt.Errorf("short Recv: %v, status %+v, bytes %x; want a truncation", err, st, short)
	}
	return nil
}

// Receives of one key from two workers of a process at once: a fiber whose
// blocking Recvs take from the ring while a fiber of the other worker posts
// wildcard receives and polls. Every message is received once, and each
// receiver gets them in the order sent (MPI's non-overtaking, receive by
// receive).
func TestTakeRecvBesideWildcards(t *testing.T) {
	const n = 3000
	inJob(t, 2, func(p *endpoint.Process) error {
		if p.Rank() == 0 {
			return runOn(p, 0, func(h *endpoint.Endpoint) error {
				w, buf := h.World(), make([]byte, 8)
				for k := range uint64(n) {
					binary.LittleEndian.PutUint64(buf, k)
					if err := h.Send(w, 0, 1, 4, buf); err != nil {
						return err
					}
				}
				// Then an empty message for each of process 1's
				// receivers: each ends one loop.
				for range 2 {
					if err := h.Send(w, 0, 1, 4, nil); err != nil {
						return err
					}
				}
				return nil
			})
		}
		got := make(chan []uint64, 2)
		recvLoop := func(wild bool) func(h *endpoint.Endpoint) error {
			return func(h *endpoint.Endpoint) error {
				w, buf := h.World(), make([]byte, 8)
				var seen []uint64
				defer func() { got <- seen }()
				for {
					var st endpoint.Status
					if wild {
						var r endpoint.Request
						if err := h.IrecvInto(&r, w, endpoint.AnySource, 4, buf); err != nil {
							return err
						}
						if err := h.Wait(&r); err != nil {
							return err
						}
						st = r.Status()
					} else {
						var err error
						if st, err = h.Recv(w, 0, 4, buf); err != nil {
							return err
						}
					}
					if st.Count == 0 {
						return nil
					}
					v := word(buf)
					if len(seen) > 0 && v <= seen[len(seen)-1] {
						return fmt.Errorf("wildcard receiver %t: message %d after %d", wild, v, seen[len(seen)-1])
					}
					seen = append(seen, v)
				}
			}
		}
		done := make(chan error, 2)
		go func() { done <- runOn(p, 0, recvLoop(false)) }()
		go func() { done <- runOn(p, 1, recvLoop(true)) }()
		for range 2 {
			if err := <-done; err != nil {
				return err
			}
		}
		all := append(<-got, <-got...)
		slices.Sort(all)
		for k, v := range all {
			if v != uint64(k) {
				return fmt.Errorf("received %d messages, the %dth is %d: lost or twice", len(all), k, v)
			}
		}
		if len(all) != n {
			return fmt.Errorf("received %d messages of %d", len(all), n)
		}
		return nil
	})
}

// runOn runs body as a fiber on worker i of p, registered with p's world
// endpoint, and returns its error (or one after a minute).
func runOn(p *endpoint.Process, i int, body func(h *endpoint.Endpoint) error) error {
	done := make(chan error, 1)
	if err := p.Scheduler().SpawnOn(i, func(f *fiber.Fiber) {
		h, err := p.World().Register(f.Waiter())
		if err != nil {
			done <- err
			return
		}
		defer h.Unregister()
		done <- body(h)
	}); err != nil {
		return err
	}
	select {
	case err := <-done:
		return err
	case <-time.After(time.Minute):
		return errors.New("no end in a minute")
	}
}
