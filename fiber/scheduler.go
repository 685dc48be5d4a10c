package fiber

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Errors returned by the scheduler.
var (
	// ErrClosed is returned by Spawn and SpawnOn after Close began.
	ErrClosed = errors.New("fiber: scheduler closed")
	// ErrNoWorker is returned by SpawnOn for a worker index out of range.
	ErrNoWorker = errors.New("fiber: no such worker")
	// ErrWorkerDead is returned by SpawnOn for a worker that ended because
	// one of its fibers called runtime.Goexit.
	ErrWorkerDead = errors.New("fiber: worker has ended")
	// ErrNilFunc is returned by Spawn and SpawnOn for a nil function.
	ErrNilFunc = errors.New("fiber: nil fiber function")
	// ErrGoexit is the Value of the PanicError reported for a fiber that
	// called runtime.Goexit (testing.T.FailNow does). Goexit cannot be
	// stopped: it ends the fiber's worker, and that worker's other fibers
	// are abandoned (they cannot run on another thread).
	ErrGoexit = errors.New("fiber: runtime.Goexit called in a fiber")
	// ErrCancelIgnored is the Value of the PanicError reported when a
	// fiber kept blocking after Close cancelled it; the fiber is abandoned.
	ErrCancelIgnored = errors.New("fiber: fiber ignored cancellation")
	// ErrBadConfig is wrapped by Config.Validate's errors.
	ErrBadConfig = errors.New("fiber: bad config")
)

// Config configures a Scheduler. The zero value works: GOMAXPROCS−1 workers
// (at least one), unpinned, Dang et al.'s 262,144 fiber slots per worker.
type Config struct {
	// Workers is the number of workers (locked OS threads running fibers).
	// Zero means GOMAXPROCS−1, at least 1: an idle worker spins on its
	// bit-vector holding a P, so one P is left for the rest of the program
	// (the goroutines that spawn, wait and run the Go runtime's work).
	Workers int
	// Pin pins worker i to CPU CPUs[i % len(CPUs)] with sched_setaffinity.
	// If CPUs is empty, the CPUs this process may run on are used, in
	// order. Pinning is supported on Linux only. Unpinned workers are
	// placed by the kernel, except that on Linux two workers found on one
	// CPU of a quiet machine bind one of them to a CPU of its own, until
	// another program crowds it there (see the package doc's Idle workers).
	Pin  bool
	CPUs []int
	// MaxFibersPerWorker is how many fibers a worker runs at once (its
	// bit-vector slots), rounded up to a multiple of 512. Zero means
	// 262,144, Dang et al. 2016b's s1 = s2 = 8 layout; at most 2,097,152. Spawns
	// beyond it wait, in order, for a slot to free.
	MaxFibersPerWorker int
	// Idle, if set, is called by a worker each time it finds no runnable
	// fiber (the progress engine runs here). It returns whether it did
	// useful work, which resets the idle policy. It runs on the worker's
	// goroutine, outside any fiber, and must not block.
	Idle func(worker int) bool
	// SleepAfter is how long a worker stays idle (spinning, then backing
	// off) before it sleeps, if another thread wanted its CPU meanwhile
	// (a pause took long); a worker whose pauses all returned at once
	// stays idle 1ms, or SleepAfter if longer, since pausing then costs
	// no other thread anything. Zero means 1ms. A sleeping worker is woken
	// by the first Signal or Spawn aimed at it, which costs about 10 µs on
	// Linux (a futex) and about 100 µs elsewhere (see the package doc's
	// Idle workers), so keep it above the gaps of a busy program.
	SleepAfter time.Duration
	// PollInterval bounds a sleep when Idle is set, so the hook still runs
	// that often: once a PollInterval while it finds nothing (the worker
	// then sleeps again without spinning). Zero means 1ms.
	PollInterval time.Duration
	// Alarm, if set, also wakes a sleeping worker: the idle hook's source
	// of work (another process's sends) rings it. Without one, work that
	// reaches the hook and not a Signal waits for the next poll. It needs
	// futex_waitv (Linux 5.16); elsewhere it is ignored and the poll
	// remains.
	Alarm Alarm
}

// withDefaults returns c with zero fields replaced by their defaults.
func (c Config) withDefaults() Config {
	if c.Workers == 0 {
		c.Workers = max(runtime.GOMAXPROCS(0)-1, 1)
	}
	if c.MaxFibersPerWorker == 0 {
		c.MaxFibersPerWorker = seedSlots
	}
	c.MaxFibersPerWorker = (c.MaxFibersPerWorker + lineSlots - 1) / lineSlots * lineSlots
	if c.SleepAfter == 0 {
		c.SleepAfter = time.Millisecond
	}
	if c.PollInterval == 0 {
		c.PollInterval = time.Millisecond
	}
	return c
}

// Validate reports whether c is usable.
func (c Config) Validate() error {
	switch {
	case c.Workers < 0:
		return fmt.Errorf("%w: Workers %d < 0", ErrBadConfig, c.Workers)
	case c.MaxFibersPerWorker < 0 || c.MaxFibersPerWorker > maxSlots:
		return fmt.Errorf("%w: MaxFibersPerWorker %d not in [0, %d]", ErrBadConfig, c.MaxFibersPerWorker, maxSlots)
	case c.SleepAfter < 0 || c.PollInterval < 0:
		return fmt.Errorf("%w: negative SleepAfter or PollInterval", ErrBadConfig)
	case len(c.CPUs) > 0 && !c.Pin:
		return fmt.Errorf("%w: CPUs given without Pin", ErrBadConfig)
	}
	for _, id := range c.CPUs {
		if id < 0 {
			return fmt.Errorf("%w: CPU %d < 0", ErrBadConfig, id)
		}
	}
	return nil
}

// String prints the effective configuration (defaults filled in).
func (c Config) String() string {
	d := c.withDefaults()
	pin := "unpinned"
	if d.Pin {
		pin = "pinned"
		if len(d.CPUs) > 0 {
			pin = fmt.Sprintf("pinned to %v", d.CPUs)
		}
	}
	return fmt.Sprintf("fiber.Config{workers=%d %s maxFibers/worker=%d idleHook=%t alarm=%t sleepAfter=%v pollInterval=%v}",
		d.Workers, pin, d.MaxFibersPerWorker, d.Idle != nil, d.Alarm != nil, d.SleepAfter, d.PollInterval)
}

// A Scheduler runs fibers on a fixed set of workers. Its methods may be
// called from any goroutine or fiber, except Wait and Close, which block the
// calling goroutine and must not be called from a fiber of the same
// scheduler (that fiber could never finish).
type Scheduler struct {
	cfg     Config
	workers []*worker
	rr      atomic.Uint32 // round-robin placement counter
	wg      sync.WaitGroup

	// mu orders Spawn against Close: Spawn holds it shared while it
	// queues, Close exclusively while it sets closed.
	mu     sync.RWMutex
	closed bool

	// live counts fibers spawned and not yet ended; Wait sleeps on
	// idleCond until it is zero.
	live     atomic.Int64
	idleMu   sync.Mutex
	idleCond sync.Cond

	errMu sync.Mutex
	errs  []error

	closeOnce sync.Once

	// watch is the stuck-fiber monitor (watch.go), nil if none; set
	// under mu.
	watch *stuckWatch
}

// New starts a scheduler with cfg's workers and returns once every worker
// has locked its thread (and pinned it, if asked).
func New(cfg Config) (*Scheduler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	cpus, err := workerCPUs(cfg)
	if err != nil {
		return nil, err
	}
	s := &Scheduler{cfg: cfg}
	s.idleCond.L = &s.idleMu
	spr := newSpreaders(cfg)
	ready := make(chan error, cfg.Workers)
	for i := range cfg.Workers {
		w := newWorker(s, i, cfg.MaxFibersPerWorker, cpus[i])
		if spr != nil {
			w.spr = spr[i]
		}
		s.workers = append(s.workers, w)
	}
	// Started once all exist: a worker reads the others (spread.go).
	for _, w := range s.workers {
		s.wg.Add(1)
		go w.run(ready)
	}
	var errs []error
	for range cfg.Workers {
		if err := <-ready; err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		s.Close()
		return nil, errors.Join(errs...)
	}
	return s, nil
}

// workerCPUs returns the CPU each worker pins to, -1 for none.
func workerCPUs(cfg Config) ([]int, error) {
	out := make([]int, cfg.Workers)
	if !cfg.Pin {
		for i := range out {
			out[i] = -1
		}
		return out, nil
	}
	allowed, err := allowedCPUs()
	if err != nil {
		return nil, err
	}
	list := cfg.CPUs
	if len(list) == 0 {
		list = allowed
	}
	ok := make(map[int]bool, len(allowed))
	for _, c := range allowed {
		ok[c] = true
	}
	for _, c := range list {
		if !ok[c] {
			return nil, fmt.Errorf("%w: CPU %d is not in this process's affinity set %v", ErrBadConfig, c, allowed)
		}
	}
	for i := range out {
		out[i] = list[i%len(list)]
	}
	return out, nil
}

// Config returns the scheduler's effective configuration.
func (s *Scheduler) Config() Config { return s.cfg }

// Workers returns the number of workers.
func (s *Scheduler) Workers() int { return len(s.workers) }

// Spawn starts fn as a new fiber on the next worker in round-robin order.
// It may be called from any goroutine or fiber and does not block: the
// worker creates the fiber (fibers must be created by the thread that runs
// them) and runs it when it gets to it.
func (s *Scheduler) Spawn(fn func(*Fiber)) error {
	n := uint32(len(s.workers))
	for range n {
		i := int((s.rr.Add(1) - 1) % n)
		if err := s.SpawnOn(i, fn); !errors.Is(err, ErrWorkerDead) {
			return err
		}
	}
	return ErrWorkerDead
}

// SpawnOn starts fn as a new fiber on worker i. Like Spawn it does not block.
func (s *Scheduler) SpawnOn(i int, fn func(*Fiber)) error {
	if fn == nil {
		return ErrNilFunc
	}
	if i < 0 || i >= len(s.workers) {
		return fmt.Errorf("%w: %d (have %d)", ErrNoWorker, i, len(s.workers))
	}
	w := s.workers[i]
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	if w.dead() {
		return ErrWorkerDead
	}
	f := &Fiber{w: w, fn: fn}
	f.waiter.f = f
	s.live.Add(1)
	w.push(f)
	return nil
}

// Live returns the number of fibers spawned that have not ended.
func (s *Scheduler) Live() int { return int(s.live.Load()) }

// Wait blocks the calling goroutine until every fiber spawned so far has
// ended, then returns the panics of fibers that ended since the last Wait or
// Close, joined (each a *PanicError), or nil. The scheduler stays usable.
func (s *Scheduler) Wait() error {
	s.idleMu.Lock()
	for s.live.Load() != 0 {
		s.idleCond.Wait()
	}
	s.idleMu.Unlock()
	return s.takeErrors()
}

// Close stops the scheduler: further spawns fail with ErrClosed, fibers not
// yet started are dropped, fibers still blocked are cancelled (their
// blocking call panics with a value the scheduler recovers, so their
// deferred calls run), and the workers exit. It returns the panics not yet
// returned by Wait, joined. Call Wait first to let fibers finish. Close is
// idempotent; later calls return nil.
func (s *Scheduler) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		s.stopWatch()
		for _, w := range s.workers {
			w.stop.Store(true)
			w.wake()
		}
		s.wg.Wait()
	})
	return s.takeErrors()
}

func (s *Scheduler) report(err error) {
	s.errMu.Lock()
	s.errs = append(s.errs, err)
	s.errMu.Unlock()
}

func (s *Scheduler) takeErrors() error {
	s.errMu.Lock()
	errs := s.errs
	s.errs = nil
	s.errMu.Unlock()
	return errors.Join(errs...)
}

// fiberDone records n fibers ended and wakes Wait when none is left.
func (s *Scheduler) fiberDone(n int) {
	if n == 0 {
		return
	}
	if s.live.Add(int64(-n)) == 0 {
		s.idleMu.Lock()
		s.idleCond.Broadcast()
		s.idleMu.Unlock()
	}
}

// workerDied accounts for a worker ended by runtime.Goexit in a fiber: its
// fibers and queued spawns are abandoned and no longer counted as live.
func (s *Scheduler) workerDied(w *worker) {
	s.mu.Lock()
	w.stop.Store(true) // marks it dead for SpawnOn
	s.mu.Unlock()
	n := 0
	for _, f := range w.fibers {
		if f != nil {
			n++
		}
	}
	for f := w.spawnq.Swap(nil); f != nil; f = f.qnext {
		n++
	}
	n += len(w.pending) - w.pendHead
	s.fiberDone(n)
}

// dead reports whether the worker has stopped (Close or a Goexit).
func (w *worker) dead() bool { return w.stop.Load() }
