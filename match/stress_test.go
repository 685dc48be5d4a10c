package match

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
)

// smsg and srecv carry what the stress tests check: who matched whom.
type smsg struct {
	src, seq int
	taken    atomic.Int32
}

type srecv struct {
	got atomic.Pointer[smsg]
}

// deliver records that r got m, failing on a double delivery.
func deliver(t *testing.T, r *srecv, m *smsg) {
	if !r.got.CompareAndSwap(nil, m) {
		t.Errorf("receive matched twice")
	}
	if m.taken.Add(1) != 1 {
		t.Errorf("message src %d seq %d delivered twice", m.src, m.seq)
	}
}

// TestStressExact has, per source, a sender goroutine arriving messages
// over a few tags and a receiver goroutine posting receives for the same
// tags in the same order, all at once. With FIFO per key the j-th receive
// of a key must get the j-th message of that key, whatever the
// interleaving.
func TestStressExact(t *testing.T) {
	for _, cfg := range []Config{{}, {NoAnySource: true, NoAnyTag: true}, {Expected: 1}} {
		for _, collide := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v/collide=%t", cfg, collide), func(t *testing.T) {
				stressExact(t, cfg, collide)
			})
		}
	}
}

func stressExact(t *testing.T, cfg Config, collide bool) {
	const sources, tags = 4, 3
	n := 3000
	if testing.Short() {
		n = 500
	}
	var tb *Table[smsg, srecv]
	if collide {
		tb = newCollide[smsg, srecv](cfg)
	} else {
		tb, _ = New[smsg, srecv](cfg)
	}
	msgs := make([][]smsg, sources)
	recvs := make([][]srecv, sources)
	var wg sync.WaitGroup
	for s := range sources {
		msgs[s] = make([]smsg, n)
		recvs[s] = make([]srecv, n)
		wg.Add(2)
		go func() { // sender
			defer wg.Done()
			for i := range msgs[s] {
				m := &msgs[s][i]
				m.src, m.seq = s, i
				r, ok, err := tb.Arrive(MustKey(0, int32(s), int32(i%tags)), m)
				if err != nil {
					t.Error(err)
					return
				}
				if ok {
					deliver(t, r, m)
				}
			}
		}()
		go func() { // receiver
			defer wg.Done()
			for i := range recvs[s] {
				r := &recvs[s][i]
				m, _, ok, err := tb.Post(MustKey(0, int32(s), int32(i%tags)), r)
				if err != nil {
					t.Error(err)
					return
				}
				if ok {
					deliver(t, r, m)
				}
			}
		}()
	}
	wg.Wait()
	for s := range sources {
		for i := range recvs[s] {
			m := recvs[s][i].got.Load()
			if m == nil || m.src != s || m.seq != i {
				t.Fatalf("source %d receive %d got %+v, want message %d", s, i, m, i)
			}
		}
	}
}

// TestStressWildcard mixes senders, exact receivers on context 0 and one
// AnySource/AnyTag receiver on context 1, plus cancels. Every message must be
// delivered exactly once, and the wildcard receiver must see each source's
// messages in the order they were sent.
func TestStressWildcard(t *testing.T) {
	for _, collide := range []bool{false, true} {
		t.Run(fmt.Sprintf("collide=%t", collide), func(t *testing.T) {
			stressWildcard(t, collide)
		})
	}
}

func stressWildcard(t *testing.T, collide bool) {
	const sources, tags = 3, 4
	n := 1500
	if testing.Short() {
		n = 300
	}
	var tb *Table[smsg, srecv]
	if collide {
		tb = newCollide[smsg, srecv](Config{})
	} else {
		tb, _ = New[smsg, srecv](Config{})
	}
	// Context 1: each sender sends n messages; the wildcard receiver posts
	// sources*n receives (and cancels some, reposting them).
	wmsgs := make([][]smsg, sources)
	// Context 0: exact traffic alongside, per source.
	emsgs := make([][]smsg, sources)
	erecvs := make([][]srecv, sources)
	wrecvs := make([]srecv, sources*n)
	var wg sync.WaitGroup
	for s := range sources {
		wmsgs[s] = make([]smsg, n)
		emsgs[s] = make([]smsg, n)
		erecvs[s] = make([]srecv, n)
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := range n {
				for _, ctx := range []uint32{1, 0} {
					m := &wmsgs[s][i]
					if ctx == 0 {
						m = &emsgs[s][i]
					}
					m.src, m.seq = s, i
					r, ok, err := tb.Arrive(MustKey(ctx, int32(s), int32(i%tags)), m)
					if err != nil {
						t.Error(err)
						return
					}
					if ok {
						deliver(t, r, m)
					}
				}
			}
		}()
		go func() {
			defer wg.Done()
			for i := range n {
				r := &erecvs[s][i]
				m, _, ok, err := tb.Post(MustKey(0, int32(s), int32(i%tags)), r)
				if err != nil {
					t.Error(err)
					return
				}
				if ok {
					deliver(t, r, m)
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		wk := MustKey(1, AnySource, AnyTag)
		for i := range wrecvs {
			r := &wrecvs[i]
			for try := 0; ; try++ {
				m, _, ok, err := tb.Post(wk, r)
				if err != nil {
					t.Error(err)
					return
				}
				if ok {
					deliver(t, r, m)
					break
				}
				// Withdraw every third one and post it again, a few times:
				// if Cancel fails, a message got it meanwhile.
				if i%3 != 0 || try == 3 || !tb.Cancel(wk, r) {
					break
				}
			}
		}
	}()
	wg.Wait()
	last := make([]int, sources)
	for i := range last {
		last[i] = -1
	}
	for i := range wrecvs {
		m := wrecvs[i].got.Load()
		if m == nil {
			t.Fatalf("wildcard receive %d got nothing", i)
		}
		if m.seq <= last[m.src] {
			t.Fatalf("wildcard receive %d got source %d message %d after message %d", i, m.src, m.seq, last[m.src])
		}
		last[m.src] = m.seq
	}
	for s := range sources {
		for i := range n {
			if m := erecvs[s][i].got.Load(); m == nil || m.src != s || m.seq != i {
				t.Fatalf("exact receive %d of source %d got %+v", i, s, m)
			}
			if wmsgs[s][i].taken.Load() != 1 {
				t.Fatalf("context 1 message %d of source %d delivered %d times", i, s, wmsgs[s][i].taken.Load())
			}
		}
	}
	if w := tb.pendingWild(); w != 0 {
		t.Fatalf("%d wildcard receives still counted", w)
	}
}
