package rdmatest

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fibermpi/fibermpi/packet"
	"github.com/fibermpi/fibermpi/rdma"
)

// DefaultTimeout is how long the suite waits for an arrival or a
// completion when Fabric.Timeout is 0. It bounds a wait that never ends,
// with room for a slow one: the Flood (10^4 packets each way) took
// 7.5–9.3 s over loopback TCP under -race with GOMAXPROCS=8 on 2 CPUs, and
// the shared-memory and MPI backends needed more than 10 s on a loaded
// 2-CPU machine.
const DefaultTimeout = time.Minute

// Config is what the suite asks of a Factory for one subtest.
type Config struct {
	// Endpoints is the number of addresses the subtest uses:
	// rdma.Addr(0) … rdma.Addr(Endpoints-1). The suite binds them itself;
	// it may also try addresses beyond them, expecting rdma.ErrNoPeer.
	Endpoints int
	// Pool is the packet pool of the subtest. The suite takes every packet
	// it sends from it, and its Receivers return every packet they get to
	// it; a transport that builds packets on arrival takes them from here.
	// Worker indices are in [0, Pool.Workers()) or packet.NoWorker.
	Pool *packet.Pool
}

// Fabric is what a Factory returns: the transports of one subtest.
type Fabric struct {
	// Hosts[a] is the transport endpoint rdma.Addr(a) lives on; it has
	// Config.Endpoints entries. The suite sends, binds, registers memory
	// and calls Put and Get for endpoint a on Hosts[a]. Entries that stand
	// for one transport (one process) must be the same value: the suite
	// compares them with == to find the distinct transports, which it
	// drives with Progress and closes.
	Hosts []rdma.Transport
	// Timeout bounds every wait of the suite; 0 means DefaultTimeout. A
	// backend with slow start-up or delivery (processes, sockets) may ask
	// for more. A wait that runs out fails the subtest.
	Timeout time.Duration
}

// Factory makes a fresh fabric for one subtest, or fails t. It registers
// the clean-up of anything it starts (processes, files) with t.Cleanup;
// the suite's own clean-up, which closes the transports, runs before it.
type Factory func(t *testing.T, cfg Config) Fabric

// SingleHost returns the Fabric of a transport that hosts all n endpoints
// itself, as an in-process transport does.
func SingleHost(tr rdma.Transport, n int) Fabric {
	hosts := make([]rdma.Transport, n)
	for i := range hosts {
		hosts[i] = tr
	}
	return Fabric{Hosts: hosts}
}

// Run runs the conformance suite on the transports f makes, one subtest
// per property (see the package documentation).
func Run(t *testing.T, f Factory) {
	if f == nil {
		t.Fatal("rdmatest: nil Factory")
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.run(t, f) })
	}
}

var cases = []struct {
	name string
	run  func(*testing.T, Factory)
}{
	{"Name", testName},
	{"Delivery", testDelivery},
	{"FIFO", testFIFO},
	{"HandedOrder", testHandedOrder},
	{"ManyToOne", testManyToOne},
	{"SendFromReceive", testSendFromReceive},
	{"Eager", testEager},
	{"EagerRuns", testEagerRuns},
	{"Take", testTake},
	{"Rendezvous", testRendezvous},
	{"StartPut", testStartPut},
	{"NoPeer", testNoPeer},
	{"Unbind", testUnbind},
	{"Bind", testBind},
	{"BindWhileSending", testBindWhileSending},
	{"UnbindKeepsQueued", testUnbindKeepsQueued},
	{"PutGet", testPutGet},
	{"EmptyRegion", testEmptyRegion},
	{"Bounds", testBounds},
	{"Deregister", testDeregister},
	{"ForgedRegion", testForgedRegion},
	{"RegisterWhileAccessing", testRegisterWhileAccessing},
	{"Large", testLarge},
	{"Close", testClose},
	{"CloseWhileSending", testCloseWhileSending},
	{"Flood", testFlood},
}

// Pool shape of every subtest: enough worker indices for the concurrent
// senders, small payloads so that full ones are cheap to check.
const (
	poolWorkers = 8
	payloadSize = 512
)

// env is one subtest's fabric, pool and bookkeeping.
type env struct {
	t       *testing.T
	pool    *packet.Pool
	hosts   []rdma.Transport
	uniq    []rdma.Transport
	timeout time.Duration

	// arrived counts packets the sinks accepted; the test goroutine
	// waits on it (Add in sink.Receive, Load in waits).
	arrived atomic.Int64

	// Failures found off the test goroutine (in Receivers, senders),
	// reported by the test goroutine.
	mu    sync.Mutex
	errs  []string
	nerrs int
	// keys the transports handed out (Register), under mu.
	keys map[uint32]bool

	// backlog holds what Receive callbacks could not send yet
	// (backlog.go).
	backlog backlog

	closed bool
}

// newEnv makes the pool, asks f for a fabric of n endpoints and arranges
// its clean-up.
func newEnv(t *testing.T, f Factory, n int) *env {
	t.Helper()
	pool, err := packet.New(packet.Config{
		Workers:     poolWorkers,
		PerWorker:   32,
		Shared:      1024,
		PayloadSize: payloadSize,
	})
	if err != nil {
		t.Fatalf("rdmatest: making the pool: %v", err)
	}
	fab := f(t, Config{Endpoints: n, Pool: pool})
	if len(fab.Hosts) != n {
		t.Fatalf("rdmatest: the Factory returned %d hosts for %d endpoints", len(fab.Hosts), n)
	}
	e := &env{t: t, pool: pool, hosts: fab.Hosts, timeout: fab.Timeout}
	if e.timeout <= 0 {
		e.timeout = DefaultTimeout
	}
	for a, h := range fab.Hosts {
		if h == nil {
			t.Fatalf("rdmatest: the Factory returned a nil host for address %d", a)
		}
		seen := false
		for _, u := range e.uniq {
			seen = seen || u == h
		}
		if !seen {
			e.uniq = append(e.uniq, h)
		}
	}
	t.Cleanup(e.shutdown)
	return e
}

// shutdown closes the transports (unless the subtest did) and, if the
// subtest has not failed already, checks that every packet came home.
func (e *env) shutdown() {
	if !e.closed {
		for _, h := range e.uniq {
			if err := h.Close(); err != nil {
				e.t.Errorf("%s: Close: %v", h.Name(), err)
			}
		}
		e.closed = true
	}
	e.dropBacklog()
	e.report()
	if !e.t.Failed() {
		e.checkPool("after Close")
	}
}

// failf records a failure found on any goroutine; the test goroutine
// reports it (t.Errorf must not be called once the test has returned, and
// a faulty transport may still deliver then).
func (e *env) failf(format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.nerrs++
	if len(e.errs) < 20 {
		e.errs = append(e.errs, fmt.Sprintf(format, args...))
	}
}

// report turns the failures recorded so far into test errors.
func (e *env) report() {
	e.t.Helper()
	e.mu.Lock()
	errs, n := e.errs, e.nerrs
	e.errs, e.nerrs = nil, 0
	e.mu.Unlock()
	for _, s := range errs {
		e.t.Error(s)
	}
	if n > len(errs) {
		e.t.Errorf("… and %d more failures", n-len(errs))
	}
}

// progress drives every transport once, as worker w, and sends what the
// backlog holds.
func (e *env) progress(w int) int {
	n := 0
	for _, h := range e.uniq {
		n += h.Progress(w)
	}
	return n + e.drainBacklog(w)
}

// waitFor drives progress until cond holds, failing the subtest when the
// timeout runs out. It runs on the test goroutine.
func (e *env) waitFor(what string, cond func() bool) {
	e.t.Helper()
	deadline := time.Now().Add(e.timeout)
	for !cond() {
		if time.Now().After(deadline) {
			e.report()
			e.t.Fatalf("timed out after %v waiting for %s (%v, %d packets in the backlog)", e.timeout, what, e.pool, e.backlog.held.Load())
		}
		if e.progress(packet.NoWorker) == 0 {
			runtime.Gosched()
		}
	}
	e.report()
}

// waitArrived waits until the sinks have accepted n packets in all.
func (e *env) waitArrived(n int64) {
	e.t.Helper()
	e.waitFor(fmt.Sprintf("%d packets to arrive", n), func() bool { return e.arrived.Load() >= n })
}

// errTimeout is what get returns when the pool stays dry too long.
var errTimeout = errors.New("rdmatest: timed out waiting for a free packet")

// get takes a packet for worker w, driving progress while the pool is dry
// (a transport may hold packets until progress delivers them). It may run
// on any goroutine.
func (e *env) get(w int) (*packet.Packet, error) {
	var deadline time.Time
	for {
		if pk := e.pool.Get(w); pk != nil {
			return pk, nil
		}
		if deadline.IsZero() {
			deadline = time.Now().Add(e.timeout)
		} else if time.Now().After(deadline) {
			return nil, errTimeout
		}
		if e.progress(w) == 0 {
			runtime.Gosched()
		}
	}
}

// mustGet is get on the test goroutine.
func (e *env) mustGet() *packet.Packet {
	e.t.Helper()
	pk, err := e.get(packet.NoWorker)
	if err != nil {
		e.t.Fatal(err)
	}
	return pk
}

// putBack returns a delivered packet to the pool with the worker index the
// transport passed, which must be a valid one.
func (e *env) putBack(w int, pk *packet.Packet) {
	if w != packet.NoWorker && (w < 0 || w >= e.pool.Workers()) {
		e.failf("Receive got worker index %d; want packet.NoWorker or one in [0, %d)", w, e.pool.Workers())
		w = packet.NoWorker
	}
	e.pool.Put(w, pk)
}

// checkPool fails the subtest unless every packet is back in the pool.
func (e *env) checkPool(when string) {
	e.t.Helper()
	s := e.pool.Stats()
	if s.InUse != 0 {
		e.t.Errorf("%s: %d packets are not back in the pool (%d packets, %d shared, %d private): lost or held by the transport",
			when, s.InUse, s.Packets, s.Shared, s.Private)
	}
}

// bind binds a on its host with r.
func (e *env) bind(a rdma.Addr, r rdma.Receiver) {
	e.t.Helper()
	if err := e.hosts[a].Bind(a, r, e.pool); err != nil {
		e.t.Fatalf("Bind(%d): %v", a, err)
	}
}

// bindSinks binds a fresh sink to each of the first n addresses.
func (e *env) bindSinks(n int, strict bool) []*sink {
	e.t.Helper()
	sinks := make([]*sink, n)
	for a := range sinks {
		sinks[a] = newSink(e, rdma.Addr(a), strict)
		e.bind(rdma.Addr(a), sinks[a])
	}
	return sinks
}

// receiverFunc adapts a function to rdma.Receiver.
type receiverFunc func(w int, pk *packet.Packet)

func (f receiverFunc) Receive(w int, pk *packet.Packet) { f(w, pk) }

// wantErr fails the subtest unless errors.Is(err, target).
func (e *env) wantErr(what string, err, target error) {
	e.t.Helper()
	if !errors.Is(err, target) {
		e.t.Errorf("%s: got error %v; want %v", what, err, target)
	}
}
