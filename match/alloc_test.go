package match

import (
	"fmt"
	"testing"
)

// TestZeroAlloc asserts that the steady state allocates nothing: a message
// meeting its receive in either order, with the same key queued twice (the
// FIFO's nodes come from the free list), through an overflow chain, with a
// wildcard receive, and Dang et al.'s Insert/Empty.
func TestZeroAlloc(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	m1, m2 := &tmsg{}, &tmsg{}
	r1, r2 := &trecv{}, &trecv{}
	k := MustKey(0, 1, 2)
	wk := MustKey(0, AnySource, 2)
	must := func(ok bool, what string) {
		if !ok {
			panic("no match: " + what)
		}
	}
	cases := []struct {
		name string
		cfg  Config
		op   func(tb *Table[tmsg, trecv])
	}{
		{"message-first", Config{}, func(tb *Table[tmsg, trecv]) {
			tb.Arrive(k, m1)
			_, _, ok, _ := tb.Post(k, r1)
			must(ok, "post")
		}},
		{"receive-first", Config{}, func(tb *Table[tmsg, trecv]) {
			tb.Post(k, r1)
			_, ok, _ := tb.Arrive(k, m1)
			must(ok, "arrive")
		}},
		{"hinted", Config{NoAnySource: true, NoAnyTag: true}, func(tb *Table[tmsg, trecv]) {
			tb.Arrive(k, m1)
			_, _, ok, _ := tb.Post(k, r1)
			must(ok, "post")
		}},
		{"same-key-twice", Config{}, func(tb *Table[tmsg, trecv]) {
			tb.Arrive(k, m1)
			tb.Arrive(k, m2)
			_, _, ok1, _ := tb.Post(k, r1)
			_, _, ok2, _ := tb.Post(k, r2)
			must(ok1 && ok2, "posts")
		}},
		{"wildcard", Config{}, func(tb *Table[tmsg, trecv]) {
			tb.Post(wk, r1)
			_, ok, _ := tb.Arrive(k, m1)
			must(ok, "arrive")
		}},
		{"insert-empty", Config{NoAnySource: true, NoAnyTag: true}, func(tb *Table[tmsg, trecv]) {
			tb.Insert(k, Item[tmsg, trecv]{Msg: m1})
			_, s, _, _ := tb.Insert(k, Item[tmsg, trecv]{Recv: r1})
			must(tb.Empty(s), "empty")
		}},
	}
	for _, c := range cases {
		for _, collide := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/collide=%t", c.name, collide), func(t *testing.T) {
				var tb *Table[tmsg, trecv]
				if collide {
					tb = newCollide[tmsg, trecv](c.cfg)
					for i := range 10 { // a chain of four buckets in front
						tb.Arrive(MustKey(5, int32(i), 0), &tmsg{})
					}
				} else {
					tb, _ = New[tmsg, trecv](c.cfg)
				}
				c.op(tb) // warm up: free list, overflow buckets
				if a := testing.AllocsPerRun(1000, func() { c.op(tb) }); a != 0 {
					t.Errorf("%v allocations per operation, want 0", a)
				}
			})
		}
	}
}
