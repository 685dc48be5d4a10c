package endpoint

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/fibermpi/fibermpi/fiber"
)

// The reference model: MPI's posted-receive and unexpected-message lists.
type modelMsg struct{ id, src, tag int }
type modelRecv struct{ id, src, tag int } // src, tag may be wildcards

func (r modelRecv) matches(m modelMsg) bool {
	return (r.src == AnySource || r.src == m.src) && (r.tag == AnyTag || r.tag == m.tag)
}

// TestMatchingAgainstModel drives random sends (eager and rendezvous, from
// three ranks) and receives (exact and wildcard, at rank 0) from one
// goroutine registered with every endpoint. The in-process transport
// delivers synchronously, so after each step the set of completed receives
// is fixed, and it is checked against the lists of the model. Where MPI
// leaves a choice open (which source an AnySource receive takes), the test
// checks the choice is legal and follows it.
//
// It runs in process (inproc: a send fills a posted receive directly) and
// over remote, which hides that, so receives offer their buffers (offer.go):
// at ThreadSerialized the senders use the offers, at ThreadMultiple they
// drop them.
func TestMatchingAgainstModel(t *testing.T) {
	for _, tr := range []string{"inproc", "remote"} {
		for _, level := range []ThreadLevel{ThreadSerialized, ThreadMultiple} {
			for _, lim := range []int{-1, 0} {
				for seed := range uint64(10) {
					name := fmt.Sprintf("%s/%v/eager=%d/seed=%d", tr, level, lim, seed)
					t.Run(name, func(t *testing.T) {
						opts := Options{Workers: 1, EagerLimit: lim}
						if tr == "remote" {
							opts.Transport = newRemote()
						}
						matchingAgainstModel(t, level, opts, seed)
					})
				}
			}
		}
	}
}

func matchingAgainstModel(t *testing.T, level ThreadLevel, opts Options, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	p, eps := newJob(t, level, opts, 4)
	defer p.Finalize()
	var h [4]*Endpoint
	for i, ep := range eps {
		var err error
		if h[i], err = ep.Register(fiber.NewGoroutineWaiter()); err != nil {
			t.Fatal(err)
		}
	}
	w := h[0].World()

	var posted []modelRecv
	var unexpected []modelMsg
	reqs := map[int]*Request{} // receive id → request
	bufs := map[int][]byte{}
	seen := map[int]bool{} // receive ids already accounted for
	var sends []*Request
	nextMsg, nextRecv := 0, 0

	// completed returns the receives that completed since the last call,
	// with the message id each got.
	completed := func() map[int]int {
		out := map[int]int{}
		for id, r := range reqs {
			if !seen[id] && r.Test() {
				seen[id] = true
				if r.status.Err != nil {
					t.Fatalf("receive %d: %v", id, r.status.Err)
				}
				out[id] = int(binary.LittleEndian.Uint32(bufs[id]))
			}
		}
		return out
	}
	// earliestFrom reports whether message index i of unexpected is the
	// earliest message from its source that r matches.
	earliestFrom := func(r modelRecv, i int) bool {
		for j := range i {
			if unexpected[j].src == unexpected[i].src && r.matches(unexpected[j]) {
				return false
			}
		}
		return r.matches(unexpected[i])
	}

	for step := range 300 {
		if rng.IntN(2) == 0 { // send
			m := modelMsg{id: nextMsg, src: 1 + rng.IntN(3), tag: rng.IntN(3)}
			nextMsg++
			size := 4 + rng.IntN(16)
			if rng.IntN(4) == 0 {
				size = 9000 // rendezvous at the default limit
			}
			data := make([]byte, size)
			binary.LittleEndian.PutUint32(data, uint32(m.id))
			r, err := h[m.src].Isend(w, m.src, 0, m.tag, data)
			if err != nil {
				t.Fatal(err)
			}
			sends = append(sends, r)
			done := completed()
			// The model: the earliest posted receive that matches.
			want := -1
			for i, pr := range posted {
				if pr.matches(m) {
					want = i
					break
				}
			}
			if want < 0 {
				if len(done) != 0 {
					t.Fatalf("step %d: message %+v completed %v, model has no receive for it", step, m, done)
				}
				unexpected = append(unexpected, m)
				continue
			}
			if got, ok := done[posted[want].id]; !ok || got != m.id || len(done) != 1 {
				t.Fatalf("step %d: message %+v should complete receive %+v; completed %v", step, m, posted[want], done)
			}
			posted = append(posted[:want], posted[want+1:]...)
		} else { // receive
			r := modelRecv{id: nextRecv, src: 1 + rng.IntN(3), tag: rng.IntN(3)}
			nextRecv++
			if rng.IntN(3) == 0 {
				r.src = AnySource
			}
			if rng.IntN(3) == 0 {
				r.tag = AnyTag
			}
			bufs[r.id] = make([]byte, 10_000)
			req, err := h[0].Irecv(w, r.src, r.tag, bufs[r.id])
			if err != nil {
				t.Fatal(err)
			}
			reqs[r.id] = req
			done := completed()
			got, ok := done[r.id]
			if !ok {
				for i := range unexpected {
					if r.matches(unexpected[i]) {
						t.Fatalf("step %d: receive %+v pending though %+v had arrived", step, r, unexpected[i])
					}
				}
				posted = append(posted, r)
				continue
			}
			i := -1
			for j, m := range unexpected {
				if m.id == got {
					i = j
				}
			}
			if i < 0 || !earliestFrom(r, i) {
				t.Fatalf("step %d: receive %+v got message %d, not the earliest matching from its source in %v", step, r, got, unexpected)
			}
			if int(reqs[r.id].status.Source) != unexpected[i].src || int(reqs[r.id].status.Tag) != unexpected[i].tag {
				t.Fatalf("step %d: status %+v for message %+v", step, reqs[r.id].status, unexpected[i])
			}
			unexpected = append(unexpected[:i], unexpected[i+1:]...)
		}
	}
	// Drain: every unexpected message must be receivable, and every send
	// complete once received.
	for range unexpected {
		buf := make([]byte, 10_000)
		if _, err := h[0].Recv(w, AnySource, AnyTag, buf); err != nil {
			t.Fatal(err)
		}
	}
	for _, pr := range posted {
		// Delivery is synchronous: an offered receive's withdrawal is
		// answered within Cancel too.
		if !reqs[pr.id].Cancel() || !reqs[pr.id].Test() || !errors.Is(reqs[pr.id].status.Err, ErrCancelled) {
			t.Fatalf("posted receive %+v could not be cancelled", pr)
		}
	}
	if err := WaitAll(h[1].Waiter(), sends...); err != nil {
		t.Fatal(err)
	}
}
