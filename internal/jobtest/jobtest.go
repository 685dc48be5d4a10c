// Package jobtest runs one SPMD test function over every way a job can be
// laid out — one process with its endpoints reached directly, one process
// over a transport that hides that, several processes — so that a test
// written once covers every transport, and a new transport gets the whole
// suite by adding a Setup.
//
// Processes are simulated (several endpoint.Processes in one OS process,
// joined by an in-memory bootstrap, NewMemJob, and a shared backend, Wire)
// or real: the test binary runs the test again in Procs processes under
// fmpirun (internal/fmpitest), each process joining through the launcher's
// bootstrap and reaching the others through shared memory, exactly as a
// program does.
package jobtest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/fibermpi/fibermpi/endpoint"
	"github.com/fibermpi/fibermpi/fiber"
	"github.com/fibermpi/fibermpi/internal/fmpitest"
	"github.com/fibermpi/fibermpi/packet"
	"github.com/fibermpi/fibermpi/rdma"
	"github.com/fibermpi/fibermpi/rdma/inproc"
	"github.com/fibermpi/fibermpi/rdma/rdmatest"
)

// Setup is one layout of a job.
type Setup struct {
	Name string
	// Procs is the number of processes (at most the number of ranks).
	Procs int
	// Options returns the options of each process of one job; for
	// Procs > 1 it sets Remote (the backend shared by the simulated
	// processes), and the bootstraps are added by Run. Unused when Real.
	Options func() []endpoint.Options
	// Real runs the job in Procs processes of the test binary under
	// fmpirun, joined by its bootstrap and the default backends.
	Real bool
	// Env is added to a real job's environment (e.g. FIBERMPI_TRANSPORT=tcp
	// to join the processes over loopback TCP instead of shared memory).
	Env []string
}

// Setups returns the layouts of the multi-transport suite for a job of
// ranks ranks: in process (direct), in process with rdma.Local hidden (the
// protocol between processes: offers, RTS), 2 and 3 simulated processes
// over a synchronous and an asynchronous bounded backend, and real jobs
// under fmpirun: 2 and 3 processes over shared memory, 2 over loopback
// TCP, and 2 over shared memory with every large message split.
func Setups(ranks int) []Setup {
	same := func(n int, o func() endpoint.Options) func() []endpoint.Options {
		return func() []endpoint.Options {
			out := make([]endpoint.Options, n)
			for i := range out {
				out[i] = o()
			}
			return out
		}
	}
	shared := func(n int, tr func() *Wire) func() []endpoint.Options {
		return func() []endpoint.Options {
			w := tr()
			out := make([]endpoint.Options, n)
			for i := range out {
				out[i] = endpoint.Options{Workers: 1, Remote: w.Port()}
			}
			return out
		}
	}
	s := []Setup{
		{Name: "inproc", Procs: 1, Options: same(1, func() endpoint.Options { return endpoint.Options{} })},
		{Name: "inproc-hidden", Procs: 1, Options: same(1, func() endpoint.Options {
			return endpoint.Options{Transport: rdmatest.HideLocal(inproc.New())}
		})},
	}
	for _, procs := range []int{2, 3} {
		if procs > ranks {
			break
		}
		s = append(s,
			Setup{Name: fmt.Sprintf("procs=%d/sync", procs), Procs: procs, Options: shared(procs, func() *Wire { return NewWire(0) })},
			Setup{Name: fmt.Sprintf("procs=%d/queued", procs), Procs: procs, Options: shared(procs, func() *Wire { return NewWire(8) })},
		)
	}
	for _, procs := range []int{2, 3} {
		if procs <= ranks {
			s = append(s, Setup{Name: fmt.Sprintf("procs=%d/fmpirun", procs), Procs: procs, Real: true})
		}
	}
	if ranks >= 2 {
		s = append(s,
			Setup{Name: "procs=2/fmpirun-tcp", Procs: 2, Real: true, Env: []string{"FIBERMPI_TRANSPORT=tcp"}},
			// Every rendezvous message of 64 KiB or more split between the
			// two processes' copies (rdma/shm's split.go), unmeasured.
			Setup{Name: "procs=2/fmpirun-split", Procs: 2, Real: true, Env: []string{"FIBERMPI_SHM_PUT=split"}},
		)
	}
	return s
}

// Timeout bounds one job of Run; a job that runs longer panics with every
// goroutine's stack (a hang is a failure, not a wait).
var Timeout = 2 * time.Minute

// Run runs fn as ranks ranks (one fiber each, registered with its
// endpoint) at the given thread level under every Setup, as subtests; the
// ranks are spread over the processes in blocks. A rank's error fails the
// subtest, naming the rank.
func Run(t *testing.T, ranks int, level endpoint.ThreadLevel, fn func(ep *endpoint.Endpoint) error) {
	t.Helper()
	for _, s := range Setups(ranks) {
		t.Run(s.Name, func(t *testing.T) {
			switch {
			case fmpitest.Child():
				// This process is one of a real job's: -test.run
				// selected this subtest alone.
				if err := runReal(ranks, level, fn); err != nil {
					t.Fatal(err)
				}
			case s.Real:
				if testing.Short() && s.Procs > 2 {
					t.Skip("short mode: real jobs of 2 processes only")
				}
				out, err := fmpitest.RunTest(t, s.Procs, fmpitest.Options{Env: s.Env})
				if err != nil {
					t.Fatalf("%v\n%s", err, out)
				}
			default:
				if err := RunSetup(s, ranks, level, fn); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// runReal is this process's part of a real job (under fmpirun): its share
// of the ranks.
func runReal(ranks int, level endpoint.ThreadLevel, fn func(ep *endpoint.Endpoint) error) error {
	watchdog := time.AfterFunc(Timeout, func() {
		panic(fmt.Sprintf("jobtest: process of a real job of %d ranks still running after %v", ranks, Timeout))
	})
	defer watchdog.Stop()
	share := func(rank, procs int) int { return (rank+1)*ranks/procs - rank*ranks/procs }
	return runProcess(level, endpoint.Options{Workers: 1}, share, fn, func(error) {})
}

// RunSetup runs one job of ranks ranks under s and returns the ranks'
// errors, joined.
func RunSetup(s Setup, ranks int, level endpoint.ThreadLevel, fn func(ep *endpoint.Endpoint) error) error {
	watchdog := time.AfterFunc(Timeout, func() {
		panic(fmt.Sprintf("jobtest: %s job of %d ranks still running after %v", s.Name, ranks, Timeout))
	})
	defer watchdog.Stop()
	opts := s.Options()
	procs := len(opts)
	var boots []endpoint.Bootstrap
	if procs > 1 {
		boots = NewMemJob(procs)
	}
	errs := make([]error, procs)
	var wg sync.WaitGroup
	for i := range procs {
		if boots != nil {
			opts[i].Bootstrap = boots[i]
		}
		failed := func(err error) {
			if boots != nil {
				Fail(boots, fmt.Errorf("process %d failed: %w", i, err))
			}
		}
		share := func(rank, procs int) int { return (rank+1)*ranks/procs - rank*ranks/procs }
		wg.Go(func() { errs[i] = runProcess(level, opts[i], share, fn, failed) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// runProcess is one process's part of a job: Init, its share of the ranks
// as endpoints (share(rank, procs) of them, in blocks), a fiber per rank,
// Finalize. A failure ends the job (failed) before Finalize, as a launcher
// does when a process exits with an error.
func runProcess(level endpoint.ThreadLevel, opts endpoint.Options, share func(rank, procs int) int, fn func(ep *endpoint.Endpoint) error, failed func(error)) error {
	p, err := endpoint.Init(level, opts)
	if err != nil {
		failed(err)
		return err
	}
	k := share(p.Rank(), p.Procs())
	eps, err := p.CreateEndpoints(k)
	if err != nil {
		failed(err)
		return errors.Join(err, p.Finalize())
	}
	errs := make([]error, k)
	for i, ep := range eps {
		err := p.Scheduler().Spawn(func(f *fiber.Fiber) {
			h, err := ep.Register(f.Waiter())
			if err != nil {
				errs[i] = err
				return
			}
			defer h.Unregister()
			if err := fn(h); err != nil {
				errs[i] = fmt.Errorf("rank %d: %w", h.Rank(), err)
			}
		})
		if err != nil {
			errs[i] = err
		}
	}
	werr := p.Scheduler().Wait()
	if err := errors.Join(errors.Join(errs...), werr); err != nil {
		failed(err)
		return errors.Join(err, p.Finalize())
	}
	return p.Finalize()
}

// Wire is a medium shared by simulated processes, standing for shared
// memory between processes; each process reaches it through its own Port,
// an rdma.Transport. Each arrival is a copy in a packet of the
// destination's pool (the sender's packet goes back to its port's pool),
// nothing is reached directly, and with a limit the wire queues packets
// until Progress and refuses more than limit with rdma.ErrAgain, as a full
// ring does; its ports then also start Puts (rdma.PutStarter) and copy
// them at their next Progress, as a network's transfers end later.
type Wire struct {
	limit int

	mu     sync.Mutex
	bound  map[rdma.Addr]wireEnd
	regs   map[uint32][]byte
	key    uint32
	q      []queuedPacket
	closed bool

	deliver sync.Mutex // one Progress delivers at a time, in order
}

type wireEnd struct {
	r    rdma.Receiver
	pool *packet.Pool
}

// Port is one process's transport on a Wire. Make it with Wire.Port.
type Port struct {
	*Wire
	mu     sync.Mutex
	pool   *packet.Pool // of this process: its first Bind's
	closed bool
	puts   []startedPut // StartPut's, copied by the next Progress
}

// startedPut is a Put a Port started and copies later.
type startedPut struct {
	owner rdma.Addr
	r     rdma.Region
	off   uint64
	src   []byte
	done  rdma.PutDone
}

// Port returns a new transport on w for one process.
func (w *Wire) Port() *Port { return &Port{Wire: w} }

// open returns rdma.ErrClosed once the port is closed.
func (p *Port) open() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return rdma.ErrClosed
	}
	return nil
}

// Bind attaches a local endpoint; every endpoint of a port shares its
// process's pool.
func (p *Port) Bind(a rdma.Addr, r rdma.Receiver, pool *packet.Pool) error {
	if err := p.open(); err != nil {
		return err
	}
	if err := p.Wire.bind(a, r, pool); err != nil {
		return err
	}
	p.mu.Lock()
	if p.pool == nil {
		p.pool = pool
	}
	p.mu.Unlock()
	return nil
}

// Send copies pk to its destination and returns pk to this port's pool.
func (p *Port) Send(wk int, to rdma.Addr, pk *packet.Packet) error {
	p.mu.Lock()
	pool, closed := p.pool, p.closed
	p.mu.Unlock()
	if closed {
		return rdma.ErrClosed
	}
	if pool == nil {
		return rdma.ErrNoPeer // nothing bound here: the packet is not ours
	}
	return p.Wire.send(wk, to, pk, pool)
}

// Unbind detaches a local endpoint.
func (p *Port) Unbind(a rdma.Addr) error {
	if err := p.open(); err != nil {
		return err
	}
	return p.Wire.unbind(a)
}

// Register exposes buf to the other ports.
func (p *Port) Register(buf []byte) (rdma.Region, error) {
	if err := p.open(); err != nil {
		return rdma.Region{}, err
	}
	return p.Wire.register(buf)
}

// Deregister withdraws a registration.
func (p *Port) Deregister(r rdma.Region) error {
	if err := p.open(); err != nil {
		return err
	}
	return p.Wire.deregister(r)
}

// Put copies src into a region of another endpoint.
func (p *Port) Put(owner rdma.Addr, r rdma.Region, off uint64, src []byte) error {
	if err := p.open(); err != nil {
		return err
	}
	return p.Wire.put(owner, r, off, src)
}

// Get copies from a region of another endpoint into dst.
func (p *Port) Get(owner rdma.Addr, r rdma.Region, off uint64, dst []byte) error {
	if err := p.open(); err != nil {
		return err
	}
	return p.Wire.get(owner, r, off, dst)
}

// StartPut starts a Put on a queued wire: the copy is made, and done told,
// by this port's next Progress. On a synchronous wire it is Put (pending
// false).
func (p *Port) StartPut(owner rdma.Addr, r rdma.Region, off uint64, src []byte, done rdma.PutDone) (bool, error) {
	if p.Wire.limit == 0 {
		return false, p.Put(owner, r, off, src)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false, rdma.ErrClosed
	}
	p.puts = append(p.puts, startedPut{owner, r, off, src, done})
	return true, nil
}

// Progress copies the started Puts and tells them, then delivers what the
// wire queued.
func (p *Port) Progress(w int) int {
	n := 0
	if p.Wire.limit > 0 {
		p.mu.Lock()
		puts := p.puts
		p.puts = nil
		p.mu.Unlock()
		for _, sp := range puts {
			sp.done.PutDone(w, p.Wire.put(sp.owner, sp.r, sp.off, sp.src))
		}
		n = len(puts)
	}
	return n + p.Wire.progress(w)
}

// Close closes this port (the wire stays up for the other processes); the
// Puts it started and did not copy end with rdma.ErrClosed.
func (p *Port) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return rdma.ErrClosed
	}
	p.closed = true
	puts := p.puts
	p.puts = nil
	p.mu.Unlock()
	for _, sp := range puts {
		sp.done.PutDone(packet.NoWorker, rdma.ErrClosed)
	}
	return nil
}

var (
	_ rdma.Transport  = (*Port)(nil)
	_ rdma.PutStarter = (*Port)(nil)
)

type queuedPacket struct {
	to rdma.Addr
	pk *packet.Packet // a packet of the destination's pool
}

// NewWire returns a shared backend: synchronous for limit 0, else queued.
func NewWire(limit int) *Wire {
	return &Wire{limit: limit, bound: make(map[rdma.Addr]wireEnd), regs: make(map[uint32][]byte)}
}

// Name says which wire it is.
func (w *Wire) Name() string {
	if w.limit == 0 {
		return "wire"
	}
	return fmt.Sprintf("wire(queue=%d)", w.limit)
}

func (w *Wire) bind(a rdma.Addr, r rdma.Receiver, pool *packet.Pool) error {
	if r == nil || pool == nil {
		return rdma.ErrNoPeer
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return rdma.ErrClosed
	}
	if _, ok := w.bound[a]; ok {
		return rdma.ErrBound
	}
	w.bound[a] = wireEnd{r, pool}
	return nil
}

// unbind detaches a.
func (w *Wire) unbind(a rdma.Addr) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return rdma.ErrClosed
	}
	if _, ok := w.bound[a]; !ok {
		return rdma.ErrNoPeer
	}
	delete(w.bound, a)
	return nil
}

// send copies pk into a packet of the destination's pool and delivers it
// (limit 0) or queues it; pk goes back to srcPool.
func (w *Wire) send(wk int, to rdma.Addr, pk *packet.Packet, srcPool *packet.Pool) error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return rdma.ErrClosed
	}
	dst, ok := w.bound[to]
	if !ok {
		w.mu.Unlock()
		return rdma.ErrNoPeer
	}
	if w.limit > 0 && len(w.q) >= w.limit {
		w.mu.Unlock()
		return rdma.ErrAgain
	}
	cp := dst.pool.Get(packet.NoWorker)
	if cp == nil {
		w.mu.Unlock()
		return rdma.ErrAgain // the destination's pool is dry: back-pressure
	}
	cp.CopyHeader(pk)
	copy(cp.Payload(), pk.Data())
	if w.limit > 0 {
		w.q = append(w.q, queuedPacket{to, cp})
	}
	w.mu.Unlock()
	srcPool.Put(wk, pk)
	if w.limit == 0 {
		dst.r.Receive(packet.NoWorker, cp)
	}
	return nil
}

// progress delivers the queued packets, in order.
func (w *Wire) progress(int) int {
	if w.limit == 0 {
		return 0
	}
	w.deliver.Lock()
	defer w.deliver.Unlock()
	w.mu.Lock()
	q := w.q
	w.q = nil
	w.mu.Unlock()
	for _, e := range q {
		w.mu.Lock()
		dst, ok := w.bound[e.to]
		w.mu.Unlock()
		if ok {
			dst.r.Receive(packet.NoWorker, e.pk)
		}
		// else: the destination left (its process finalized); the
		// packet is dropped with its pool.
	}
	return len(q)
}

// register records buf under a new key.
func (w *Wire) register(buf []byte) (rdma.Region, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return rdma.Region{}, rdma.ErrClosed
	}
	w.key++
	w.regs[w.key] = buf
	return rdma.Region{Key: w.key, Len: uint64(len(buf))}, nil
}

// deregister forgets a region.
func (w *Wire) deregister(r rdma.Region) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return rdma.ErrClosed
	}
	if _, ok := w.regs[r.Key]; !ok {
		return rdma.ErrNoRegion
	}
	delete(w.regs, r.Key)
	return nil
}

func (w *Wire) region(owner rdma.Addr, r rdma.Region, off uint64, n int) ([]byte, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil, rdma.ErrClosed
	}
	if _, ok := w.bound[owner]; !ok {
		return nil, rdma.ErrNoPeer
	}
	buf, ok := w.regs[r.Key]
	if !ok || uint64(len(buf)) != r.Len {
		return nil, rdma.ErrNoRegion
	}
	if err := rdma.CheckBounds(r, off, n); err != nil {
		return nil, err
	}
	return buf[off : off+uint64(n)], nil
}

// put copies src into the region.
func (w *Wire) put(owner rdma.Addr, r rdma.Region, off uint64, src []byte) error {
	dst, err := w.region(owner, r, off, len(src))
	if err == nil {
		copy(dst, src)
	}
	return err
}

// get copies from the region into dst.
func (w *Wire) get(owner rdma.Addr, r rdma.Region, off uint64, dst []byte) error {
	src, err := w.region(owner, r, off, len(dst))
	if err == nil {
		copy(dst, src)
	}
	return err
}

// Shut closes the wire for every port; queued packets go back to their
// pools.
func (w *Wire) Shut() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	for _, e := range w.q {
		if dst, ok := w.bound[e.to]; ok {
			dst.pool.Put(packet.NoWorker, e.pk)
		}
	}
	w.q = nil
	return nil
}
