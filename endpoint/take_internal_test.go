package endpoint

import (
	"errors"
	"testing"

	"github.com/fibermpi/fibermpi/fiber"
	"github.com/fibermpi/fibermpi/match"
	"github.com/fibermpi/fibermpi/rdma"
)

// A blocking Recv that takes its message from a transport itself
// (taking.TakeEager) takes exactly what its receive, posted at that
// moment, would match: not a message of another envelope, not one longer
// than its buffer, nothing while a receive posted before it (exact or
// wildcard) or a message that arrived before it waits in the table.
func TestTakingTakesWhatAPostWould(t *testing.T) {
	p, err := Init(ThreadMultiple, Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Finalize()
	h, err := p.World().Register(fiber.NewGoroutineWaiter())
	if err != nil {
		t.Fatal(err)
	}
	defer h.Unregister()
	w := h.World()
	key, ok := match.ExactKey(w.Context, 0, 7)
	if !ok {
		t.Fatal("no exact key")
	}
	buf := make([]byte, 8)
	tk := &taking{c: h.c, key: key, ctx: w.Context, src: 0, tag: 7, buf: buf}
	hd := rdma.EagerHeader{From: h.Addr(), Context: w.Context, Source: 0, Tag: 7}
	msg := []byte("8 bytes!")
	take := func(what string, h rdma.EagerHeader, data []byte, want bool) {
		t.Helper()
		clear(buf)
		if got := tk.TakeEager(h, data); got != want {
			t.Errorf("%s: TakeEager = %t, want %t", what, got, want)
		}
		if want && (tk.n != len(data) || string(buf[:tk.n]) != string(data)) {
			t.Errorf("%s: took %q (%d bytes), want %q", what, buf[:tk.n], tk.n, data)
		}
		if !want && string(buf) != string(make([]byte, 8)) {
			t.Errorf("%s: the buffer changed to %q without a take", what, buf)
		}
	}
	take("nothing in the table", hd, msg, true)
	other := hd
	other.Tag = 8
	take("another tag", other, msg, false)
	other = hd
	other.Source = 1
	take("another source", other, msg, false)
	other = hd
	other.Context++
	take("another context", other, msg, false)
	take("longer than the buffer", hd, []byte("nine bytes"), false)

	cancel := func(r *Request) {
		t.Helper()
		if !r.Cancel() {
			t.Fatal("a posted receive could not be cancelled")
		}
		if err := h.Wait(r); !errors.Is(err, ErrCancelled) {
			t.Fatalf("the cancelled receive: %v", err)
		}
	}
	var r Request
	if err := h.IrecvInto(&r, w, 0, 7, make([]byte, 8)); err != nil {
		t.Fatal(err)
	}
	take("an exact receive posted before", hd, msg, false)
	cancel(&r)
	if err := h.IrecvInto(&r, w, AnySource, 9, make([]byte, 8)); err != nil {
		t.Fatal(err)
	}
	take("a wildcard receive posted before (of another tag)", hd, msg, false)
	cancel(&r)
	take("the receives cancelled", hd, msg, true)

	// A message of the key that arrived before: Probe waits until it is
	// in the table.
	if err := h.Send(w, 0, 0, 7, []byte("earlier!")); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Probe(w, 0, 7); err != nil {
		t.Fatal(err)
	}
	take("a message of the key waiting", hd, msg, false)
	got := make([]byte, 8)
	if _, err := h.Recv(w, 0, 7, got); err != nil || string(got) != "earlier!" {
		t.Fatalf("the waiting message: %v, %q", err, got)
	}
	take("the table empty again", hd, msg, true)
}
