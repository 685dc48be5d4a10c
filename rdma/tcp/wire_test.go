package tcp

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fibermpi/fibermpi/packet"
	"github.com/fibermpi/fibermpi/rdma"
)

// pairExchange is a two-rank rdma.Exchange whose rank 1 is played by the
// test (a fake peer speaking the wire protocol by hand).
type pairExchange struct {
	rank int
	job  string
	mu   *sync.Mutex
	recs map[string][]byte
	gate *sync.WaitGroup // both ranks' fences
}

func (e *pairExchange) Rank() int     { return e.rank }
func (e *pairExchange) Size() int     { return 2 }
func (e *pairExchange) JobID() string { return e.job }
func (e *pairExchange) Put(key string, v []byte) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.recs[fmt.Sprint(e.rank, key)] = v
	return nil
}
func (e *pairExchange) Get(rank int, key string) ([]byte, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	v, ok := e.recs[fmt.Sprint(rank, key)]
	if !ok {
		return nil, errors.New("no record")
	}
	return v, nil
}
func (e *pairExchange) Fence() error { e.gate.Done(); e.gate.Wait(); return nil }

// logs collects what a transport logs.
type logs struct {
	mu    sync.Mutex
	lines []string
}

func (l *logs) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

// awaited is matching after waiting, at most 5 s, for a first line with s:
// a failure is logged just after it is published (CheckPeers sees it
// first).
func (l *logs) awaited(s string) int {
	for deadline := time.Now().Add(5 * time.Second); l.matching(s) == 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	return l.matching(s)
}

func (l *logs) matching(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, line := range l.lines {
		if strings.Contains(line, s) {
			n++
		}
	}
	return n
}

// fake is a transport of rank 0 and a hand-driven peer of rank 1.
type fake struct {
	tr   *Transport
	peer net.Conn
	br   *bufio.Reader
	pool *packet.Pool
	log  *logs
}

// newFake makes rank 0's transport (which dials) and accepts its
// connection as rank 1, answering the handshake with job id job.
func newFake(t *testing.T, keepAlive time.Duration) *fake {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var mu sync.Mutex
	var gate sync.WaitGroup
	gate.Add(2)
	recs := map[string][]byte{}
	job := "wiretest"
	ex0 := &pairExchange{rank: 0, job: job, mu: &mu, recs: recs, gate: &gate}
	ex1 := &pairExchange{rank: 1, job: job, mu: &mu, recs: recs, gate: &gate}
	_ = ex1.Put(exchangeKey, []byte(ln.Addr().String()))
	pool, err := packet.New(packet.Config{Workers: 1, PayloadSize: 512})
	if err != nil {
		t.Fatal(err)
	}
	l := &logs{}
	type res struct {
		tr  *Transport
		err error
	}
	done := make(chan res, 1)
	go func() {
		tr, err := New(Config{Exchange: ex0, Layout: rdma.NewLayout(2), Peers: []int{1}, Pool: pool, KeepAlive: keepAlive, Logf: l.logf, ConnectTimeout: 5 * time.Second})
		done <- res{tr, err}
	}()
	_ = ex1.Fence()
	_ = ln.(*net.TCPListener).SetDeadline(time.Now().Add(5 * time.Second))
	nc, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	f := &fake{peer: nc, br: bufio.NewReader(nc), pool: pool, log: l}
	// The peer's greeting: as rank 1 of the job would send it.
	me := &Transport{rank: 1, cfg: Config{Exchange: ex1, PayloadSize: 512}}
	if _, err := me.readHello(f.br); err != nil {
		t.Fatalf("rank 0's greeting: %v", err)
	}
	if _, err := nc.Write(me.hello()); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil {
		t.Fatalf("New: %v", r.err)
	}
	f.tr = r.tr
	t.Cleanup(func() {
		_ = f.peer.Close()
		_ = f.tr.Close()
	})
	return f
}

// waitFailed waits until the connection to rank 1 fails and returns the
// error.
func (f *fake) waitFailed(t *testing.T) error {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if err := f.tr.CheckPeers(); err != nil {
			return err
		}
	}
	t.Fatal("the connection did not fail within 5s")
	return nil
}

func wantPeerErr(t *testing.T, err error, target error) {
	t.Helper()
	var pe *PeerError
	if !errors.As(err, &pe) || pe.Rank != 1 || !errors.Is(err, target) {
		t.Fatalf("got %v; want a *PeerError naming process 1 matching %v", err, target)
	}
}

func TestBadInput(t *testing.T) {
	pk := func() []byte {
		p := &packet.Packet{}
		b := appendPacketHead(nil, 0, p)
		// An announced length of 100 bytes.
		b[5+12] = 100
		return b
	}
	cases := []struct {
		name  string
		bytes []byte
		close bool
		want  error
		log   string
	}{
		{"garbage", []byte{0xee, 1, 2, 3}, false, ErrProtocol, "unknown frame kind"},
		{"truncated head", []byte{fPut, 1, 2}, true, ErrProtocol, "truncated frame"},
		{"truncated payload", append(pk(), make([]byte, 10)...), true, ErrProtocol, "truncated frame"},
		{"unknown endpoint", appendPacketHead(nil, 1, &packet.Packet{}), false, ErrProtocol, "not this process's"},
		{"too long", func() []byte { b := pk(); b[5+13] = 0x10; return b }(), false, ErrProtocol, "payload size"},
		{"answer to nothing", appendAck(nil, 99, stOK), false, ErrProtocol, "not waiting"},
		{"reset", nil, true, ErrPeerGone, "without a goodbye"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFake(t, 0)
			if _, err := f.peer.Write(c.bytes); err != nil {
				t.Fatal(err)
			}
			if c.close {
				_ = f.peer.Close()
			}
			err := f.waitFailed(t)
			wantPeerErr(t, err, c.want)
			// Every later call towards the peer fails the same way.
			if err := f.tr.Put(1, rdma.Region{Len: 1}, 0, []byte{1}); !errors.Is(err, c.want) {
				t.Errorf("Put after the failure: %v; want %v", err, c.want)
			}
			if n := f.log.awaited(c.log); n != 1 {
				t.Errorf("%d log lines mention %q, want 1: %q", n, c.log, f.log.lines)
			}
		})
	}
}

// TestPeerGoneWakesPut: a Put waiting for the owner's answer returns an
// error naming the owner when the owner's connection breaks.
func TestPeerGoneWakesPut(t *testing.T) {
	f := newFake(t, 0)
	// Rank 1 binds address 1, as the real peer would.
	if _, err := f.peer.Write(appendBind(nil, fBind, 1, 1)); err != nil {
		t.Fatal(err)
	}
	var head [ackHead]byte
	if _, err := f.br.Read(head[:]); err != nil || head[0] != fAck {
		t.Fatalf("no answer to the bind: %v %v", head, err)
	}
	errc := make(chan error, 1)
	go func() { errc <- f.tr.Put(1, rdma.Region{Key: 1, Len: 1 << 20}, 0, make([]byte, 1<<20)) }()
	// Read the Put's head, then vanish.
	var ph [accessHead]byte
	if _, err := f.br.Read(ph[:1]); err != nil || ph[0] != fPut {
		t.Fatalf("expected a Put frame: %v %v", ph[0], err)
	}
	_ = f.peer.Close()
	select {
	case err := <-errc:
		wantPeerErr(t, err, ErrPeerGone)
	case <-time.After(5 * time.Second):
		t.Fatal("Put still waits 5s after its owner vanished")
	}
}

// TestKeepAlive: a peer that sends nothing for the keep-alive period is
// lost, with an error naming it.
func TestKeepAlive(t *testing.T) {
	f := newFake(t, 200*time.Millisecond)
	err := f.waitFailed(t)
	wantPeerErr(t, err, ErrPeerGone)
	if !strings.Contains(err.Error(), "keep-alive") {
		t.Errorf("error %q does not say keep-alive", err)
	}
	// The pings the transport sent while the peer was silent.
	var b [1]byte
	if _, err := f.br.Read(b[:]); err != nil || b[0] != fPing {
		t.Errorf("the transport sent no ping: %v %v", b, err)
	}
}

// TestForeignConnection: connections from a process of another job, from
// something that is no fibermpi process, and from a rank that is no peer
// are refused and logged once each; the job's connection is unharmed.
func TestForeignConnection(t *testing.T) {
	f := newFake(t, 0)
	var gate sync.WaitGroup
	other := &Transport{rank: 1, cfg: Config{Exchange: &pairExchange{rank: 1, job: "another-job", gate: &gate}, PayloadSize: 512}}
	self := &Transport{rank: 0, cfg: Config{Exchange: &pairExchange{rank: 0, job: "wiretest", gate: &gate}, PayloadSize: 512}}
	for _, c := range []struct {
		hello []byte
		log   string
	}{
		{other.hello(), `job "another-job"`},
		{[]byte("GET / HTTP/1.1\r\n\r\n"), "not a fibermpi tcp greeting"},
		{self.hello(), "rank 0 is not a peer"},
	} {
		nc, err := net.Dial("tcp", f.tr.Addr())
		if err != nil {
			t.Fatal(err)
		}
		_, _ = nc.Write(c.hello)
		_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		var b [1]byte
		if n, err := nc.Read(b[:]); n != 0 || err == nil {
			t.Errorf("%s: the transport answered a refused greeting", c.log)
		}
		_ = nc.Close()
		if n := f.log.awaited(c.log); n != 1 {
			t.Errorf("%d log lines mention %q, want 1: %q", n, c.log, f.log.lines)
		}
	}
	if err := f.tr.CheckPeers(); err != nil {
		t.Errorf("the job's connection after refused ones: %v", err)
	}
	// The job's traffic still flows: a bind from the peer is answered.
	if _, err := f.peer.Write(appendBind(nil, fBind, 5, 1)); err != nil {
		t.Fatal(err)
	}
	_ = f.peer.SetReadDeadline(time.Now().Add(5 * time.Second))
	var head [ackHead]byte
	if _, err := f.br.Read(head[:]); err != nil || head[0] != fAck {
		t.Fatalf("no answer to a bind after the refused connections: %v %v", head, err)
	}
}
