package endpoint

import (
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/cpu"

	"github.com/fibermpi/fibermpi/fiber"
	"github.com/fibermpi/fibermpi/match"
	"github.com/fibermpi/fibermpi/packet"
	"github.com/fibermpi/fibermpi/rdma"
)

// A job ends as errgroup and MPI_Abort end theirs: the first rank to fail
// (return an error, panic, call Abort) ends it, and from then on every
// blocked or later call of every rank in this process returns an error
// that wraps the first failure and names its rank. Finalize ends calls the
// same way, with ErrFinalized. This file holds that state and the sweep
// that wakes the blocked callers; deadlock.go holds the watchdog.

// Errors of the job.
var (
	// ErrAborted is matched by an *AbortError: the job ended because a
	// rank failed, Abort was called, a deadlock was found or the context
	// of RunContext ended.
	ErrAborted = errors.New("endpoint: job aborted")
	// ErrDeadlock is matched by a *DeadlockError (deadlock.go).
	ErrDeadlock = errors.New("endpoint: deadlock")
	// ErrTimeout is returned by Request.WaitTimeout when the time runs out.
	ErrTimeout = errors.New("endpoint: wait timed out")
)

// AbortError is what every blocked or later call returns once the job has
// ended: errors.Is(err, ErrAborted) holds, and errors.Is and errors.As see
// the cause too (a *RankError, a *PanicError, a *DeadlockError, a context's
// error, or what Abort was given).
type AbortError struct {
	Rank  int   // the rank whose failure ended the job, −1 if none did
	Cause error // the first failure
}

// Error names the failure that ended the job.
func (e *AbortError) Error() string {
	return "endpoint: job aborted: " + e.Cause.Error()
}

// Is makes errors.Is(err, ErrAborted) true.
func (e *AbortError) Is(target error) bool { return target == ErrAborted }

// Unwrap returns the cause.
func (e *AbortError) Unwrap() error { return e.Cause }

// RankError is a rank's own error as Run reports it.
type RankError struct {
	Rank int
	Err  error
}

// Error prefixes the rank.
func (e *RankError) Error() string { return fmt.Sprintf("rank %d: %v", e.Rank, e.Err) }

// Unwrap returns the rank's error.
func (e *RankError) Unwrap() error { return e.Err }

// PanicError is a rank's panic, recovered by Run, RunGoroutines and
// RunContext alike.
type PanicError struct {
	Rank  int
	Value any    // the value passed to panic
	Stack []byte // the rank's stack at the panic
}

// Error names the rank and the panic value (the stack is in Stack).
func (e *PanicError) Error() string {
	return fmt.Sprintf("rank %d panicked: %v", e.Rank, e.Value)
}

// Unwrap returns the panic value if it is an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// job is a process's share of the job's fate: whether calls may still
// proceed, why not, and who is registered (for the watchdogs).
type job struct {
	_ cpu.CacheLinePad
	// halted is the one flag the call paths check (enter): set when the
	// job ends (fail) or the process finalizes. The Load in enter pairs
	// with the Store in fail and in endCalls. It has its cache line to
	// itself: every call reads it, and nothing near it may be written.
	halted atomic.Bool
	_      cpu.CacheLinePad
	// end is the first failure, nil while the job runs: CompareAndSwap in
	// fail, Load wherever a halted call needs its error.
	end atomic.Pointer[AbortError]
	// pending counts Run's ranks that have not registered yet: the
	// deadlock watchdog waits for them (they may be what the others wait
	// for).
	pending atomic.Int32
	// transfers counts the rendezvous Puts this process's sends have
	// under way (onRTR to PutDone), and the moved messages its receives
	// take (takeMoved to PutDone): while one moves bytes both callers
	// wait with nothing counted in flight, and the deadlock watchdog of a
	// job of several processes must not call that quiet (deadlock_job.go).
	transfers atomic.Int64
	// rvSent and rvArrived count the RTR and Done packets this process's
	// endpoints sent to and took from other processes: the job's deadlock
	// watchdog adds them to offer.go's counts of messages, so that a
	// rendezvous step in flight is seen as one.
	rvSent, rvArrived atomic.Uint64

	// atHalt holds the functions AtHalt registered; every sweep runs them
	// (collsupport.go). Store under mu (copy on write), Load anywhere.
	atHalt atomic.Pointer[[]func()]

	// cores lists the process's endpoints for the sweep, which must not
	// wait for Process.mu (held across bootstrap fences): Store under mu
	// (copy on write), Load anywhere.
	cores atomic.Pointer[[]*core]

	mu      sync.Mutex
	callers map[*caller]struct{}    // registered handles
	comms   map[commKey][]rdma.Addr // communicators the comm package told us about (reports)
	sweeper chan struct{}           // closed to stop the re-sweeping goroutine
	swept   chan struct{}           // closed by it when it stops
	ended   bool                    // endCalls ran: start no goroutine
	watch   *watchdog               // the deadlock watchdog, nil if off (deadlock.go)
}

// commKey names a communicator at one endpoint: context ids are unique per
// endpoint, not per process.
type commKey struct {
	addr rdma.Addr
	ctx  uint32
}

// caller is one registered handle, as the watchdogs see it. Its fields
// other than the atomics are fixed at Register.
type caller struct {
	h       *Endpoint
	waiter  *fiber.Waiter
	scratch *Request
	worker  int // the fiber's worker, −1 for a goroutine

	// wait is the last request the caller waited for outside its own
	// blocking Send and Recv (Wait, WaitAll, WaitAny, collectives): Store
	// in noteWait, only when it changes; Load by the deadlock watchdog.
	wait atomic.Pointer[Request]
	// probing is set while the caller loops in Probe (Store at the first
	// miss and at the end), Load by the watchdog.
	probing atomic.Pointer[probeWait]
	// mem is the caller's wait through shared memory (collsupport.go):
	// Store in NoteMemWait, only when it changes; Load by the watchdog,
	// which counts the caller blocked while mem.Event is armed with it.
	mem atomic.Pointer[MemWait]
}

// probeWait is a Probe in progress.
type probeWait struct {
	c        Comm
	src, tag int
}

// haltErr is the error of a call made once calls must stop.
func (p *Process) haltErr() error {
	if a := p.job.end.Load(); a != nil {
		return a
	}
	return ErrFinalized
}

// Abort ends the job in this process as a rank's failure would: every
// blocked call of every rank here returns an *AbortError wrapping err (so
// errors.Is(err, ErrAborted) and errors.Is(err, cause) both hold), and so
// does every later call. Only the first failure counts; later ones are
// ignored. This is the entry for a failure found outside the ranks: the
// launcher reporting another process lost or aborted, a supervisor giving
// up. A nil err aborts with ErrAborted itself. It never blocks.
func (p *Process) Abort(err error) {
	p.fail(-1, err)
}

// Abort ends the job on purpose (MPI_Abort), in the name of this rank:
// every rank's blocked and later calls return an *AbortError naming it and
// wrapping err. It returns the error that ended the job (this one, unless
// another failure came first), for the rank to return. It never blocks.
func (e *Endpoint) Abort(err error) error {
	if err == nil {
		err = ErrAborted
	}
	e.c.p.fail(int(e.rank), &RankError{Rank: int(e.rank), Err: err})
	return e.c.p.job.end.Load()
}

// fail ends the job with cause, attributed to rank (−1 for none), unless it
// ended already; it reports whether this call ended it. It wakes every
// blocked caller at once, and keeps sweeping (a call that passed its check
// just before may post after the first sweep) until Finalize.
func (p *Process) fail(rank int, cause error) bool {
	if cause == nil {
		cause = ErrAborted
	}
	a := &AbortError{Rank: rank, Cause: cause}
	if !p.job.end.CompareAndSwap(nil, a) {
		return false
	}
	p.job.halted.Store(true)
	p.sweep(a)
	j := &p.job
	j.mu.Lock()
	if !j.ended && j.sweeper == nil {
		j.sweeper, j.swept = make(chan struct{}), make(chan struct{})
		go p.resweep(a, j.sweeper, j.swept)
	}
	j.mu.Unlock()
	return true
}

// resweep sweeps again and again, more and more rarely, until stop closes.
func (p *Process) resweep(err error, stop, done chan struct{}) {
	defer close(done)
	d := 100 * time.Microsecond
	for {
		t := time.NewTimer(d)
		select {
		case <-stop:
			t.Stop()
			return
		case <-t.C:
		}
		p.sweep(err)
		d = min(2*d, 50*time.Millisecond)
	}
}

// endCalls is Finalize's first step: later calls fail, every blocked call
// returns (ErrFinalized, or the job's failure), and the watchdogs stop.
func (p *Process) endCalls() {
	p.job.halted.Store(true)
	err := p.haltErr()
	j := &p.job
	j.mu.Lock()
	j.ended = true
	callers := len(j.callers)
	stop, done, w := j.sweeper, j.swept, j.watch
	j.mu.Unlock()
	if callers > 0 {
		// Only a registered caller can be blocked (Run's ranks have all
		// returned by now). One that checked the flag just before it was
		// set may post just after the first sweep: a second one, after it
		// had time to.
		p.sweep(err)
		time.Sleep(time.Millisecond)
		p.sweep(err)
	}
	if stop != nil {
		close(stop)
		<-done
	}
	if w != nil && w.job == nil {
		// In a job of several processes the watchdog goes on through
		// Finalize's barrier, reporting this process quiet: a rank of
		// another process may wait for one of this process's ranks
		// (Finalize stops it, stopJobWatch).
		w.stopWatch()
	}
}

// stopJobWatch stops the deadlock watchdog of a job of several processes
// (Finalize, once its barrier is passed or skipped).
func (p *Process) stopJobWatch() {
	p.job.mu.Lock()
	w := p.job.watch
	p.job.mu.Unlock()
	if w != nil && w.job != nil {
		w.stopWatch()
	}
}

// sweep completes every request pending at this process's endpoints with
// err: the receives queued in the matching tables and the rendezvous sends
// and receives in flight. Each is taken first (Cancel, take), so no
// message completes it as well.
func (p *Process) sweep(err error) {
	if cores := p.job.cores.Load(); cores != nil {
		for _, c := range *cores {
			c.sweep(err)
		}
	}
	p.runAtHalt() // collsupport.go
}

// addCore records a new endpoint (newCore).
func (j *job) addCore(c *core) {
	j.mu.Lock()
	defer j.mu.Unlock()
	var list []*core
	if old := j.cores.Load(); old != nil {
		list = *old
	}
	// Readers hold slices of the old length: an append writes past them
	// (or into a new array), never into what they read.
	list = append(list, c)
	j.cores.Store(&list)
}

type postedRecv struct {
	key match.Key
	r   *Request
}

func (c *core) sweep(err error) {
	var recvs []postedRecv
	c.table.Range(func(k match.Key, _ *packet.Packet, r *Request) bool {
		if r != nil {
			recvs = append(recvs, postedRecv{k, r})
		}
		return true
	})
	for _, pr := range recvs {
		if c.table.Cancel(pr.key, pr.r) {
			c.unregister(pr.r)
			pr.r.status.Err = err
			pr.r.complete()
		}
	}
	// Rendezvous in flight: sends waiting for their receiver, receives
	// (matched, or offered to a sender in another process) waiting for the
	// sender's Done. In one process these last only within some caller's
	// call; a late RTR or Done for one taken here is dropped (core.go).
	c.rvMu.Lock()
	ids := make([]uint64, 0, len(c.rv))
	for id := range c.rv {
		ids = append(ids, id)
	}
	c.rvMu.Unlock()
	for _, id := range ids {
		if r := c.take(id); r != nil {
			c.dropRegion(r)
			r.status.Err = err
			r.complete()
		}
	}
}

// addCaller records a registration (Register).
func (p *Process) addCaller(h *Endpoint) *caller {
	k := &caller{h: h, waiter: h.waiter, scratch: h.scratch, worker: -1}
	if f := h.waiter.Fiber(); f != nil {
		k.worker = f.Worker()
	}
	j := &p.job
	j.mu.Lock()
	if j.callers == nil {
		j.callers = make(map[*caller]struct{})
	}
	j.callers[k] = struct{}{}
	j.mu.Unlock()
	return k
}

// dropCaller forgets a registration (Unregister).
func (p *Process) dropCaller(k *caller) {
	if k == nil {
		return
	}
	j := &p.job
	j.mu.Lock()
	delete(j.callers, k)
	j.mu.Unlock()
}

// noteWait tells the deadlock watchdog that w is about to block on r (the
// slow path of WaitFor and WaitAny; the blocking Send and Recv use the
// handle's scratch request, which it knows). It stores only when r changes,
// and only for the caller that started r.
func (r *Request) noteWait(w *fiber.Waiter) {
	if k := r.owner; k != nil && k.waiter == w && k.wait.Load() != r {
		k.wait.Store(r)
	}
}

// noteTimed tells the watchdog that w waits with a limit (WaitTimeout,
// WaitForContext): such a wait ends on its own, so w is not blocked.
func (r *Request) noteTimed(w *fiber.Waiter) {
	if k := r.owner; k != nil && k.waiter == w && k.wait.Load() != nil {
		k.wait.Store(nil)
	}
}

// noteComm records communicator c at endpoint addr, for reports. Later
// records of the same context id at the endpoint replace it (ids are
// reused once released).
func (p *Process) noteComm(addr rdma.Addr, c Comm) {
	j := &p.job
	j.mu.Lock()
	if j.comms == nil {
		j.comms = make(map[commKey][]rdma.Addr)
	}
	j.comms[commKey{addr, c.Context}] = c.Addrs
	j.mu.Unlock()
}

// NoteComm tells the process about a communicator the caller's endpoint
// belongs to (the comm package calls it for every Dup, Split and Create),
// so that a deadlock report can name the peers of a wait on it by their
// ranks in the world. It costs a map store and is never needed for
// correctness.
func (e *Endpoint) NoteComm(c Comm) { e.c.p.noteComm(e.c.addr, c) }

// rankFn runs fn for rank i registered through w, as Run's ranks do: a
// panic is recovered into a *PanicError (in fibers and goroutines alike),
// an error is wrapped in a *RankError, and either ends the job.
func (p *Process) rankFn(i int, ep *Endpoint, w *fiber.Waiter, fn func(*Endpoint) error) (err error) {
	returned := false
	defer func() {
		if returned {
			return
		}
		v := recover()
		switch {
		case v == nil:
			// runtime.Goexit (t.FailNow): it goes on unwinding.
			err = &RankError{Rank: i, Err: errGoexit}
		case fiber.Cancelled(v):
			panic(v) // Close unwinding the fiber: not the rank's failure
		default:
			err = &PanicError{Rank: i, Value: v, Stack: debug.Stack()}
		}
		p.fail(i, err)
	}()
	h, rerr := ep.Register(w)
	p.job.pending.Add(-1)
	if rerr != nil {
		returned = true
		err = &RankError{Rank: i, Err: rerr}
		p.fail(i, err)
		return err
	}
	defer h.Unregister()
	ferr := fn(h)
	returned = true
	if ferr != nil {
		err = &RankError{Rank: i, Err: ferr}
		p.fail(i, err)
	}
	return err
}

// errGoexit is the error of a rank that called runtime.Goexit.
var errGoexit = errors.New("runtime.Goexit called (t.FailNow?)")

// result is Run's error: the failure that ended the job first, then the
// ranks' errors that are not its consequences (an *AbortError) nor itself.
func (p *Process) result(errs []error) error {
	var first error
	if a := p.job.end.Load(); a != nil {
		first = a.Cause
	}
	out := []error{first}
	for _, err := range errs {
		if err == nil || errors.Is(err, ErrAborted) || (first != nil && errors.Is(first, err)) {
			continue
		}
		out = append(out, err)
	}
	return errors.Join(out...)
}
