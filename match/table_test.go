package match

import (
	"errors"
	"testing"
)

func newTable(t *testing.T, cfg Config) *Table[tmsg, trecv] {
	t.Helper()
	tb, err := New[tmsg, trecv](cfg)
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

func TestBadInput(t *testing.T) {
	tb := newTable(t, Config{NoAnySource: true})
	k := MustKey(0, 1, 2)
	if _, _, err := tb.Arrive(MustKey(0, AnySource, 2), &tmsg{}); !errors.Is(err, ErrWildcardKey) {
		t.Errorf("Arrive(wildcard) err = %v", err)
	}
	if _, _, err := tb.Arrive(k, nil); !errors.Is(err, ErrNilValue) {
		t.Errorf("Arrive(nil) err = %v", err)
	}
	if _, _, _, err := tb.Post(k, nil); !errors.Is(err, ErrNilValue) {
		t.Errorf("Post(nil) err = %v", err)
	}
	if _, _, _, err := tb.Post(MustKey(0, AnySource, 2), &trecv{}); !errors.Is(err, ErrWildcardNotAllowed) {
		t.Errorf("Post(AnySource) on NoAnySource err = %v", err)
	}
	if _, _, _, err := tb.Probe(MustKey(0, AnySource, 2)); !errors.Is(err, ErrWildcardNotAllowed) {
		t.Errorf("Probe(AnySource) on NoAnySource err = %v", err)
	}
	if _, _, _, err := tb.Insert(k, Item[tmsg, trecv]{Msg: &tmsg{}}); !errors.Is(err, ErrNeedsHints) {
		t.Errorf("Insert on a wildcard table err = %v", err)
	}
	if tb.Cancel(k, nil) {
		t.Error("Cancel(nil) = true")
	}
	// None of the rejected calls changed the table.
	if _, _, ok, _ := tb.Probe(k); ok {
		t.Error("a rejected call queued a message")
	}
	hinted := newTable(t, Config{NoAnySource: true, NoAnyTag: true})
	for _, it := range []Item[tmsg, trecv]{{}, {Msg: &tmsg{}, Recv: &trecv{}}} {
		if _, _, _, err := hinted.Insert(k, it); !errors.Is(err, ErrNilValue) {
			t.Errorf("Insert(%+v) err = %v", it, err)
		}
	}
	if _, _, _, err := hinted.Insert(MustKey(0, 1, AnyTag), Item[tmsg, trecv]{Msg: &tmsg{}}); !errors.Is(err, ErrWildcardKey) {
		t.Errorf("Insert(wildcard) err = %v", err)
	}
}

// TestOrder walks through the MPI ordering rules one by one.
func TestOrder(t *testing.T) {
	tb := newTable(t, Config{})
	a, b := MustKey(0, 1, 10), MustKey(0, 1, 11)
	m1, m2, m3 := &tmsg{id: 1}, &tmsg{id: 2}, &tmsg{id: 3}

	// Same key: FIFO.
	tb.Arrive(a, m1)
	tb.Arrive(a, m2)
	if m, _, _, _ := tb.Post(a, &trecv{}); m != m1 {
		t.Fatalf("same key: got %v, want m1", m)
	}
	if m, _, _, _ := tb.Post(a, &trecv{}); m != m2 {
		t.Fatalf("same key: got %v, want m2", m)
	}
	// AnyTag: earliest from the source across tags.
	tb.Arrive(b, m3)
	tb.Arrive(a, m1)
	if m, mk, _, _ := tb.Post(MustKey(0, 1, AnyTag), &trecv{}); m != m3 || mk != b {
		t.Fatalf("AnyTag: got %v %v, want m3 on %v", m, mk, b)
	}
	if m, mk, _, _ := tb.Probe(MustKey(0, AnySource, AnyTag)); m != m1 || mk != a {
		t.Fatalf("Probe: got %v %v, want m1 on %v", m, mk, a)
	}
	if m, _, _, _ := tb.Post(a, &trecv{}); m != m1 {
		t.Fatalf("after probe: got %v, want m1", m)
	}
	// Receives: wildcard posted first wins over a later exact one, and the
	// exact one posted first wins over a later wildcard.
	w, e := &trecv{id: 10}, &trecv{id: 11}
	tb.Post(MustKey(0, AnySource, 10), w)
	tb.Post(a, e)
	if r, _, _ := tb.Arrive(a, m1); r != w {
		t.Fatalf("wildcard first: got %v, want it", r)
	}
	tb.Post(MustKey(0, 1, AnyTag), w)
	if r, _, _ := tb.Arrive(a, m2); r != e {
		t.Fatalf("exact first: got %v, want it", r)
	}
	if !tb.Cancel(MustKey(0, 1, AnyTag), w) || tb.Cancel(MustKey(0, 1, AnyTag), w) {
		t.Fatal("Cancel of the pending wildcard receive should succeed once")
	}
	if tb.pendingWild() != 0 {
		t.Fatalf("%d wildcard receives counted after cancel", tb.pendingWild())
	}
	// Other contexts never match.
	tb.Post(MustKey(1, AnySource, AnyTag), w)
	if _, ok, _ := tb.Arrive(a, m3); ok {
		t.Fatal("a receive of context 1 matched a message of context 0")
	}
}

// TestInsertEmpty is Dang et al.'s protocol, both arrival orders, and Empty's
// claim semantics.
func TestInsertEmpty(t *testing.T) {
	tb := newTable(t, Config{NoAnySource: true, NoAnyTag: true})
	k := MustKey(3, 4, 5)
	m, r := &tmsg{id: 1}, &trecv{id: 2}

	// Message first.
	if _, _, stored, _ := tb.Insert(k, Item[tmsg, trecv]{Msg: m}); !stored {
		t.Fatal("first Insert not stored")
	}
	cur, s, stored, _ := tb.Insert(k, Item[tmsg, trecv]{Recv: r})
	if stored || cur.Msg != m {
		t.Fatalf("second Insert: stored %t cur %+v", stored, cur)
	}
	if !tb.Empty(s) || tb.Empty(s) {
		t.Fatal("Empty should claim the message exactly once")
	}
	// Receive first, then withdrawn by its own slot.
	_, s, stored, _ = tb.Insert(k, Item[tmsg, trecv]{Recv: r})
	if !stored || !tb.Empty(s) {
		t.Fatal("Insert then Empty of one's own receive")
	}
	// A Post that takes the head first makes the Empty fail.
	tb.Insert(k, Item[tmsg, trecv]{Msg: m})
	_, s, _, _ = tb.Insert(k, Item[tmsg, trecv]{Recv: r})
	if got, _, ok, _ := tb.Post(k, r); !ok || got != m {
		t.Fatal("Post did not take the message")
	}
	if tb.Empty(s) {
		t.Fatal("Empty claimed a message that Post took")
	}
	// Items behind an emptied head move up.
	m2 := &tmsg{id: 3}
	tb.Arrive(k, m)
	tb.Arrive(k, m2)
	_, s, _, _ = tb.Insert(k, Item[tmsg, trecv]{Recv: r})
	if !tb.Empty(s) {
		t.Fatal("Empty of the head")
	}
	if cur, _, stored, _ := tb.Insert(k, Item[tmsg, trecv]{Recv: r}); stored || cur.Msg != m2 {
		t.Fatalf("after Empty the next message should be the head, got %+v", cur)
	}
	if tb.Empty(Slot{}) {
		t.Fatal("Empty(Slot{}) = true")
	}
}

// TestListed checks the index of chains that may hold messages, which
// bounds what a wildcard Post scans: arrivals list their chain, a scan that
// finds no message there unlists it.
func TestListed(t *testing.T) {
	tb := newTable(t, Config{})
	msgs := make([]tmsg, 20)
	for i := range msgs {
		msgs[i].key = MustKey(0, int32(i), 0)
		tb.Arrive(msgs[i].key, &msgs[i])
	}
	if n := tb.listedChains(); n == 0 || n > len(msgs) {
		t.Fatalf("%d chains listed after %d arrivals", n, len(msgs))
	}
	for i := range msgs[:10] {
		tb.Post(msgs[i].key, &trecv{})
	}
	if _, _, ok, _ := tb.Probe(MustKey(0, AnySource, AnyTag)); !ok {
		t.Fatal("wildcard Probe found none of the 10 queued messages")
	}
	if n := tb.listedChains(); n == 0 || n > 10 {
		t.Fatalf("%d chains listed with 10 messages queued", n)
	}
	for i := range msgs[10:] {
		tb.Post(msgs[10+i].key, &trecv{})
	}
	if _, _, ok, _ := tb.Probe(MustKey(0, AnySource, AnyTag)); ok {
		t.Fatal("wildcard Probe found a message in an empty table")
	}
	if n := tb.listedChains(); n != 0 {
		t.Fatalf("%d chains still listed in an empty table", n)
	}
	// Tables without wildcards keep no index.
	if n := newTable(t, Config{NoAnySource: true, NoAnyTag: true}).listedChains(); n != 0 {
		t.Fatalf("hinted table lists %d chains", n)
	}
}
