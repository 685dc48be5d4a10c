//go:build linux

package shm

import (
	"testing"
	"time"
)

// TestPutPace: the choice between the rings and cross-memory attach for
// large Puts, against a clock of its own.
func TestPutPace(t *testing.T) {
	var p putPace
	t0 := time.Unix(1000, 0)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	choose := func(n int, now time.Time) bool {
		t.Helper()
		attach, measure := p.choose(n, now)
		if measure != (n >= paceMin) {
			t.Fatalf("a Put of %d bytes at %v outside a probe: measure %v", n, now.Sub(t0), measure)
		}
		return attach
	}
	if choose(paceMin-1, t0) {
		t.Fatal("a Put below paceMin went by attach")
	}
	if choose(paceMin, t0) {
		t.Fatal("the first Put went by attach; want the rings")
	}
	if choose(paceMin, at(paceFirst/2)) {
		t.Fatal("a Put before the first probe went by attach")
	}
	// The first probe: paceProbePuts Puts by attach, the first
	// paceProbeCold of them not measured.
	for i := range paceProbePuts {
		attach, measure := p.choose(paceMin, at(paceFirst))
		if !attach {
			t.Fatalf("probe Put %d did not go by attach", i)
		}
		if measure != (i >= paceProbeCold) {
			t.Fatalf("probe Put %d: measure %v, want %v (the first %d are not measured)", i, measure, !measure, paceProbeCold)
		}
	}
	if choose(paceMin, at(paceFirst)) {
		t.Fatal("the probe went on past paceProbePuts Puts")
	}
	p.record(false, 1<<20, 52*time.Microsecond) // a ring Put ending meanwhile
	p.record(true, 1<<20, 131*time.Microsecond) // 8 GB/s
	p.record(false, 1<<20, 52*time.Microsecond) // 20 GB/s
	if choose(paceMin, at(paceFirst+time.Millisecond)) {
		t.Fatal("attach chosen with the rings measured faster")
	}
	// The rings slow down (the CPUs moved apart): attach wins.
	for range 8 {
		p.record(false, 1<<20, 300*time.Microsecond) // 3.5 GB/s
	}
	if !choose(paceMin, at(paceFirst+2*time.Millisecond)) {
		t.Fatalf("the rings chosen at %.2f GB/s against attach's %.2f", p.ring, p.attach)
	}
	if choose(paceMin-1, at(paceFirst+2*time.Millisecond)) {
		t.Fatal("a Put below paceMin went by attach")
	}
	// The next probe tries the rings again, for paceProbePuts Puts.
	for i := range paceProbePuts {
		if attach, _ := p.choose(paceMin, at(paceFirst+paceProbe)); attach {
			t.Fatalf("probe Put %d of the rings one paceProbe after the last went by attach", i)
		}
	}
	if !choose(paceMin, at(paceFirst+paceProbe)) {
		t.Fatal("the rings chosen after the probe ended")
	}
	// A slow Put weighs by its time: averaging the time per byte, one
	// Put at a tenth of the average speed takes it from 1 to about 0.31
	// B/ns (averaging rates would give 0.78).
	q := putPace{ring: 1}
	q.record(false, 1000, 10*time.Microsecond) // 0.1 B/ns
	if q.ring > 0.35 {
		t.Fatalf("ring average %.3f B/ns after a Put at a tenth of 1 B/ns; want the time per byte averaged", q.ring)
	}
}

// TestReadTook: a readTook word gives its service time back to its own
// read only, whatever the read's number, and clamps what it cannot hold.
func TestReadTook(t *testing.T) {
	for _, seq := range []uint64{1, 7, 8, 1<<readSeqBits - 1, 1 << readSeqBits, 1<<readSeqBits + 5, 1<<40 + 3} {
		w := packTook(seq, 1234*time.Nanosecond)
		if d, ok := tookOf(w, seq); !ok || d != 1234 {
			t.Errorf("read %d: tookOf gave %v, %v; want 1.234µs, true", seq, d, ok)
		}
		if _, ok := tookOf(w, seq+readSlots); ok {
			t.Errorf("read %d's word taken for read %d's", seq, seq+readSlots)
		}
	}
	if d, ok := tookOf(packTook(3, -time.Second), 3); !ok || d != 0 {
		t.Errorf("a negative time gave %v, %v; want 0, true", d, ok)
	}
	if d, ok := tookOf(packTook(3, time.Hour), 3); !ok || d != 1<<readTookBits-1 {
		t.Errorf("an hour gave %v, %v; want %v, true", d, ok, time.Duration(1<<readTookBits-1))
	}
	if _, ok := tookOf(0, 1); ok {
		t.Error("a slot never written taken for read 1's")
	}
}

// TestSplitAt: a split Put's two parts, the sender's on a page, the
// owner's at most splitOwnerMax.
func TestSplitAt(t *testing.T) {
	for _, c := range []struct{ n, at int }{
		{64 << 10, 32 << 10},
		{100_000, 49152},
		{1 << 20, 512 << 10},
		{8 << 20, 4 << 20},
		{9 << 20, 5 << 20},
		{1 << 30, 1<<30 - splitOwnerMax},
	} {
		if at := splitAt(c.n); at != c.at {
			t.Errorf("splitAt(%d) = %d, want %d", c.n, at, c.at)
		}
	}
}
