package endpoint

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fibermpi/fibermpi/fiber"
	"github.com/fibermpi/fibermpi/internal/breath"
	"github.com/fibermpi/fibermpi/match"
	"github.com/fibermpi/fibermpi/packet"
	"github.com/fibermpi/fibermpi/rdma"
	"github.com/fibermpi/fibermpi/trace"
)

// ThreadLevel is how many threads may use an endpoint, with Snir's
// per-endpoint meaning (Snir 2009 §2.2): the level applies to each endpoint,
// not to the process, so a process with k ThreadSingle endpoints serves k
// threads without any lock.
type ThreadLevel int

// The thread levels, from least to most permissive.
const (
	// ThreadSingle: one caller ever uses the endpoint; one registration
	// at a time.
	ThreadSingle ThreadLevel = iota
	// ThreadFunneled: like ThreadSingle for the endpoint, while other
	// threads of the process compute.
	ThreadFunneled
	// ThreadSerialized: several callers may register, and they never call
	// into the endpoint at the same time.
	ThreadSerialized
	// ThreadMultiple: any number of callers, at the same time.
	ThreadMultiple
)

// String names the level as MPI does.
func (l ThreadLevel) String() string {
	switch l {
	case ThreadSingle:
		return "THREAD_SINGLE"
	case ThreadFunneled:
		return "THREAD_FUNNELED"
	case ThreadSerialized:
		return "THREAD_SERIALIZED"
	case ThreadMultiple:
		return "THREAD_MULTIPLE"
	}
	return fmt.Sprintf("ThreadLevel(%d)", int(l))
}

// ProgressMode says who drives the transport's progress (polling for
// arrivals and completions). The in-process transport delivers
// synchronously and needs none; transports between processes do.
type ProgressMode int

const (
	// ProgressIdle polls from the fiber workers' idle hook (Snir 2009 §5's
	// fibers that yield inside blocking calls): no extra thread, and
	// progress whenever a worker has nothing to run. The default. In a
	// job of several processes a fiber that starts to wait while its
	// worker has nothing else to run first polls the transport itself, a
	// few hundred times at most (fiber.Fiber.WorkerIdle, checked as it
	// goes): the same polling the idle hook would do, without blocking
	// and being resumed. It yields as soon as another fiber can run.
	ProgressIdle ProgressMode = iota
	// ProgressServer runs a dedicated communication server, a goroutine
	// locked to its own OS thread that polls continuously (Dang et al. 2016b's
	// communication server). It costs a core and gives the lowest latency.
	ProgressServer
	// ProgressCaller polls only from inside blocking calls: a waiting
	// caller polls, then yields (fiber) or lets other goroutines run,
	// until its request completes.
	ProgressCaller
)

// String names the mode.
func (m ProgressMode) String() string {
	switch m {
	case ProgressIdle:
		return "idle"
	case ProgressServer:
		return "server"
	case ProgressCaller:
		return "caller"
	}
	return fmt.Sprintf("ProgressMode(%d)", int(m))
}

// Defaults of Options.
const (
	// ProcessSleepAfter is how long an idle fiber worker spins (then
	// backs off) before it sleeps, in a job of several processes, unless
	// Options.Fiber.SleepAfter says otherwise. Over shared memory an
	// arrival wakes a sleeping worker (fiber.Config.Alarm), but the wake-up
	// costs the sender a system call and the receiver tens of
	// microseconds; where nothing can wake it (TCP, progress modes other
	// than ProgressIdle) a sleeping worker polls the transport only every
	// Fiber.PollInterval. A short spin would put either delay into every
	// pause of a message stream on a loaded machine.
	ProcessSleepAfter   = 20 * time.Millisecond
	DefaultEagerLimit   = packet.DefaultPayloadSize
	DefaultMaxEndpoints = 1 << 20
)

// Options configures a process. The zero value works: the embedded
// in-process transport, GOMAXPROCS−1 fiber workers, 8 KiB packets and
// eager messages up to 8 KiB.
type Options struct {
	// Workers is the number of fiber workers (see fiber.Config.Workers).
	// Zero means GOMAXPROCS−1, at least 1; in a job of several processes
	// on one node that bind (EnvBind), at most what fits in this
	// process's share of the CPUs: the share less one, at least 1.
	Workers int
	// EagerLimit is the largest message, in bytes, sent eagerly (copied
	// into a packet, so the send completes at once); larger ones use
	// rendezvous (one copy, straight into the receive buffer). Zero means
	// DefaultEagerLimit; a negative value sends everything by rendezvous.
	// It may not exceed PayloadSize.
	EagerLimit int
	// PayloadSize is the packet payload size (see packet.Config).
	PayloadSize int
	// PacketsPerWorker is each worker's share of the packet pool.
	PacketsPerWorker int
	// MaxEndpoints bounds the endpoints CreateEndpoints may make at this
	// process, in all (the MPI_ENDPOINTS attribute of Snir 2009 §2.2); Init's
	// own endpoint is not counted. Zero means DefaultMaxEndpoints.
	MaxEndpoints int
	// Match configures every endpoint's matching table (its size and the
	// no-wildcard, allow-overtaking hints). With Match.Expected zero, each
	// CreateEndpoints(k) sizes the tables from the packet pool's share of
	// each of the k endpoints.
	Match match.Config
	// Transport carries the packets; nil means a new in-process transport
	// (the embedded default).
	Transport rdma.Transport
	// Fiber configures the scheduler beyond Workers (pinning, idle). In a
	// job of several processes on one node, each process binds itself and
	// pins its workers to CPUs of its own when they fit, unless Fiber.Pin
	// is set or FIBERMPI_BIND=none (EnvBind); over shared memory an idle
	// worker's sleep ends at the first arrival (Fiber.Alarm is set to the
	// transport's unless given).
	Fiber fiber.Config
	// Progress says who polls the transport (default ProgressIdle).
	Progress ProgressMode
	// Bootstrap joins this process to a job of several; nil means the one
	// the launcher's environment names (DetectBootstrap), or this process
	// alone when there is none. It is not used with Transport.
	Bootstrap Bootstrap
	// Remote, in a job of several processes, carries the traffic to every
	// other process instead of the default backends (shared memory with
	// the processes of this node). Tests use it to join several Processes
	// of one OS process.
	Remote rdma.Transport
	// Watch configures the deadlock and stuck-fiber watchdogs (on by
	// default; see Watch).
	Watch Watch
	// ForceTCP, in a job of several processes, makes TCP (rdma/tcp) carry
	// the traffic between every pair of processes, also of one node,
	// instead of shared memory there; every process of the job must set
	// it alike. FIBERMPI_TRANSPORT=tcp in the environment does the same.
	ForceTCP bool
	// Trace, if not empty, turns on the trace recorder (package trace)
	// and names the file Finalize writes it to; in a job of several
	// processes each writes its part to Trace.<process rank>, which
	// cmd/fmpi-trace merges. Empty means the value of FIBERMPI_TRACE, and
	// no tracing if that is empty too. Tracing off costs a nil test per
	// call.
	Trace string
}

func (o Options) withDefaults() Options {
	if o.PayloadSize == 0 {
		o.PayloadSize = packet.DefaultPayloadSize
	}
	switch {
	case o.EagerLimit == 0:
		o.EagerLimit = min(DefaultEagerLimit, o.PayloadSize)
	case o.EagerLimit < 0:
		o.EagerLimit = -1 // every message by rendezvous, even empty ones
	}
	if o.MaxEndpoints == 0 {
		o.MaxEndpoints = DefaultMaxEndpoints
	}
	if o.Workers != 0 {
		o.Fiber.Workers = o.Workers
	}
	return o
}

// Validate reports whether o is usable.
func (o Options) Validate() error {
	d := o.withDefaults()
	switch {
	case d.EagerLimit > d.PayloadSize:
		return fmt.Errorf("%w: EagerLimit %d exceeds PayloadSize %d", ErrOptions, d.EagerLimit, d.PayloadSize)
	case d.MaxEndpoints < 1:
		return fmt.Errorf("%w: MaxEndpoints %d < 1", ErrOptions, d.MaxEndpoints)
	case o.PacketsPerWorker < 0:
		return fmt.Errorf("%w: PacketsPerWorker %d < 0", ErrOptions, o.PacketsPerWorker)
	case o.Progress < ProgressIdle || o.Progress > ProgressCaller:
		return fmt.Errorf("%w: %v", ErrOptions, o.Progress)
	case o.Transport != nil && (o.Bootstrap != nil || o.Remote != nil):
		return fmt.Errorf("%w: Transport is for a job of one process; it cannot be combined with Bootstrap or Remote", ErrOptions)
	}
	if err := d.Fiber.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrOptions, err)
	}
	if err := d.Match.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrOptions, err)
	}
	return nil
}

// String prints the effective options.
func (o Options) String() string {
	d := o.withDefaults()
	tr := "inproc"
	if d.Transport != nil {
		tr = d.Transport.Name()
	}
	return fmt.Sprintf("endpoint.Options{transport=%s progress=%v eager<=%dB payload=%dB maxEndpoints=%d %v %v %v}",
		tr, d.Progress, d.EagerLimit, d.PayloadSize, d.MaxEndpoints, d.Fiber, d.Match, d.Watch)
}

// A Process is this OS process's part of the job: its endpoints, its fiber
// scheduler, its packet pool and its transport. Make it with Init, end it
// with Finalize.
type Process struct {
	opts  Options
	level ThreadLevel
	sched *fiber.Scheduler
	pool  *packet.Pool
	tr    rdma.Transport

	// The job: this process's index among procs, the bootstrap (nil in a
	// job of one process) and the owner of every endpoint address.
	rank, procs int
	boot        Bootstrap
	layout      *rdma.Layout
	// Where this process stands among the processes of its node.
	place

	mu      sync.Mutex
	cores   []*core // this process's endpoints, in creation order
	made    int     // endpoints CreateEndpoints made here (MaxEndpoints)
	gen     int     // collective endpoint creations so far (bootstrap keys)
	nextCtx uint32  // next context id for a world or process communicator (even: see ContextPairs)

	// backlog holds packets the transport refused for now (backlog.go).
	backlog backlog

	// local reaches the peers of an in-process transport directly (nil for
	// transports between processes).
	local rdma.Local
	// putter starts the rendezvous Puts without waiting for them (core.go),
	// when the transport can (rdma.PutStarter); nil otherwise.
	putter rdma.PutStarter
	// eagerTr is the transport as an rdma.EagerSender (nil if it is not
	// one): eager sends to other processes then need no packet.
	eagerTr rdma.EagerSender
	// eagerRouter is the transport as an rdma.EagerRouter (nil if it is
	// not one): a handle keeps the way of its last eager destination.
	eagerRouter rdma.EagerRouter
	// mover and moverRouter are the transport as an rdma.Mover and an
	// rdma.MoverRouter (nil if it is not one): moverOf.
	mover       rdma.Mover
	moverRouter rdma.MoverRouter

	world     Comm  // the Init world: one endpoint per process
	worldProc Comm  // its process communicator: worldCore alone
	worldCore *core // this process's endpoint in it
	finalized atomic.Bool

	// rec records the trace (trace.go), nil when off; traceFile is where
	// Finalize writes it.
	rec       *trace.Recorder
	traceFile string

	// unwatch stops watch at Finalize; watched is closed when it returns.
	unwatch, watched chan struct{}
	// lostWatch watches the other processes themselves (peerwatch.go).
	lostWatch lostWatch

	// server is the communication server (ProgressServer): it polls until
	// stop is set, then closes done.
	serverStop atomic.Bool
	serverDone chan struct{}

	// job is the job's fate as seen here: ended, why, who is registered
	// (job.go, deadlock.go).
	job job
}

// Comm is a communicator as the endpoint layer sees it: a context id and
// the address of each rank. The comm package builds typed communicators on
// it; Comm values are immutable once made.
type Comm struct {
	Context uint32
	Addrs   []rdma.Addr // rank → endpoint address
}

// Size returns the number of ranks.
func (c Comm) Size() int { return len(c.Addrs) }

// Init joins the job at the given thread level. Under a launcher (fmpirun;
// see DetectBootstrap) the job is the processes it started, and the world
// has one endpoint per process, rank i at process i. Without one the job is
// this process alone (the embedded default): its world has one endpoint,
// rank 0. CreateEndpoints makes more, collectively.
//
// In a job of several processes Init is collective: it exchanges transport
// addresses through the bootstrap and sets up shared memory with the
// processes of this node, and fails with a clear error if the processes do
// not agree on the job.
func Init(level ThreadLevel, opts Options) (*Process, error) {
	if level < ThreadSingle || level > ThreadMultiple {
		return nil, fmt.Errorf("%w: %v", ErrThreadLevel, level)
	}
	opts, err := opts.fromEnv() // env.go
	if err != nil {
		return nil, err
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	p := &Process{opts: opts, level: level, tr: opts.Transport, procs: 1, boot: opts.Bootstrap}
	if p.tr == nil && p.boot == nil {
		b, err := DetectBootstrap()
		if err != nil {
			return nil, err
		}
		p.boot = b
	}
	if p.boot != nil {
		if p.boot.Size() > 1 {
			p.rank, p.procs = p.boot.Rank(), p.boot.Size()
		} else {
			// A job of one process needs no bootstrap after this.
			_ = p.boot.Close()
			p.boot = nil
		}
	}
	p.layout = rdma.NewLayout(p.procs)
	if p.traceFile = p.tracePath(); p.traceFile != "" {
		p.rec = trace.NewRecorder(p.rank, p.procs, 0)
	}
	if p.tr == nil {
		// Before the workers start: their idle hook polls it.
		tr, err := p.connect()
		if err != nil {
			if p.boot != nil {
				_ = p.boot.Close()
			}
			return nil, err
		}
		p.tr = tr
	}
	p.local, _ = p.tr.(rdma.Local)
	p.putter, _ = p.tr.(rdma.PutStarter)
	p.eagerTr, _ = p.tr.(rdma.EagerSender)
	p.eagerRouter, _ = p.tr.(rdma.EagerRouter)
	p.mover, _ = p.tr.(rdma.Mover)
	p.moverRouter, _ = p.tr.(rdma.MoverRouter)
	fcfg := opts.Fiber
	var alarm rdma.Alarm
	if opts.Progress == ProgressIdle {
		alarm = alarmOf(p.tr)
	}
	if p.procs > 1 && fcfg.SleepAfter == 0 {
		// Waking a sleeping worker costs the sender a system call and the
		// receiver tens of microseconds, and without an alarm it waits for
		// the next poll (PollInterval): spin longer first.
		fcfg.SleepAfter = ProcessSleepAfter
	}
	p.bind(&fcfg)
	if fcfg.Alarm == nil && alarm != nil {
		// Arrivals from other processes wake a sleeping worker at once.
		fcfg.Alarm = alarm
	}
	if opts.Progress == ProgressIdle {
		userIdle := fcfg.Idle
		fcfg.Idle = func(w int) bool {
			n := p.progress(w) > 0
			if userIdle != nil && userIdle(w) {
				n = true
			}
			return n
		}
	}
	sched, err := fiber.New(fcfg)
	if err != nil {
		_ = p.tr.Close()
		if p.boot != nil {
			_ = p.boot.Close()
		}
		return nil, err
	}
	p.sched = sched
	pool, err := packet.New(packet.Config{
		Workers:     sched.Workers(),
		PerWorker:   opts.PacketsPerWorker,
		PayloadSize: opts.PayloadSize,
		Overflow:    packet.OverflowGrow,
		MaxPackets:  1 << 20,
	})
	if err != nil {
		sched.Close()
		_ = p.tr.Close()
		if p.boot != nil {
			_ = p.boot.Close()
		}
		return nil, err
	}
	p.pool = pool
	ones := make([]int, p.procs)
	for i := range ones {
		ones[i] = 1
	}
	world, cores, err := p.addComms(0, ones)
	if err != nil {
		p.Finalize()
		return nil, err
	}
	p.world, p.worldCore = world.world, cores[0]
	p.worldProc = world.proc
	if err := p.bound(); err != nil {
		p.Finalize()
		return nil, err
	}
	if p.boot != nil {
		p.unwatch = make(chan struct{})
		p.watched = make(chan struct{})
		go p.watch()
		p.startLostWatch()
	}
	if opts.Progress == ProgressServer {
		p.serverDone = make(chan struct{})
		go p.serve()
	}
	if err := p.startWatchdogs(); err != nil {
		p.Finalize()
		return nil, err
	}
	return p, nil
}

// serve is the communication server: it polls the transport on its own
// locked thread until Finalize, backing off (without parking) while idle,
// and going through the Go scheduler every few milliseconds while busy
// (internal/breath).
func (p *Process) serve() {
	defer close(p.serverDone)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	idle := 0
	var breath breath.Clock
	for !p.serverStop.Load() {
		breath.Turn()
		if p.progress(packet.NoWorker) > 0 {
			idle = 0
			continue
		}
		if idle++; idle > 1024 {
			runtime.Gosched() // long idle: let the Go scheduler run others
		}
	}
}

// alarmOf returns tr's Alarm, or nil if it has none.
func alarmOf(tr rdma.Transport) rdma.Alarm {
	switch t := tr.(type) {
	case rdma.AlarmSource:
		return t.Alarm()
	case rdma.Alarm:
		return t
	}
	return nil
}

// remote reports whether the endpoint at a is reached only by packets (the
// protocol between processes: offers, RTS), not directly: it lives in
// another process, or the transport reaches no endpoint directly.
func (p *Process) remote(a rdma.Addr) bool {
	return p.local == nil || (p.procs > 1 && p.layout.Owner(a) != p.rank)
}

// progress polls the transport and drains the backlog, returning how much
// it handled.
func (p *Process) progress(w int) int {
	return p.tr.Progress(w) + p.drain()
}

// moverOf returns the transport that moves large messages to or from the
// endpoint a of another process itself (rdma.Mover), nil if there is none.
func (p *Process) moverOf(a rdma.Addr) rdma.Mover {
	if p.moverRouter != nil {
		return p.moverRouter.MoverVia(a)
	}
	return p.mover
}

// pause lets other work run while a caller waits for a resource: a fiber
// yields; a goroutine, or a caller whose waiter is unknown (nil), lets other
// goroutines run.
func (p *Process) pause(w *fiber.Waiter) {
	if w != nil {
		if f := w.Fiber(); f != nil {
			f.Yield()
			return
		}
	}
	runtime.Gosched()
}

// comms is what one collective endpoint creation makes: the new world
// (every endpoint made, of every process) and this process's part of it.
type comms struct {
	world, proc Comm
	rank        int // this process's first endpoint's rank in world
}

// newComms makes k endpoints at this process, collectively with every
// process of the job (each may ask a different k), and the communicators
// over them.
func (p *Process) newComms(k int) (comms, []*core, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.finalized.Load() {
		return comms{}, nil, ErrFinalized
	}
	// Init's own endpoint is not counted: MaxEndpoints bounds the
	// endpoints CreateEndpoints may add (the MPI_ENDPOINTS attribute).
	var local error
	if p.made+k > p.opts.MaxEndpoints {
		local = fmt.Errorf("%w: %d more would exceed MaxEndpoints %d (created %d)",
			ErrEndpoints, k, p.opts.MaxEndpoints, p.made)
	}
	counts, err := p.agree(k, local)
	if err != nil {
		return comms{}, nil, err
	}
	base, err := p.layout.Append(counts)
	if err != nil {
		return comms{}, nil, fmt.Errorf("%w: %w", ErrEndpoints, err)
	}
	c, cores, err := p.addCommsLocked(base, counts)
	if err != nil {
		return comms{}, nil, err
	}
	p.made += k
	if err := p.bound(); err != nil {
		return comms{}, nil, err
	}
	return c, cores, nil
}

// bound returns, in a job of several processes, once every process has
// bound its new endpoints, so that a send to any of them may start.
func (p *Process) bound() error {
	if p.boot == nil {
		return nil
	}
	if err := p.boot.Fence(); err != nil {
		return fmt.Errorf("%w: waiting for the other processes' endpoints: %w", ErrEndpoints, err)
	}
	return nil
}

// addComms is addCommsLocked under p.mu.
func (p *Process) addComms(base rdma.Addr, counts []int) (comms, []*core, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.addCommsLocked(base, counts)
}

// addCommsLocked makes this process's counts[p.rank] endpoints at their
// addresses (from base, as rdma.Layout.Append placed them) and the world
// and process communicators. Every process takes the same context ids: a
// pair for the world and, in a job of several processes, one for the
// process communicator (in a job of one they are the same communicator).
func (p *Process) addCommsLocked(base rdma.Addr, counts []int) (comms, []*core, error) {
	total := 0
	for _, n := range counts {
		total += n
	}
	k := counts[p.rank]
	mine := rdma.Base(base, counts, p.rank)
	world := Comm{Context: p.nextCtx, Addrs: make([]rdma.Addr, total)}
	for i := range world.Addrs {
		world.Addrs[i] = base + rdma.Addr(i)
	}
	proc := Comm{Context: world.Context, Addrs: world.Addrs[mine-base : mine-base+rdma.Addr(k)]}
	if p.procs > 1 {
		proc.Context = p.nextCtx + 2
	}
	mcfg := p.opts.Match
	if mcfg.Expected == 0 {
		// Dang et al. 2016b §3.2: the table size follows the number of concurrent
		// operations, which the packet pool bounds; endpoints made
		// together share the pool, so each gets its share (16 at least,
		// match.DefaultExpected at most): a million endpoints then cost
		// a few hundred bytes of table each, not tens of kilobytes.
		pc := p.pool.Config()
		packets := pc.Workers*pc.PerWorker + pc.Shared
		mcfg.Expected = min(max(packets/max(k, 1), 16), match.DefaultExpected)
	}
	cores := make([]*core, k)
	for i := range k {
		cr, err := newCore(p, mine+rdma.Addr(i), p.level, mcfg)
		if err != nil {
			return comms{}, nil, err
		}
		cr.ctx.reserve(world.Context)
		if proc.Context != world.Context {
			cr.ctx.reserve(proc.Context)
		}
		p.cores = append(p.cores, cr)
		cores[i] = cr
	}
	if p.procs > 1 {
		p.nextCtx += 4
	} else {
		p.nextCtx += 2 // a pair: the world's collectives use Context+1
	}
	return comms{world: world, proc: proc, rank: int(mine - base)}, cores, nil
}

// ThreadLevel returns the level the process was initialised with.
func (p *Process) ThreadLevel() ThreadLevel { return p.level }

// MaxEndpoints returns how many endpoints this process may have in all (the
// MPI_ENDPOINTS attribute).
func (p *Process) MaxEndpoints() int { return p.opts.MaxEndpoints }

// Options returns the effective options.
func (p *Process) Options() Options { return p.opts }

// Scheduler returns the process's fiber scheduler.
func (p *Process) Scheduler() *fiber.Scheduler { return p.sched }

// World returns the Init world's endpoint at this process, not yet
// registered: rank Rank() of a world with one endpoint per process (rank 0
// of a one-endpoint world in the embedded default). Its Process
// communicator holds it alone.
func (p *Process) World() *Endpoint {
	return &Endpoint{c: p.worldCore, world: p.world, proc: p.worldProc, rank: int32(p.rank)}
}

// Rank returns this process's index in the job, 0 to Procs()−1.
func (p *Process) Rank() int { return p.rank }

// Procs returns the number of processes in the job.
func (p *Process) Procs() int { return p.procs }

// Transport returns the transport the process's endpoints use (its Name
// says which backends carry what).
func (p *Process) Transport() rdma.Transport { return p.tr }

// CreateEndpoints makes k endpoints at this process and returns them, not
// yet registered, as ranks of a new world communicator (Snir 2009
// MPI_Endpoint_create; Sridharan et al. 2014 CreateEndpoints). It is collective over the
// processes of the job, each of which may ask a different k (at least 1):
// the new world holds process 0's endpoints first, then process 1's, and
// so on. In the embedded default the new world is these k endpoints, ranks
// 0 to k−1. Endpoint.Process lists this process's endpoints (CommProcess).
// It blocks the calling goroutine until every process has called it.
func (p *Process) CreateEndpoints(k int) ([]*Endpoint, error) {
	if k < 1 {
		// Still take part, so the other processes fail too instead of
		// waiting.
		if p.procs > 1 {
			_, _, _ = p.newComms(-1)
		}
		return nil, fmt.Errorf("%w: CreateEndpoints(%d)", ErrEndpoints, k)
	}
	c, cores, err := p.newComms(k)
	if err != nil {
		return nil, err
	}
	eps := make([]*Endpoint, k)
	for i, cr := range cores {
		eps[i] = &Endpoint{c: cr, world: c.world, proc: c.proc, rank: int32(c.rank + i)}
	}
	return eps, nil
}

// Finalize ends the process's part of the job: every call still blocked
// (a fiber's or a goroutine's) returns ErrFinalized, or the job's
// *AbortError if it had failed; fibers that then block again outside
// fibermpi are cancelled (unwound); the workers stop; and every later call
// fails the same way. Call it after the ranks are done (Run does). It
// returns fibers' panics.
func (p *Process) Finalize() error {
	if !p.finalized.CompareAndSwap(false, true) {
		return ErrFinalized
	}
	// From here on a process that exits may have finalized: it is no
	// longer a loss (peerwatch.go).
	p.stopLostWatch()
	p.endCalls() // blocked callers return ErrFinalized (job.go)
	var berr error
	if p.boot != nil && (p.job.end.Load() == nil || p.jobDeadlocked()) {
		// No process may close its transport while another may still
		// send to it: wait for all of them (or the job's failure). A job
		// that failed here (job.go) does not wait: the others may be
		// waiting for its ranks; they learn of the failure when this
		// process exits. Except a deadlock of the job (deadlock_job.go):
		// every other process then ends its part too, or is in
		// Finalize already, and one that left at once would make the
		// others see a lost peer before their own verdict.
		if err := p.boot.Barrier(); err != nil {
			berr = fmt.Errorf("endpoint: Finalize: %w", err)
		}
	}
	p.stopJobWatch()
	if p.serverDone != nil {
		p.serverStop.Store(true)
		<-p.serverDone
	}
	err := p.sched.Close()
	p.mu.Lock()
	for _, c := range p.cores {
		_ = p.tr.Unbind(c.addr)
	}
	p.mu.Unlock()
	err = errors.Join(berr, err, p.tr.Close(), p.writeTrace())
	if p.boot != nil {
		close(p.unwatch)
		<-p.watched
		err = errors.Join(err, p.boot.Close())
	}
	return err
}

// Run is the common case in one call: Init, CreateEndpoints(k), and one fiber
// per endpoint, registered with it, running fn; it waits for every rank and
// finalizes.
//
// The job ends at the first failure, as with errgroup and MPI_Abort: a
// rank that returns an error or panics, or calls Endpoint.Abort, ends it,
// and every other rank's blocked or later call returns an *AbortError that
// names the rank and wraps its failure (errors.Is(err, ErrAborted)), so
// every rank returns promptly. A job whose ranks all wait in fibermpi calls
// with nothing in flight fails with a *DeadlockError saying who waits for
// whom (Options.Watch). Run returns the first failure first — a
// *RankError, a *PanicError (with the stack) or a *DeadlockError — joined
// with any other rank's error that was not a consequence of it; RunGoroutines
// does exactly the same.
//
// Workers: the default options give GOMAXPROCS−1 fiber workers (at least
// one; fewer in a process that shares its node with others of the job, see
// Options.Workers), each a goroutine locked to its OS thread; ranks are spread over
// them round-robin and never move. A fiber runs until it blocks in a
// fibermpi call, which yields to the worker's other fibers. So a fiber rank
// must not block in ordinary Go — a channel, select, sync.Mutex, sync.WaitGroup,
// time.Sleep, a blocking system call — which stops every fiber of its
// worker (at GOMAXPROCS=2 there is one worker: every rank stops). Use
// fiber.Sleep, Request.WaitTimeout and WaitContext, which yield, or run
// ranks that need ordinary Go as goroutines (RunGoroutines). A fiber stuck
// that way for Options.Watch.Stuck is reported once, with its rank and stack.
func Run(k int, fn func(*Endpoint) error) error {
	return RunWith(ThreadSingle, Options{}, k, fn)
}

// RunWith is Run with a thread level and options.
func RunWith(level ThreadLevel, opts Options, k int, fn func(*Endpoint) error) error {
	return RunContext(context.Background(), level, opts, k, fn)
}

// RunContext is RunWith that also ends the job when ctx is done: every
// blocked or later call then returns an *AbortError wrapping ctx's cause
// (errors.Is(err, context.Canceled) or context.DeadlineExceeded), and so
// does RunContext, once every rank has returned.
func RunContext(ctx context.Context, level ThreadLevel, opts Options, k int, fn func(*Endpoint) error) error {
	return run(ctx, level, opts, k, fn, false)
}

// RunGoroutines is Run with each rank on a plain goroutine instead of a
// fiber: blocking calls park the goroutine the Go way, and a rank may use
// channels, mutexes, select and time.Sleep freely. fn's handle is
// registered with its goroutine already: no package fiber needed. Errors,
// panics, aborts and deadlocks end the job exactly as in Run. Options and
// a thread level go to RunGoroutinesWith.
func RunGoroutines(k int, fn func(*Endpoint) error) error {
	return RunGoroutinesWith(ThreadSingle, Options{}, k, fn)
}

// RunGoroutinesWith is RunGoroutines with a thread level and options. Use
// ThreadMultiple if a rank's goroutine starts more goroutines that call
// through the same endpoint (each registering its own handle).
func RunGoroutinesWith(level ThreadLevel, opts Options, k int, fn func(*Endpoint) error) error {
	return RunGoroutinesContext(context.Background(), level, opts, k, fn)
}

// RunGoroutinesContext is RunGoroutines that also ends the job when ctx is
// done, as RunContext does.
func RunGoroutinesContext(ctx context.Context, level ThreadLevel, opts Options, k int, fn func(*Endpoint) error) error {
	return run(ctx, level, opts, k, fn, true)
}

// run is the body of the Run family: Init, k endpoints, start each rank
// (on a fiber, or a goroutine), wait, Finalize.
func run(ctx context.Context, level ThreadLevel, opts Options, k int, fn func(*Endpoint) error, goroutines bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p, err := Init(level, opts)
	if err != nil {
		return err
	}
	eps, err := p.CreateEndpoints(k)
	if err != nil {
		return errors.Join(err, p.Finalize())
	}
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(fired)
		p.fail(-1, context.Cause(ctx))
	})
	p.job.pending.Store(int32(k))
	errs := make([]error, k)
	var wg sync.WaitGroup
	for i, ep := range eps {
		rank := func(w *fiber.Waiter) { errs[i] = p.rankFn(i, ep, w, fn) }
		if goroutines {
			wg.Go(func() { rank(fiber.NewGoroutineWaiter()) })
			continue
		}
		if err := p.sched.Spawn(func(f *fiber.Fiber) { rank(f.Waiter()) }); err != nil {
			p.job.pending.Add(-1)
			errs[i] = &RankError{Rank: i, Err: err}
			p.fail(i, errs[i])
		}
	}
	var werr error
	if goroutines {
		wg.Wait()
	} else {
		werr = p.sched.Wait()
	}
	if !stop() {
		<-fired // ctx ended during the run: its abort is the job's end
	}
	return errors.Join(p.result(errs), werr, p.Finalize())
}
