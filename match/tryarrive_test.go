package match

import (
	"errors"
	"testing"
)

// TryArrive matches like Arrive and never queues.
func TestTryArrive(t *testing.T) {
	tb, err := New[int, int](Config{})
	if err != nil {
		t.Fatal(err)
	}
	k := MustKey(1, 2, 3)
	if _, ok, err := tb.TryArrive(k); ok || err != nil {
		t.Fatalf("TryArrive on an empty table: %v %v", ok, err)
	}
	if _, _, ok, _ := tb.Probe(k); ok {
		t.Fatal("TryArrive queued a message")
	}
	if _, ok, err := tb.TryArrive(MustKey(1, AnySource, 3)); ok || !errors.Is(err, ErrWildcardKey) {
		t.Fatalf("TryArrive with a wildcard key: %v %v", ok, err)
	}
	// Two receives, then an exact and a wildcard: earliest posted first.
	r1, r2, rw := 1, 2, 3
	for _, post := range []struct {
		k Key
		r *int
	}{{k, &r1}, {MustKey(1, AnySource, 3), &rw}, {k, &r2}} {
		if _, _, ok, err := tb.Post(post.k, post.r); ok || err != nil {
			t.Fatal(ok, err)
		}
	}
	for _, want := range []*int{&r1, &rw, &r2} {
		got, ok, err := tb.TryArrive(k)
		if !ok || err != nil || got != want {
			t.Fatalf("TryArrive = %v %v %v, want receive %d", got, ok, err, *want)
		}
	}
	if _, ok, _ := tb.TryArrive(k); ok {
		t.Fatal("TryArrive matched a receive twice")
	}
	// With a message queued for k, no receive can be posted, so TryArrive
	// finds nothing and a real Arrive queues behind the first message.
	m1, m2 := 10, 20
	tb.Arrive(k, &m1)
	if _, ok, _ := tb.TryArrive(k); ok {
		t.Fatal("TryArrive matched with only a message queued")
	}
	tb.Arrive(k, &m2)
	for _, want := range []*int{&m1, &m2} {
		var r int
		got, _, ok, _ := tb.Post(k, &r)
		if !ok || got != want {
			t.Fatalf("order after TryArrive: got %v, want %d", got, *want)
		}
	}
}

// Leads: only the first receive of an exact key, and only while no
// wildcard receive is posted.
func TestLeads(t *testing.T) {
	tb, err := New[int, int](Config{})
	if err != nil {
		t.Fatal(err)
	}
	k, other := MustKey(1, 2, 3), MustKey(1, 2, 4)
	r1, r2, rw := 1, 2, 3
	if tb.Leads(k, &r1) {
		t.Fatal("Leads for a receive never posted")
	}
	tb.Post(k, &r1)
	tb.Post(k, &r2)
	if !tb.Leads(k, &r1) || tb.Leads(k, &r2) || tb.Leads(other, &r1) {
		t.Fatal("Leads: want the first receive of k only")
	}
	if tb.Leads(MustKey(1, AnySource, 3), &r1) {
		t.Fatal("Leads with a wildcard key")
	}
	wk := MustKey(1, 2, AnyTag)
	tb.Post(wk, &rw)
	if tb.Leads(k, &r1) {
		t.Fatal("Leads while a wildcard receive is posted")
	}
	if !tb.Cancel(wk, &rw) || !tb.Leads(k, &r1) {
		t.Fatal("Leads after the wildcard was cancelled")
	}
	m := 10
	if got, ok, _ := tb.Arrive(k, &m); !ok || got != &r1 {
		t.Fatal("the message did not go to the leading receive")
	}
	if !tb.Leads(k, &r2) {
		t.Fatal("the second receive does not lead once the first matched")
	}
}
