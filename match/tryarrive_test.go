package match

import (
	"errors"
	"testing"
	"time"
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

// TryArriveRun takes what that many TryArrive calls would, in the same
// order, under any mix of exact and wildcard receives, queued messages
// and Cancels; while a wildcard is posted, at most one. Two tables get the
// same operations; one takes runs, the other goes message by message.
func TestTryArriveRunModel(t *testing.T) {
	var long, wildRuns int // runs that took two or more; runs with a wildcard posted
	defer func() {
		t.Logf("runs of two or more: %d; runs with a wildcard posted: %d", long, wildRuns)
		if long == 0 || wildRuns == 0 {
			t.Error("the model never made a run of two or more, or never one with a wildcard posted")
		}
	}()
	for seed := range uint64(20) {
		run, ref := newIntTable(t), newIntTable(t)
		keys := []Key{MustKey(1, 0, 0), MustKey(1, 0, 1), MustKey(1, 1, 0)}
		wild := []Key{MustKey(1, AnySource, 0), MustKey(1, 0, AnyTag)}
		recvs := make([]int, 4000)
		next := 0
		rng := seed*0x9E3779B97F4A7C15 + 1
		rand := func(n int) int {
			rng ^= rng << 13
			rng ^= rng >> 7
			rng ^= rng << 17
			return int(rng % uint64(n))
		}
		var rs [40]*int
		for step := 0; step < 3000 && next < len(recvs)-1; step++ {
			switch op := rand(10); {
			case op < 5: // post a receive, now and then a wildcard one
				k := keys[rand(len(keys))]
				if rand(8) == 0 {
					k = wild[rand(len(wild))]
				}
				r := &recvs[next]
				next++
				_, _, ok1, err1 := run.Post(k, r)
				_, _, ok2, err2 := ref.Post(k, r)
				if ok1 != ok2 || err1 != nil || err2 != nil {
					t.Fatalf("seed %d step %d: Post: %v %v / %v %v", seed, step, ok1, err1, ok2, err2)
				}
			case op < 6: // a message that queues (no receive: kept for later Posts)
				k := keys[rand(len(keys))]
				m := &recvs[next]
				next++
				r1, ok1, _ := run.Arrive(k, m)
				r2, ok2, _ := ref.Arrive(k, m)
				if ok1 != ok2 || r1 != r2 {
					t.Fatalf("seed %d step %d: Arrive: %v %v / %v %v", seed, step, r1, ok1, r2, ok2)
				}
			default: // a run of 1 to 40 messages with one key
				k := keys[rand(len(keys))]
				l := 1 + rand(len(rs))
				hadWild := wildPosted(ref)
				n, err := run.TryArriveRun(k, rs[:l])
				if err != nil || n < 0 || n > l {
					t.Fatalf("seed %d step %d: TryArriveRun(%d) = %d, %v", seed, step, l, n, err)
				}
				for i := range n {
					r, ok, _ := ref.TryArrive(k)
					if !ok || r != rs[i] {
						t.Fatalf("seed %d step %d: message %d of a run of %d went to %p, TryArrive gives %p (%v)", seed, step, i, l, rs[i], r, ok)
					}
				}
				if n > 1 {
					long++
				}
				if hadWild {
					wildRuns++
				}
				if hadWild && n > 1 {
					t.Fatalf("seed %d step %d: TryArriveRun took %d with a wildcard posted", seed, step, n)
				}
				if n < l && !hadWild {
					if r, ok, _ := ref.TryArrive(k); ok {
						t.Fatalf("seed %d step %d: TryArriveRun stopped at %d of %d, but a receive (%p) was posted", seed, step, n, l, r)
					}
				}
			}
		}
		// Both tables hold the same receives still: match them all.
		for _, k := range keys {
			for {
				r1, ok1, _ := run.TryArrive(k)
				r2, ok2, _ := ref.TryArrive(k)
				if ok1 != ok2 || r1 != r2 {
					t.Fatalf("seed %d: what is left differs: %p %v / %p %v", seed, r1, ok1, r2, ok2)
				}
				if !ok1 {
					break
				}
			}
		}
	}
}

func newIntTable(t *testing.T) *Table[int, int] {
	t.Helper()
	tb, err := New[int, int](Config{})
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

// wildPosted reports whether tb holds a posted wildcard receive.
func wildPosted(tb *Table[int, int]) bool { return tb.c.wild.Load() != 0 }

// Vacate holds an exact key's chain only while nothing is queued or posted
// under it and no wildcard receive is posted; while it holds, a Post of
// the key waits for Release.
func TestVacate(t *testing.T) {
	tb, err := New[int, int](Config{})
	if err != nil {
		t.Fatal(err)
	}
	k, other := MustKey(1, 2, 3), MustKey(1, 2, 4)
	vacant := func(what string, want bool) {
		t.Helper()
		v, ok := tb.Vacate(k)
		if ok != want {
			t.Fatalf("%s: Vacate = %t, want %t", what, ok, want)
		}
		if ok {
			v.Release()
		}
	}
	vacant("empty table", true)
	if _, ok := tb.Vacate(MustKey(1, AnySource, 3)); ok {
		t.Fatal("Vacate held a wildcard key")
	}
	m := 7
	if _, _, err := tb.Arrive(other, &m); err != nil {
		t.Fatal(err)
	}
	vacant("a message of another key queued", true)
	if _, _, err := tb.Arrive(k, &m); err != nil {
		t.Fatal(err)
	}
	vacant("a message of the key queued", false)
	if got, _, ok, err := tb.Post(k, new(int)); !ok || err != nil || got != &m {
		t.Fatalf("Post after the message: %v %v %v", got, ok, err)
	}
	vacant("the message taken", true)
	r := 1
	if _, _, ok, err := tb.Post(k, &r); ok || err != nil {
		t.Fatal(ok, err)
	}
	vacant("a receive of the key posted", false)
	if got, ok, _ := tb.TryArrive(k); !ok || got != &r {
		t.Fatal("the posted receive was not there")
	}
	rw := 2
	if _, _, ok, err := tb.Post(MustKey(1, AnySource, 9), &rw); ok || err != nil {
		t.Fatal(ok, err)
	}
	vacant("a wildcard receive of another tag posted", false)
	if got, ok, _ := tb.TryArrive(MustKey(1, 5, 9)); !ok || got != &rw {
		t.Fatal("the wildcard receive was not there")
	}
	vacant("the wildcard taken", true)

	// A Post of the key waits while Vacate holds.
	v, ok := tb.Vacate(k)
	if !ok {
		t.Fatal("Vacate refused an empty table")
	}
	posted := make(chan struct{})
	go func() {
		r := 3
		_, _, _, _ = tb.Post(k, &r)
		close(posted)
	}()
	select {
	case <-posted:
		t.Fatal("a Post of the key went through the hold")
	case <-time.After(20 * time.Millisecond):
	}
	v.Release()
	<-posted
	vacant("a receive posted after the hold", false)
}
