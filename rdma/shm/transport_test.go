//go:build linux

package shm_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fibermpi/fibermpi/packet"
	"github.com/fibermpi/fibermpi/rdma"
	"github.com/fibermpi/fibermpi/rdma/rdmatest"
	"github.com/fibermpi/fibermpi/rdma/shm"
)

// counter is a Receiver that counts arrivals and returns them to its pool.
type counter struct {
	pool *packet.Pool
	mu   sync.Mutex
	n    int
	last []byte
}

func (c *counter) Receive(w int, pk *packet.Packet) {
	c.mu.Lock()
	c.n++
	c.last = append(c.last[:0], pk.Data()...)
	c.mu.Unlock()
	c.pool.Put(w, pk)
}

func (c *counter) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

func newPool(t testing.TB, payload int) *packet.Pool {
	t.Helper()
	p, err := packet.New(packet.Config{Workers: 2, PerWorker: 16, Shared: 256, PayloadSize: payload})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// pair is a job of two transports with endpoint 0 on the first and 1 on
// the second, each bound to a counter.
func pair(t testing.TB, ring int, forceCopy bool) (*job, *packet.Pool, [2]*counter) {
	t.Helper()
	pool := newPool(t, 512)
	j := newJob(t, 2, 2, func(int) shm.Config { return shm.Config{Pool: pool, RingSize: ring, ForceCopy: forceCopy} })
	var cs [2]*counter
	for a := range 2 {
		cs[a] = &counter{pool: pool}
		if err := j.trs[a].Bind(rdma.Addr(a), cs[a], pool); err != nil {
			t.Fatal(err)
		}
	}
	return j, pool, cs
}

// TestErrAgain: a full ring refuses with rdma.ErrAgain and leaves the
// packet with the caller, intact; after the receiver's Progress it takes
// the packet, and every packet accepted arrives.
func TestErrAgain(t *testing.T) {
	j, pool, cs := pair(t, 4<<10, false)
	sent := 0
	var refused *packet.Packet
	for refused == nil {
		pk := pool.Get(packet.NoWorker)
		pk.Tag = int32(sent)
		if err := pk.SetData(bytes.Repeat([]byte{byte(sent)}, 200)); err != nil {
			t.Fatal(err)
		}
		switch err := j.trs[0].Send(packet.NoWorker, 1, pk); {
		case err == nil:
			sent++
		case errors.Is(err, rdma.ErrAgain):
			refused = pk
		default:
			t.Fatalf("Send: %v", err)
		}
		if sent > 100 {
			t.Fatal("a 4 KiB ring took 100 packets of 200 bytes")
		}
	}
	if sent == 0 {
		t.Fatal("the first Send into an empty ring was refused")
	}
	if refused.Tag != int32(sent) || !bytes.Equal(refused.Data(), bytes.Repeat([]byte{byte(sent)}, 200)) {
		t.Fatalf("the refused packet changed: %v", refused)
	}
	if n := j.trs[1].Progress(packet.NoWorker); n != sent {
		t.Fatalf("Progress handled %d records, want %d", n, sent)
	}
	if err := j.trs[0].Send(packet.NoWorker, 1, refused); err != nil {
		t.Fatalf("Send after Progress: %v", err)
	}
	j.trs[1].Progress(packet.NoWorker)
	if got := cs[1].count(); got != sent+1 {
		t.Fatalf("%d packets arrived, want %d", got, sent+1)
	}
	if s := pool.Stats(); s.InUse != 0 {
		t.Fatalf("%d packets not back in the pool", s.InUse)
	}
}

// TestPoolDryLeavesRecord: when the destination's pool is dry, the record
// stays in the ring and arrives once a packet is free.
func TestPoolDryLeavesRecord(t *testing.T) {
	src := newPool(t, 512)
	dry, err := packet.New(packet.Config{Workers: 1, PerWorker: 1, Shared: 1, PayloadSize: 512})
	if err != nil {
		t.Fatal(err)
	}
	j := newJob(t, 2, 2, func(int) shm.Config { return shm.Config{Pool: src, PayloadSize: 512} })
	c := &counter{pool: dry}
	if err := j.trs[1].Bind(1, c, dry); err != nil {
		t.Fatal(err)
	}
	if err := j.trs[0].Bind(0, &counter{pool: src}, src); err != nil {
		t.Fatal(err)
	}
	held := []*packet.Packet{dry.Get(packet.NoWorker), dry.Get(packet.NoWorker)}
	if held[0] == nil || held[1] == nil || dry.Get(packet.NoWorker) != nil {
		t.Fatal("could not empty the pool")
	}
	for i := range 3 {
		pk := src.Get(packet.NoWorker)
		pk.Tag = int32(i)
		if err := j.trs[0].Send(packet.NoWorker, 1, pk); err != nil {
			t.Fatal(err)
		}
	}
	if n := j.trs[1].Progress(packet.NoWorker); n != 0 || c.count() != 0 {
		t.Fatalf("with a dry pool Progress handled %d, %d arrived", n, c.count())
	}
	dry.Put(packet.NoWorker, held[0])
	dry.Put(packet.NoWorker, held[1])
	for range 3 {
		j.trs[1].Progress(packet.NoWorker)
	}
	if c.count() != 3 {
		t.Fatalf("%d of 3 packets arrived after the pool refilled", c.count())
	}
}

// TestSendAllocs: Send and the Progress that delivers do not allocate.
func TestSendAllocs(t *testing.T) {
	j, pool, _ := pair(t, 64<<10, false)
	allocs := testing.AllocsPerRun(1000, func() {
		pk := pool.Get(0)
		pk.SetLen(8)
		if err := j.trs[0].Send(0, 1, pk); err != nil {
			t.Fatal(err)
		}
		if j.trs[1].Progress(1) != 1 {
			t.Fatal("nothing arrived")
		}
	})
	if allocs != 0 {
		t.Errorf("Send and Progress allocate %v times per packet", allocs)
	}
}

// TestSleepWakes: a goroutine in Sleep with a long limit is woken by a
// Send from the peer, over and over (a lost wake-up would leave it asleep
// until the test's bound).
func TestSleepWakes(t *testing.T) {
	j, pool, cs := pair(t, 64<<10, false)
	rounds := 2000
	if testing.Short() {
		rounds = 200
	}
	woke := make(chan int)
	go func() {
		defer close(woke)
		for got := 0; got < rounds; {
			j.trs[1].Sleep(time.Hour)
			got += j.trs[1].Progress(packet.NoWorker)
			woke <- got
		}
	}()
	timeout := time.After(time.Minute)
	for i := range rounds {
		pk := pool.Get(packet.NoWorker)
		if err := j.trs[0].Send(packet.NoWorker, 1, pk); err != nil {
			t.Fatal(err)
		}
		for waiting := true; waiting; {
			select {
			case got := <-woke:
				// Woken for nothing (got <= i) is allowed: wait for
				// the wake-up of this send.
				waiting = got <= i
			case <-timeout:
				j.trs[1].Close() // wakes the sleeper, ends the goroutine
				for range woke {
				}
				t.Fatalf("the sleeper was not woken by send %d", i)
			}
		}
	}
	for range woke {
	}
	if cs[1].count() != rounds {
		t.Fatalf("%d packets arrived, want %d", cs[1].count(), rounds)
	}
}

// TestSleepReturns: Sleep returns at once with a record pending, after
// max without one, and when the transport closes under it.
func TestSleepReturns(t *testing.T) {
	j, pool, _ := pair(t, 64<<10, false)
	if err := j.trs[0].Send(packet.NoWorker, 1, pool.Get(packet.NoWorker)); err != nil {
		t.Fatal(err)
	}
	bounded(t, "Sleep with a record pending", func() { j.trs[1].Sleep(time.Hour) })
	j.trs[1].Progress(packet.NoWorker)
	bounded(t, "Sleep(1ms) with nothing pending", func() { j.trs[1].Sleep(time.Millisecond) })
	done := make(chan struct{})
	go func() { j.trs[1].Sleep(time.Hour); close(done) }()
	time.Sleep(time.Millisecond) // let it (probably) fall asleep
	if err := j.trs[1].Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("Close did not wake the sleeper")
	}
}

// bounded runs fn and fails if it has not returned within a minute.
func bounded(t *testing.T, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { fn(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatalf("%s did not return", what)
	}
}

// TestMutualPuts: two processes Put large buffers into each other at once,
// copied through small rings, with nobody else driving progress; each
// Put's wait drains its own rings (applying the other's chunks), so both
// complete.
func TestMutualPuts(t *testing.T) {
	const size = 1 << 20
	j, _, _ := pair(t, 8<<10, true)
	var regions [2]rdma.Region
	bufs := [2][]byte{make([]byte, size), make([]byte, size)}
	for a := range 2 {
		r, err := j.trs[a].Register(bufs[a])
		if err != nil {
			t.Fatal(err)
		}
		regions[a] = r
	}
	srcs := [2][]byte{make([]byte, size), make([]byte, size)}
	fillData(srcs[0], 10, 0)
	fillData(srcs[1], 11, 0)
	// Each side Puts, then (as its progress engine would) drives its
	// own progress until both Puts have returned: while both are inside
	// Put, nothing else moves the rings.
	errs := make(chan error, 2)
	var puts sync.WaitGroup
	puts.Add(2)
	var wg sync.WaitGroup
	for a := range 2 {
		wg.Go(func() {
			errs <- j.trs[a].Put(rdma.Addr(1-a), regions[1-a], 0, srcs[a])
			puts.Done()
			done := make(chan struct{})
			go func() { puts.Wait(); close(done) }()
			for {
				select {
				case <-done:
					return
				default:
					j.trs[a].Progress(packet.NoWorker)
				}
			}
		})
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(time.Minute):
		for _, tr := range j.trs {
			tr.Close() // ends the Puts with ErrClosed
		}
		<-finished
		t.Fatal("the mutual Puts deadlocked")
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	// What is still in the rings lands with Progress.
	for range 100 {
		j.trs[0].Progress(packet.NoWorker)
		j.trs[1].Progress(packet.NoWorker)
	}
	for a := range 2 {
		if !bytes.Equal(bufs[a], srcs[1-a]) {
			t.Errorf("the buffer of %d does not hold what %d Put", a, 1-a)
		}
	}
}

// putter is a Receiver that, on a packet of kind KindRTR, Puts src into
// the peer's region (from inside Receive), and records the tags of every
// packet in arrival order.
type putter struct {
	tr     *shm.Transport
	pool   *packet.Pool
	peer   rdma.Addr
	region rdma.Region
	src    []byte
	mu     sync.Mutex
	tags   []int32
	err    error
	put    chan struct{}
}

func (p *putter) Receive(w int, pk *packet.Packet) {
	p.mu.Lock()
	p.tags = append(p.tags, pk.Tag)
	p.mu.Unlock()
	if pk.Kind == packet.KindRTR {
		err := p.tr.Put(p.peer, p.region, 0, p.src)
		p.mu.Lock()
		p.err = err
		p.mu.Unlock()
		close(p.put)
	}
	p.pool.Put(w, pk)
}

// TestMutualPutsFromReceive: as TestMutualPuts, but each Put runs inside a
// Receive callback, holding its ring's delivery: the Put's wait drains
// that very ring into its queue (the packets sent after the trigger), and
// delivery resumes from the queue in order once the Put returns.
func TestMutualPutsFromReceive(t *testing.T) {
	const size, after = 1 << 20, 20
	pool := newPool(t, 512)
	j := newJob(t, 2, 2, func(int) shm.Config { return shm.Config{Pool: pool, RingSize: 8 << 10, ForceCopy: true} })
	var ps [2]*putter
	bufs := [2][]byte{make([]byte, size), make([]byte, size)}
	for a := range 2 {
		ps[a] = &putter{tr: j.trs[a], pool: pool, peer: rdma.Addr(1 - a), src: make([]byte, size), put: make(chan struct{})}
		fillData(ps[a].src, uint32(20+a), 0)
		if err := j.trs[a].Bind(rdma.Addr(a), ps[a], pool); err != nil {
			t.Fatal(err)
		}
	}
	for a := range 2 {
		r, err := j.trs[a].Register(bufs[a])
		if err != nil {
			t.Fatal(err)
		}
		ps[1-a].region = r
	}
	// The trigger, then packets behind it, from each side.
	for a := range 2 {
		for tag := range after + 1 {
			pk := pool.Get(packet.NoWorker)
			pk.Tag = int32(tag)
			if tag == 0 {
				pk.Kind = packet.KindRTR
			}
			if err := j.trs[a].Send(packet.NoWorker, rdma.Addr(1-a), pk); err != nil {
				t.Fatal(err)
			}
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for a := range 2 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
					j.trs[a].Progress(packet.NoWorker)
				}
			}
		})
	}
	for a := range 2 {
		select {
		case <-ps[a].put:
		case <-time.After(time.Minute):
			for _, tr := range j.trs {
				tr.Close()
			}
			close(stop)
			wg.Wait()
			t.Fatal("the Puts from Receive deadlocked")
		}
	}
	// Everything sent lands, in order. The packets are counted under
	// their lock while the progress goroutines run; the buffers, which
	// those goroutines write (copied Puts), are compared only after they
	// have stopped, with this goroutine driving progress alone.
	deadline := time.Now().Add(time.Minute)
	arrived := func() (int, int) {
		ps[0].mu.Lock()
		n0 := len(ps[0].tags)
		ps[0].mu.Unlock()
		ps[1].mu.Lock()
		n1 := len(ps[1].tags)
		ps[1].mu.Unlock()
		return n0, n1
	}
	for {
		n0, n1 := arrived()
		if n0 == after+1 && n1 == after+1 {
			break
		}
		if time.Now().After(deadline) {
			close(stop)
			wg.Wait()
			t.Fatalf("after the Puts: %d and %d packets arrived (want %d each)", n0, n1, after+1)
		}
		time.Sleep(time.Millisecond)
	}
	close(stop)
	wg.Wait()
	for !bytes.Equal(bufs[0], ps[1].src) || !bytes.Equal(bufs[1], ps[0].src) {
		if time.Now().After(deadline) {
			t.Fatalf("after the Puts: buffers complete: %v %v", bytes.Equal(bufs[0], ps[1].src), bytes.Equal(bufs[1], ps[0].src))
		}
		j.trs[0].Progress(packet.NoWorker)
		j.trs[1].Progress(packet.NoWorker)
	}
	for a := range 2 {
		if ps[a].err != nil {
			t.Errorf("Put from Receive at %d: %v", a, ps[a].err)
		}
		for i, tag := range ps[a].tags {
			if tag != int32(i) {
				t.Fatalf("at %d the packets arrived in the order %v", a, ps[a].tags)
			}
		}
	}
}

// TestConfig: bad configurations fail with ErrInvalidConfig and say why.
func TestConfig(t *testing.T) {
	ex := rdmatest.MemExchange(2)
	good := func() shm.Config { return shm.Config{Exchange: ex[0], Layout: rdma.NewLayout(2), Peers: []int{1}} }
	if err := good().Validate(); err != nil {
		t.Fatalf("a good config: %v", err)
	}
	for _, c := range []struct {
		name string
		edit func(*shm.Config)
		want string
	}{
		{"no exchange", func(c *shm.Config) { c.Exchange = nil }, "Exchange"},
		{"no layout", func(c *shm.Config) { c.Layout = nil }, "Layout"},
		{"layout size", func(c *shm.Config) { c.Layout = rdma.NewLayout(3) }, "processes"},
		{"peer is self", func(c *shm.Config) { c.Peers = []int{0} }, "this process"},
		{"peer twice", func(c *shm.Config) { c.Peers = []int{1, 1} }, "twice"},
		{"peer outside", func(c *shm.Config) { c.Peers = []int{2} }, "outside"},
		{"ring not a power of two", func(c *shm.Config) { c.RingSize = 100 << 10 }, "RingSize"},
		{"ring too small", func(c *shm.Config) { c.RingSize = 1 << 12 }, "RingSize"},
		{"payload", func(c *shm.Config) { c.PayloadSize = 100 }, "PayloadSize"},
		{"regions", func(c *shm.Config) { c.MaxRegions = 3 }, "MaxRegions"},
		{"job id", func(c *shm.Config) { c.Exchange = badJob{c.Exchange} }, "job id"},
	} {
		cfg := good()
		c.edit(&cfg)
		err := cfg.Validate()
		if !errors.Is(err, shm.ErrInvalidConfig) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Validate() = %v, want ErrInvalidConfig about %s", c.name, err, c.want)
		}
		if _, err := shm.New(cfg); !errors.Is(err, shm.ErrInvalidConfig) {
			t.Errorf("%s: New: %v, want ErrInvalidConfig", c.name, err)
		}
	}
	if s := good().String(); !strings.Contains(s, "ring 524288") || !strings.Contains(s, "payload 8192") {
		t.Errorf("String() = %s: the defaults are not shown", s)
	}
}

// badJob is an exchange whose job id cannot be a file name.
type badJob struct{ rdma.Exchange }

func (badJob) JobID() string { return "../etc" }

// TestLimits: Bind beyond MaxAddrs and Register beyond MaxRegions fail
// with ErrLimit; a withdrawn registration frees its slot.
func TestLimits(t *testing.T) {
	pool := newPool(t, 512)
	j := newJob(t, 2, 40, func(int) shm.Config { return shm.Config{Pool: pool, MaxAddrs: 32, MaxRegions: 4} })
	if err := j.trs[0].Bind(34, &counter{pool: pool}, pool); !errors.Is(err, shm.ErrLimit) {
		t.Errorf("Bind beyond MaxAddrs: %v, want ErrLimit", err)
	}
	if err := j.trs[0].Bind(1, &counter{pool: pool}, pool); !errors.Is(err, rdma.ErrNoPeer) {
		t.Errorf("Bind of the other process's address: %v, want ErrNoPeer", err)
	}
	var rs []rdma.Region
	for range 4 {
		r, err := j.trs[0].Register(make([]byte, 8))
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
	}
	if _, err := j.trs[0].Register(make([]byte, 8)); !errors.Is(err, shm.ErrLimit) {
		t.Errorf("a fifth registration: %v, want ErrLimit", err)
	}
	if err := j.trs[0].Deregister(rs[1]); err != nil {
		t.Fatal(err)
	}
	r, err := j.trs[0].Register(make([]byte, 8))
	if err != nil {
		t.Fatalf("Register after a Deregister: %v", err)
	}
	if r.Key == rs[1].Key {
		t.Errorf("the new registration reuses the withdrawn key %d", r.Key)
	}
}

// TestStaleSegment: New refuses to start over a segment file of the same
// job (an earlier job with the same id left it), saying so, and leaves it.
func TestStaleSegment(t *testing.T) {
	ex := rdmatest.MemExchange(1)
	stale := filepath.Join(shm.DefaultDir, fmt.Sprintf("fibermpi-%s-0", ex[0].JobID()))
	if err := os.WriteFile(stale, nil, 0o600); err != nil {
		t.Skipf("cannot write %s: %v", shm.DefaultDir, err)
	}
	defer os.Remove(stale)
	_, err := shm.New(shm.Config{Exchange: ex[0], Layout: rdma.NewLayout(1)})
	if err == nil || !strings.Contains(err.Error(), "exists already") {
		t.Fatalf("New over a stale segment: %v", err)
	}
}

// TestPeersDisagree: a process that lists a peer that does not list it
// back fails with an error naming the disagreement.
func TestPeersDisagree(t *testing.T) {
	ex := rdmatest.MemExchange(3)
	errs := make([]error, 3)
	trs := make([]*shm.Transport, 3)
	var wg sync.WaitGroup
	peers := [][]int{{1, 2}, {0}, {0}} // 0 thinks 1 and 2 share a node; they do not think so of each other
	for r := range 3 {
		wg.Go(func() {
			trs[r], errs[r] = shm.New(shm.Config{Exchange: ex[r], Layout: rdma.NewLayout(3), Peers: peers[r], RingSize: 64 << 10})
		})
	}
	wg.Wait()
	for _, tr := range trs {
		if tr != nil {
			tr.Close()
		}
	}
	if errs[1] != nil || errs[2] != nil {
		t.Fatalf("ranks 1 and 2 failed: %v, %v", errs[1], errs[2])
	}
	if errs[0] != nil {
		t.Fatalf("rank 0 failed: %v", errs[0])
	}
	// 1 and 2 do not list each other, and 0 lists both: consistent. Now
	// make 2 list 1 without 1 listing 2.
	ex = rdmatest.MemExchange(3)
	peers = [][]int{{1, 2}, {0}, {0, 1}}
	for r := range 3 {
		wg.Go(func() {
			trs[r], errs[r] = shm.New(shm.Config{Exchange: ex[r], Layout: rdma.NewLayout(3), Peers: peers[r], RingSize: 64 << 10})
		})
	}
	wg.Wait()
	for _, tr := range trs {
		if tr != nil {
			tr.Close()
		}
	}
	if errs[2] == nil || !strings.Contains(errs[2].Error(), "disagree") {
		t.Fatalf("rank 2, listing a peer that does not list it: %v", errs[2])
	}
	if left, _ := filepath.Glob(filepath.Join(shm.DefaultDir, "fibermpi-"+ex[0].JobID()+"-*")); len(left) > 0 {
		t.Errorf("left behind: %v", left)
		for _, f := range left {
			os.Remove(f)
		}
	}
}

// putLog is an rdma.PutDone that records its calls, in order, in a log
// shared by several Puts.
type putLog struct {
	id  int
	log *putCalls
}

type putCalls struct {
	mu    sync.Mutex
	calls []putCall
}

type putCall struct {
	id, w int
	err   error
}

func (p putLog) PutDone(w int, err error) {
	p.log.mu.Lock()
	p.log.calls = append(p.log.calls, putCall{p.id, w, err})
	p.log.mu.Unlock()
}

func (l *putCalls) get() []putCall {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.calls)
}

// TestStartedPuts: with RingPuts, Puts longer than the ring's room start
// (pending), and the sender's Progress writes the rest as the owner's
// Progress frees room, in the order they started, calling each PutDone
// once, from Progress, with its worker index; a packet sent after the last
// PutDone arrives after the bytes. A pending Put keeps the sender from
// sleeping (its owner frees room without waking it), and Close ends the
// Puts still pending with rdma.ErrClosed.
func TestStartedPuts(t *testing.T) {
	const size, puts = 40 << 10, 3
	pool := newPool(t, 512)
	j := newJob(t, 2, 2, func(int) shm.Config { return shm.Config{Pool: pool, RingSize: 8 << 10, RingPuts: true} })
	var cs [2]*counter
	for a := range 2 {
		cs[a] = &counter{pool: pool}
		if err := j.trs[a].Bind(rdma.Addr(a), cs[a], pool); err != nil {
			t.Fatal(err)
		}
	}
	if name := j.trs[0].Name(); !strings.HasSuffix(name, "+ringput") && name != "shm+copy" {
		t.Errorf("Name() = %q; want it to say the Puts go through the rings", name)
	}
	var dsts, srcs [puts][]byte
	var regions [puts]rdma.Region
	log := &putCalls{}
	for i := range puts {
		dsts[i], srcs[i] = make([]byte, size), make([]byte, size)
		fillData(srcs[i], 20, uint32(i))
		r, err := j.trs[1].Register(dsts[i])
		if err != nil {
			t.Fatal(err)
		}
		regions[i] = r
		pending, err := j.trs[0].StartPut(1, r, 0, srcs[i], putLog{i, log})
		if err != nil || !pending {
			t.Fatalf("StartPut %d of %d bytes into an 8 KiB ring: pending %v, error %v; want pending", i, size, pending, err)
		}
	}
	if _, _, ok := j.trs[0].Arm(); ok {
		t.Error("Arm with started Puts pending reported ok: the sender would sleep while only it can write them")
	}
	j.trs[0].Disarm()
	if n := len(log.get()); n != 0 {
		t.Fatalf("%d PutDone calls before any Progress", n)
	}
	const worker = 1
	deadline := time.Now().Add(time.Minute)
	for len(log.get()) < puts {
		if time.Now().After(deadline) {
			t.Fatalf("the started Puts did not end: %v", log.get())
		}
		j.trs[1].Progress(packet.NoWorker)
		j.trs[0].Progress(worker)
	}
	for i, c := range log.get() {
		if c.id != i || c.w != worker || c.err != nil {
			t.Errorf("PutDone call %d: Put %d, worker %d, error %v; want Put %d, worker %d, no error", i, c.id, c.w, c.err, i, worker)
		}
	}
	// A packet sent after the last PutDone follows the last chunk.
	pk := pool.Get(0)
	pk.Kind = packet.KindEager
	if err := j.trs[0].Send(0, 1, pk); err != nil {
		t.Fatal(err)
	}
	for cs[1].count() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the packet after the Puts did not arrive")
		}
		j.trs[1].Progress(packet.NoWorker)
	}
	for i := range puts {
		if !bytes.Equal(dsts[i], srcs[i]) {
			t.Errorf("Put %d: the owner's buffer does not hold what was Put", i)
		}
	}

	// Close ends a Put still pending, once, with rdma.ErrClosed.
	pending, err := j.trs[0].StartPut(1, regions[0], 0, srcs[1], putLog{puts, log})
	if err != nil || !pending {
		t.Fatalf("StartPut before Close: pending %v, error %v; want pending", pending, err)
	}
	if err := j.trs[0].Close(); err != nil {
		t.Fatal(err)
	}
	calls := log.get()
	if len(calls) != puts+1 || calls[puts].id != puts || !errors.Is(calls[puts].err, rdma.ErrClosed) || calls[puts].w != packet.NoWorker {
		t.Errorf("after Close, PutDone calls %v; want one more, for Put %d, with rdma.ErrClosed and packet.NoWorker", calls, puts)
	}
}

// TestStartedPutAttachesWhenOwnerStalls: with RingPuts, a started Put whose
// owner does not take its chunks (no Progress there at all) ends anyway:
// after the ring has stayed full for a while, the sender's Progress writes
// the rest by cross-memory attach; the chunks already in the ring land
// when the owner's Progress runs, before a packet sent after PutDone.
func TestStartedPutAttachesWhenOwnerStalls(t *testing.T) {
	const size = 256 << 10
	pool := newPool(t, 512)
	j := newJob(t, 2, 2, func(int) shm.Config { return shm.Config{Pool: pool, RingSize: 8 << 10, RingPuts: true} })
	if !strings.HasSuffix(j.trs[0].Name(), "+ringput") {
		t.Skipf("cross-memory attach is refused here (%s): nothing to fall back to", j.trs[0].Name())
	}
	c := &counter{pool: pool}
	if err := j.trs[1].Bind(1, c, pool); err != nil {
		t.Fatal(err)
	}
	dst, src := make([]byte, size), make([]byte, size)
	fillData(src, 30, 1)
	r, err := j.trs[1].Register(dst)
	if err != nil {
		t.Fatal(err)
	}
	log := &putCalls{}
	pending, err := j.trs[0].StartPut(1, r, 0, src, putLog{0, log})
	if err != nil || !pending {
		t.Fatalf("StartPut: pending %v, error %v; want pending", pending, err)
	}
	deadline := time.Now().Add(time.Minute)
	for len(log.get()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the started Put waited for its owner's progress, which never came")
		}
		j.trs[0].Progress(0)
	}
	if calls := log.get(); len(calls) != 1 || calls[0].err != nil {
		t.Fatalf("PutDone calls %v; want one, without error", calls)
	}
	pk := pool.Get(0)
	pk.Kind = packet.KindEager
	for {
		// The chunks written before the stall still fill the ring.
		err := j.trs[0].Send(0, 1, pk)
		if err == nil {
			break
		}
		if !errors.Is(err, rdma.ErrAgain) || time.Now().After(deadline) {
			t.Fatal(err)
		}
		j.trs[1].Progress(packet.NoWorker)
	}
	for c.count() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the packet after the Put did not arrive")
		}
		j.trs[1].Progress(packet.NoWorker)
	}
	if !bytes.Equal(dst, src) {
		t.Error("the owner's buffer does not hold what was Put")
	}
}

// attachPair is a job of two processes whose Puts may go attached (the
// test skips where the kernel refuses it), each bound at its rank's
// address with a registered buffer of size bytes.
func attachPair(t *testing.T, size int) (j *job, bufs [2][]byte, regs [2]rdma.Region) {
	t.Helper()
	pool := newPool(t, 512)
	j = newJob(t, 2, 2, func(int) shm.Config { return shm.Config{Pool: pool, RingSize: 8 << 10, RingPuts: true} })
	if !strings.HasSuffix(j.trs[0].Name(), "+ringput") {
		t.Skipf("cross-memory attach is refused here (%s): the rings are the only way", j.trs[0].Name())
	}
	for i, tr := range j.trs {
		if err := tr.Bind(rdma.Addr(i), &counter{pool: pool}, pool); err != nil {
			t.Fatal(err)
		}
		bufs[i] = make([]byte, size)
		r, err := tr.Register(bufs[i])
		if err != nil {
			t.Fatal(err)
		}
		regs[i] = r
	}
	return j, bufs, regs
}

// TestSplitPutCountsOwnersDelay: a split Put's time counts from the
// record's publication to the end of the owner's read, so an owner slow
// to take the record makes the split way measure slow (pace then weighs
// the owner's delay against the rings, which count theirs), not just its
// read's own copy.
func TestSplitPutCountsOwnersDelay(t *testing.T) {
	j, bufs, regs := attachPair(t, 256<<10)
	src, r := make([]byte, len(bufs[1])), regs[1]
	j.trs[0].SetSplitWait(time.Hour) // never cancelled
	j.trs[0].PreferAttach(1)         // attach average 2 bytes/ns
	calls := &putCalls{}
	pending, err := j.trs[0].StartPut(1, r, 0, src, putLog{0, calls})
	if err != nil || !pending {
		t.Fatalf("StartPut: pending %v, %v; want a split Put", pending, err)
	}
	const delay = 20 * time.Millisecond
	time.Sleep(delay) // the owner does not look at its ring meanwhile
	for i := 0; len(calls.get()) == 0; i++ {
		if i == 1e6 {
			t.Fatalf("the split Put never ended: %s", j.trs[0].RingsString())
		}
		j.trs[1].Progress(0)
		j.trs[0].Progress(0)
	}
	// One measurement of 256 KiB in at least 20 ms, weighed 1/4 against
	// 2 bytes/ns in time per byte, gives at most 0.052 bytes/ns; the
	// read's copy alone (microseconds) would leave the average above 1.
	if a := j.trs[0].PaceAttach(1); a > 0.06 {
		t.Errorf("attach average %.3f bytes/ns after a split Put whose owner waited %v: the wait was not counted", a, delay)
	}
}

// TestSplitPutQueuedReadsCountOnce: split Puts published back to back
// while their owner does not run are read one after another once it does.
// Each read's time counts from the later of its record's publication and
// the previous read's end (a service time), so the owner's delay counts
// for the first Put only, not again for every Put queued behind it; and
// each Put is measured with its own read's time.
func TestSplitPutQueuedReadsCountOnce(t *testing.T) {
	const part, puts = 256 << 10, 3
	j, _, regs := attachPair(t, puts*part)
	src, r := make([]byte, part), regs[1]
	j.trs[0].SetSplitWait(time.Hour) // never cancelled
	j.trs[0].PreferAttach(1)         // attach average 2 bytes/ns
	calls := &putCalls{}
	for i := range puts {
		pending, err := j.trs[0].StartPut(1, r, uint64(i*part), src, putLog{i, calls})
		if err != nil || !pending {
			t.Fatalf("StartPut %d: pending %v, %v; want a split Put", i, pending, err)
		}
	}
	const delay = 20 * time.Millisecond
	time.Sleep(delay) // the owner does not look at its ring meanwhile
	for i := 0; len(calls.get()) < puts; i++ {
		if i == 1e6 {
			t.Fatalf("the split Puts never ended: %s", j.trs[0].RingsString())
		}
		j.trs[1].Progress(0)
		j.trs[0].Progress(0)
	}
	// The first read counts the delay; the others, read right after it,
	// do not (timed from their publication, each would count it again).
	var took [puts]time.Duration
	for i := range puts {
		d, ok := j.trs[0].SplitReadTook(1, uint64(i+1))
		if !ok {
			t.Fatalf("read %d: its slot holds another read's time", i+1)
		}
		took[i] = d
	}
	if took[0] < delay {
		t.Errorf("read times %v: the first is under the owner's delay of %v", took, delay)
	}
	for i := 1; i < puts; i++ {
		if took[i] > took[0]/2 {
			t.Errorf("read times %v: read %d, queued behind the first, counts the owner's delay again", took, i+1)
		}
	}
}

// TestPacedPutSplits: a large Put that pace sends the attach way is split
// (split.go): StartPut writes the first half and leaves the second to the
// owner, whose Progress reads it; the sender's Progress ends the Put only
// after that. An owner that cannot attach to the sender fails its read:
// the sender then writes that half itself, and splits no more. A blocking
// Put goes by one process_vm_writev. Every way is measured.
func TestPacedPutSplits(t *testing.T) {
	j, bufs, regs := attachPair(t, 256<<10)
	dst, src, r := bufs[1], make([]byte, len(bufs[1])), regs[1]
	j.trs[0].SetSplitWait(time.Hour) // never cancelled, however slow the test runs
	// split runs one started Put and reports whether it went split.
	split := func(seed uint32) bool {
		t.Helper()
		j.trs[0].PreferAttach(1)
		fillData(src, seed, 1)
		calls := &putCalls{}
		pending, err := j.trs[0].StartPut(1, r, 0, src, putLog{0, calls})
		if err != nil {
			t.Fatalf("StartPut: %v", err)
		}
		if !pending {
			return false
		}
		j.trs[0].Progress(0)
		if c := calls.get(); len(c) != 0 {
			t.Fatalf("the split Put ended (%v) before its owner read its half", c)
		}
		for i := 0; len(calls.get()) == 0; i++ {
			if i == 1e6 {
				t.Fatalf("the split Put never ended: %s", j.trs[0].RingsString())
			}
			j.trs[1].Progress(0)
			j.trs[0].Progress(0)
		}
		if c := calls.get(); len(c) != 1 || c[0].err != nil {
			t.Fatalf("PutDone calls %v, want one without error", c)
		}
		if !bytes.Equal(dst, src) {
			t.Fatal("after a split Put, the owner's buffer does not hold what was Put")
		}
		return true
	}
	if !split(31) {
		t.Fatal("StartPut did not split")
	}
	if a := j.trs[0].PaceAttach(1); a == 2 {
		t.Error("the split Put was not measured")
	}
	fillData(src, 32, 1)
	// Again: on a loaded machine the split just measured may have taken
	// long enough to make the rings' made-up 1 byte/ns the faster way.
	j.trs[0].PreferAttach(1)
	if err := j.trs[0].Put(1, r, 0, src); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(dst, src) {
		t.Fatal("after Put by attach, the owner's buffer does not hold what was Put")
	}
	// The owner may no longer attach to the sender: its read fails.
	j.trs[1].RefuseAttach(0)
	if !split(33) {
		t.Fatal("StartPut did not split while no read had failed")
	}
	if split(34) {
		t.Fatal("StartPut split again after its owner failed a read")
	}
	if !bytes.Equal(dst, src) {
		t.Fatal("after Put by attach, the owner's buffer does not hold what was Put")
	}
}

// TestSplitPutCancelled: a split Put whose owner does not run its
// Progress is cancelled once the sender's half has been written for
// attachAfter: the sender writes the rest and ends the Put, and the
// owner, coming later to the record, reads nothing (the sender may have
// reused its buffer by then).
func TestSplitPutCancelled(t *testing.T) {
	j, bufs, regs := attachPair(t, 256<<10)
	dst, src, r := bufs[1], make([]byte, len(bufs[1])), regs[1]
	j.trs[0].PreferAttach(1)
	fillData(src, 41, 1)
	want := slices.Clone(src)
	calls := &putCalls{}
	pending, err := j.trs[0].StartPut(1, r, 0, src, putLog{0, calls})
	if err != nil || !pending {
		t.Fatalf("StartPut: pending %v, error %v; want a split Put pending", pending, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(calls.get()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the split Put was not cancelled while its owner did not run")
		}
		j.trs[0].Progress(0)
	}
	if c := calls.get(); len(c) != 1 || c[0].err != nil {
		t.Fatalf("PutDone calls %v, want one without error", c)
	}
	if !bytes.Equal(dst, want) {
		t.Fatal("after a cancelled split Put, the owner's buffer does not hold what was Put")
	}
	// Measured, with the wait: 256 KiB in at least attachAfter (50 µs),
	// at a quarter's weight in the time per byte, leaves the average of 2
	// bytes/ns at most 2.37.
	if a := j.trs[0].PaceAttach(1); a == 2 || a > 2.37 {
		t.Errorf("attach average %.3f bytes/ns after a cancelled split Put: want it measured with its wait (≤ 2.37)", a)
	}
	fillData(src, 42, 1) // the sender reuses its buffer
	for range 10 {
		j.trs[1].Progress(0)
	}
	if !bytes.Equal(dst, want) {
		t.Fatal("the owner read a cancelled split Put's half")
	}
	// The ring goes on: the next split Put ends normally.
	j.trs[0].PreferAttach(1)
	pending, err = j.trs[0].StartPut(1, r, 0, src, putLog{1, calls})
	if err != nil || !pending {
		t.Fatalf("second StartPut: pending %v, error %v", pending, err)
	}
	for len(calls.get()) < 2 {
		if time.Now().After(deadline) {
			t.Fatal("the second split Put never ended")
		}
		j.trs[1].Progress(0)
		j.trs[0].Progress(0)
	}
	if !bytes.Equal(dst, src) {
		t.Fatal("after the second split Put, the owner's buffer does not hold what was Put")
	}
}

// TestRingPutsBothWaysGoByAttach: while the owner starts large Puts
// towards the sender's process during the sender's Puts through the rings,
// the next Put goes by one process_vm_writev whatever pace measured
// (chooseAttach, bothWays): through the rings each CPU would copy every
// byte twice. Puts that only alternate stay in the rings.
func TestRingPutsBothWaysGoByAttach(t *testing.T) { checkBothWays(t, true) }

// TestSplitPutNotBothWays: a Put that pace sends the attach way is not
// split while the owner was seen starting large Puts towards the sender's
// process during one of the sender's (split.go, bothWays); Puts that only
// alternate, as in a ping-pong, stay split.
func TestSplitPutNotBothWays(t *testing.T) { checkBothWays(t, false) }

// checkBothWays runs Puts of 256 KiB between two processes, which pace
// sends through the rings (rings) or split: alternating first, then both
// ways at once, after which the next Put must go by one writev (StartPut
// not pending).
func checkBothWays(t *testing.T, rings bool) {
	j, bufs, regs := attachPair(t, 256<<10)
	var srcs [2][]byte
	for i, tr := range j.trs {
		srcs[i] = make([]byte, len(bufs[i]))
		tr.SetSplitWait(time.Hour)
	}
	way := "split"
	if rings {
		way = "through the rings" // 256 KiB do not fit in 8: pending
	}
	calls := &putCalls{}
	// put starts a Put of process from's buffer into the other's and
	// reports whether it is pending (split, or through the rings).
	put := func(from int, seed uint32) bool {
		t.Helper()
		to := 1 - from
		fillData(srcs[from], seed, 1)
		if rings {
			j.trs[from].PreferRings(to)
		} else {
			j.trs[from].PreferAttach(to)
		}
		pending, err := j.trs[from].StartPut(rdma.Addr(to), regs[to], 0, srcs[from], putLog{from, calls})
		if err != nil {
			t.Fatal(err)
		}
		return pending
	}
	// finish runs both Progresses until n Puts have ended and their
	// owners hold their bytes (a Put through the rings ends once its last
	// chunk is in the ring, before its owner copies it out).
	finish := func(n int) {
		t.Helper()
		for i := 0; len(calls.get()) < n || !bytes.Equal(bufs[1], srcs[0]) || !bytes.Equal(bufs[0], srcs[1]); i++ {
			if i == 1e6 {
				t.Fatalf("%d of %d Puts ended, buffers as Put: %v, %v: %s", len(calls.get()), n,
					bytes.Equal(bufs[1], srcs[0]), bytes.Equal(bufs[0], srcs[1]), j.trs[0].RingsString())
			}
			j.trs[0].Progress(0)
			j.trs[1].Progress(0)
		}
	}
	// A ping-pong: each Put starts after the other's ended.
	if !put(0, 1) {
		t.Fatalf("the first Put did not go %s", way)
	}
	finish(1)
	if !put(1, 2) {
		t.Fatalf("the answer did not go %s", way)
	}
	finish(2)
	if !put(0, 3) {
		t.Fatalf("a Put after the answer ended did not go %s: alternating Puts are not both ways at once", way)
	}
	// Both ways at once: process 1 starts a Put while process 0's runs.
	if !put(1, 4) {
		t.Fatalf("process 1's Put did not go %s", way)
	}
	finish(4)
	if put(0, 5) {
		t.Fatalf("a Put went %s while the owner sends large Puts back at once", way)
	}
	if !bytes.Equal(bufs[1], srcs[0]) {
		t.Fatal("after a Put by one writev, the owner's buffer does not hold what was Put")
	}
}
