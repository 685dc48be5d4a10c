package endpoint

import (
	"bytes"
	"fmt"
	"sync"
	"testing"

	"github.com/fibermpi/fibermpi/packet"
	"github.com/fibermpi/fibermpi/rdma"
	"github.com/fibermpi/fibermpi/rdma/inproc"
)

// remote is the in-process transport seen as one between processes: it
// delivers synchronously but does not implement rdma.Local, so senders
// cannot fill posted receives themselves and receives offer their buffers
// (offer.go). It counts the packets it carries, by kind.
type remote struct {
	rdma.Transport
	mu    sync.Mutex
	kinds map[packet.Kind]int
}

func newRemote() *remote {
	return &remote{Transport: inproc.New(), kinds: make(map[packet.Kind]int)}
}

func (t *remote) Send(w int, to rdma.Addr, pk *packet.Packet) error {
	t.mu.Lock()
	t.kinds[pk.Kind]++
	t.mu.Unlock()
	return t.Transport.Send(w, to, pk)
}

// count returns the packets of each kind carried so far and resets them.
func (t *remote) count() map[packet.Kind]int {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := t.kinds
	t.kinds = make(map[packet.Kind]int)
	return out
}

// queued is a transport that delivers nothing by itself: Send queues the
// packet and Progress delivers what is queued, as a transport between
// processes would. It proves each progress mode really drives delivery. It
// is not an rdma.Local (the embedded Transport is the interface), so
// receives offer their buffers.
//
// Progress delivers under deliverMu, so that packets reach their receivers
// in the order they were sent even when several workers poll at once (the
// rdma ordering contract).
//
// With limit > 0 it holds at most limit packets and refuses more with
// rdma.ErrAgain, as a full ring or socket does: the endpoint's backlog then
// holds them (backlog.go).
type queued struct {
	rdma.Transport
	limit     int
	mu        sync.Mutex
	q         []queuedPacket
	deliverMu sync.Mutex
	refused   int // sends refused with ErrAgain
}

type queuedPacket struct {
	to rdma.Addr
	pk *packet.Packet
}

func (t *queued) Send(w int, to rdma.Addr, pk *packet.Packet) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.limit > 0 && len(t.q) >= t.limit {
		t.refused++
		return rdma.ErrAgain
	}
	t.q = append(t.q, queuedPacket{to, pk})
	return nil
}

func (t *queued) Progress(w int) int {
	t.deliverMu.Lock()
	defer t.deliverMu.Unlock()
	t.mu.Lock()
	q := t.q
	t.q = nil
	t.mu.Unlock()
	for _, e := range q {
		if err := t.Transport.Send(w, e.to, e.pk); err != nil {
			panic(err)
		}
	}
	return len(q)
}

func TestProgressModes(t *testing.T) {
	for _, mode := range []ProgressMode{ProgressIdle, ProgressServer, ProgressCaller} {
		for _, lim := range []int{-1, 0} {
			for _, qlim := range []int{0, 1} {
				t.Run(fmt.Sprintf("%v/eager=%d/queue=%d/fibers", mode, lim, qlim), func(t *testing.T) {
					opts := Options{Workers: 2, EagerLimit: lim, Progress: mode, Transport: &queued{Transport: inproc.New(), limit: qlim}}
					if err := RunWith(ThreadSingle, opts, 2, pingPong); err != nil {
						t.Fatal(err)
					}
				})
				t.Run(fmt.Sprintf("%v/eager=%d/queue=%d/goroutines", mode, lim, qlim), func(t *testing.T) {
					opts := Options{Workers: 1, EagerLimit: lim, Progress: mode, Transport: &queued{Transport: inproc.New(), limit: qlim}}
					if err := RunGoroutinesWith(ThreadSingle, opts, 2, pingPong); err != nil {
						t.Fatal(err)
					}
				})
			}
		}
	}
}

// pingPong exchanges a few messages of growing size between ranks 0 and 1.
func pingPong(ep *Endpoint) error {
	w := ep.World()
	me, peer := ep.Rank(), 1-ep.Rank()
	for i, n := range []int{1, 100, 20_000} {
		buf := make([]byte, n)
		if me == 0 {
			if err := ep.Send(w, me, peer, i, pattern(n, i)); err != nil {
				return err
			}
			if _, err := ep.Recv(w, peer, i, buf); err != nil {
				return err
			}
		} else {
			if _, err := ep.Recv(w, peer, i, buf); err != nil {
				return err
			}
			if err := ep.Send(w, me, peer, i, buf); err != nil {
				return err
			}
		}
		if !bytes.Equal(buf, pattern(n, i)) {
			return fmt.Errorf("rank %d, message %d: data differs", me, i)
		}
	}
	return nil
}

func TestOptionsString(t *testing.T) {
	s := Options{Progress: ProgressServer, EagerLimit: -1}.String()
	for _, want := range []string{"progress=server", "eager<=-1B", "transport=inproc"} {
		if !bytes.Contains([]byte(s), []byte(want)) {
			t.Errorf("Options.String() = %q, missing %q", s, want)
		}
	}
	if err := (Options{Progress: 7}).Validate(); err == nil {
		t.Error("Progress mode 7 accepted")
	}
	if err := (Options{EagerLimit: 1 << 20}).Validate(); err == nil {
		t.Error("EagerLimit above PayloadSize accepted")
	}
}
