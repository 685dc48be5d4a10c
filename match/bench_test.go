package match

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/fibermpi/fibermpi/internal/testenv"
)

// BenchmarkMatch measures one message meeting its receive (alternately the
// message first and the receive first) with 0 to 10^5 other keys pending,
// half unexpected messages and half posted receives. Every contender sits
// behind the matcher interface, so the ratios come from one run:
//
//	table        this package, default Config (wildcards allowed, ordered)
//	table-hinted this package with NoAnySource and NoAnyTag (Dang et al.'s path)
//	queue        posted and unexpected linked lists under one mutex, searched
//	             front to back, as MPI libraries do
//	syncmap      sync.Map, one entry per key
//	mutexmap     map + sync.Mutex, one entry per key
//
// With -cpu 1 the loop is b.Loop; with more, b.RunParallel, each goroutine
// on keys of its own source.
//
// Besides wall-clock ns/op, each benchmark reports cpu-ns/op: the process's
// CPU time per op. On a machine shared with other work the scheduler takes
// the cores away for a while and ns/op grows; cpu-ns/op does not.
func BenchmarkMatch(b *testing.B) {
	for _, pending := range []int{0, 100, 10_000, 100_000} {
		for _, c := range contenders {
			b.Run(fmt.Sprintf("pending=%d/impl=%s", pending, c.name), func(b *testing.B) {
				m := c.new(pending + 1024)
				fillPending(b, m, pending)
				b.ReportAllocs()
				b.ResetTimer()
				runMatch(b, m)
			})
		}
	}
}

type bmsg struct{ key Key }
type brecv struct{ key Key }

// matcher is what every contender offers: the two halves of a match.
type matcher interface {
	arrive(k Key, m *bmsg) (*brecv, bool)
	post(k Key, r *brecv) (*bmsg, bool)
}

var contenders = []struct {
	name string
	new  func(expected int) matcher
}{
	{"table", func(n int) matcher { return newTableMatcher(Config{Expected: n}) }},
	{"table-hinted", func(n int) matcher {
		return newTableMatcher(Config{Expected: n, NoAnySource: true, NoAnyTag: true})
	}},
	{"queue", func(int) matcher { return new(queueMatcher) }},
	{"syncmap", func(int) matcher { return new(syncMapMatcher) }},
	{"mutexmap", func(int) matcher { return &mutexMapMatcher{m: map[Key]any{}} }},
}

// pendingCtx holds the pending keys, so they never match the measured ones
// but sit in the same table or queues.
const pendingCtx = 1

// pender is a matcher that can queue a key known to match nothing without
// searching (the queue contender: searching would make filling quadratic).
type pender interface {
	pend(k Key, m *bmsg, r *brecv)
}

func fillPending(b *testing.B, m matcher, n int) {
	for i := range n {
		k := MustKey(pendingCtx, int32(i>>10), int32(i&1023))
		if p, ok := m.(pender); ok {
			if i%2 == 0 {
				p.pend(k, &bmsg{k}, nil)
			} else {
				p.pend(k, nil, &brecv{k})
			}
			continue
		}
		if i%2 == 0 {
			if _, ok := m.arrive(k, &bmsg{k}); ok {
				b.Fatal("pending message matched")
			}
		} else if _, ok := m.post(k, &brecv{k}); ok {
			b.Fatal("pending receive matched")
		}
	}
}

// opKeys are the keys a goroutine on source src uses: 64 tags in turn.
func opKeys(src int32) *[64]Key {
	var ks [64]Key
	for i := range ks {
		ks[i] = MustKey(0, src, int32(i))
	}
	return &ks
}

func matchOnce(b *testing.B, m matcher, k Key, msg *bmsg, rcv *brecv, msgFirst bool) {
	if msgFirst {
		if _, ok := m.arrive(k, msg); ok {
			b.Fatal("arrive matched early")
		}
		if got, ok := m.post(k, rcv); !ok || got != msg {
			b.Fatal("post did not meet the message")
		}
		return
	}
	if _, ok := m.post(k, rcv); ok {
		b.Fatal("post matched early")
	}
	if got, ok := m.arrive(k, msg); !ok || got != rcv {
		b.Fatal("arrive did not meet the receive")
	}
}

func runMatch(b *testing.B, m matcher) {
	cpu0 := testenv.ProcessCPU()
	defer func() {
		if cpu := testenv.ProcessCPU() - cpu0; cpu > 0 && b.N > 0 {
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
		}
	}()
	if runtime.GOMAXPROCS(0) == 1 {
		msg, rcv, ks := new(bmsg), new(brecv), opKeys(0)
		i := 0
		for b.Loop() {
			matchOnce(b, m, ks[i&63], msg, rcv, i&1 == 0)
			i++
		}
		return
	}
	var ids atomic.Int32
	b.RunParallel(func(pb *testing.PB) {
		msg, rcv, ks := new(bmsg), new(brecv), opKeys(ids.Add(1))
		i := 0
		for pb.Next() {
			matchOnce(b, m, ks[i&63], msg, rcv, i&1 == 0)
			i++
		}
	})
}

type tableMatcher struct{ t *Table[bmsg, brecv] }

func newTableMatcher(cfg Config) matcher {
	t, err := New[bmsg, brecv](cfg)
	if err != nil {
		panic(err)
	}
	return tableMatcher{t}
}

func (t tableMatcher) arrive(k Key, m *bmsg) (*brecv, bool) {
	r, ok, _ := t.t.Arrive(k, m)
	return r, ok
}

func (t tableMatcher) post(k Key, r *brecv) (*bmsg, bool) {
	m, _, ok, _ := t.t.Post(k, r)
	return m, ok
}

// queueMatcher is the classic MPI design: two doubly linked lists under one
// lock, searched front to back.
type queueMatcher struct {
	mu            sync.Mutex
	posted, unexp qlist
	free          *qnode
}

type qnode struct {
	key        Key
	m          *bmsg
	r          *brecv
	prev, next *qnode
}

type qlist struct{ head, tail *qnode }

func (l *qlist) push(n *qnode) {
	n.prev, n.next = l.tail, nil
	if l.tail == nil {
		l.head = n
	} else {
		l.tail.next = n
	}
	l.tail = n
}

func (l *qlist) unlink(n *qnode) {
	if n.prev == nil {
		l.head = n.next
	} else {
		n.prev.next = n.next
	}
	if n.next == nil {
		l.tail = n.prev
	} else {
		n.next.prev = n.prev
	}
}

func (q *queueMatcher) node() *qnode {
	n := q.free
	if n == nil {
		return new(qnode)
	}
	q.free = n.next
	return n
}

func (q *queueMatcher) release(n *qnode) {
	*n = qnode{next: q.free}
	q.free = n
}

func (q *queueMatcher) pend(k Key, m *bmsg, r *brecv) {
	n := q.node()
	n.key, n.m, n.r = k, m, r
	if m != nil {
		q.unexp.push(n)
	} else {
		q.posted.push(n)
	}
}

func (q *queueMatcher) arrive(k Key, m *bmsg) (*brecv, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for n := q.posted.head; n != nil; n = n.next {
		if n.key.Matches(k) {
			q.posted.unlink(n)
			r := n.r
			q.release(n)
			return r, true
		}
	}
	n := q.node()
	n.key, n.m = k, m
	q.unexp.push(n)
	return nil, false
}

func (q *queueMatcher) post(k Key, r *brecv) (*bmsg, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for n := q.unexp.head; n != nil; n = n.next {
		if k.Matches(n.key) {
			q.unexp.unlink(n)
			m := n.m
			q.release(n)
			return m, true
		}
	}
	n := q.node()
	n.key, n.r = k, r
	q.posted.push(n)
	return nil, false
}

// syncMapMatcher keeps one message or receive per key in a sync.Map.
type syncMapMatcher struct{ m sync.Map }

func (s *syncMapMatcher) arrive(k Key, m *bmsg) (*brecv, bool) {
	v, loaded := s.m.LoadOrStore(k, m)
	if !loaded {
		return nil, false
	}
	r, ok := v.(*brecv)
	if !ok || !s.m.CompareAndDelete(k, v) {
		panic("syncmap: a key held twice")
	}
	return r, true
}

func (s *syncMapMatcher) post(k Key, r *brecv) (*bmsg, bool) {
	v, loaded := s.m.LoadOrStore(k, r)
	if !loaded {
		return nil, false
	}
	m, ok := v.(*bmsg)
	if !ok || !s.m.CompareAndDelete(k, v) {
		panic("syncmap: a key held twice")
	}
	return m, true
}

// mutexMapMatcher keeps one message or receive per key in a map.
type mutexMapMatcher struct {
	mu sync.Mutex
	m  map[Key]any
}

func (s *mutexMapMatcher) arrive(k Key, m *bmsg) (*brecv, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.m[k]; ok {
		delete(s.m, k)
		return v.(*brecv), true
	}
	s.m[k] = m
	return nil, false
}

func (s *mutexMapMatcher) post(k Key, r *brecv) (*bmsg, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.m[k]; ok {
		delete(s.m, k)
		return v.(*bmsg), true
	}
	s.m[k] = r
	return nil, false
}
