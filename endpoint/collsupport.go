package endpoint

import (
	"slices"
	"sync/atomic"

	"github.com/fibermpi/fibermpi/fiber"
	"github.com/fibermpi/fibermpi/rdma"
)

// What the comm package's collectives need from the process beyond
// messages: where each rank lives, and a way to drive progress while they
// wait for something other than a request.

// Owner returns the index of the process (0 to Procs()−1) that owns the
// endpoint at address a, or −1 for an address the job has not allocated.
// Every process of the job agrees on it. It is a load and an index, without
// a lock; the comm package uses it to find the ranks of a communicator that
// share this process's memory.
func (p *Process) Owner(a rdma.Addr) int { return p.layout.Owner(a) }

// Progress polls the transport once for the handle's caller and reports
// whether it handled anything, as a blocking call does between looks when
// it cannot simply sleep on a request (Probe). It never blocks. A caller
// that waits by polling must call it: with ProgressIdle the transport is
// polled only by idle workers, and a fiber that keeps yielding keeps its
// worker busy.
func (e *Endpoint) Progress() bool { return e.c.p.progress(e.worker) > 0 }

// Halted returns nil while calls may proceed, and once the job has ended
// (a rank failed, Abort) or the process is finalizing, the error every call
// now returns (an *AbortError, or ErrFinalized). It is one atomic load.
func (p *Process) Halted() error {
	if !p.job.halted.Load() {
		return nil
	}
	return p.haltErr()
}

// AtHalt registers fn to run each time the process wakes its blocked
// callers because the job ended or the process is finalizing: at once, and
// again now and then until Finalize (a caller that went to sleep just as
// the job ended is woken by a later round). fn must not block; it may run
// on any goroutine. A layer that blocks callers outside requests (comm's
// collectives through memory) registers the wake-up of its sleepers here
// and checks Halted after waking.
func (p *Process) AtHalt(fn func()) {
	j := &p.job
	j.mu.Lock()
	defer j.mu.Unlock()
	var list []func()
	if old := j.atHalt.Load(); old != nil {
		list = slices.Clone(*old)
	}
	list = append(list, fn)
	j.atHalt.Store(&list)
}

func (p *Process) runAtHalt() {
	if fns := p.job.atHalt.Load(); fns != nil {
		for _, fn := range *fns {
			fn()
		}
	}
}

// A MemWait is a wait through shared memory, as the deadlock watchdog sees
// it: a caller of a collective that waits for other ranks' stores rather
// than for a message. Its owner (one rank's slot in comm's shared area)
// arms Event with the caller's waiter while it sleeps; whoever lets it go
// on signals Event. While the event is armed with the caller's waiter (and
// NoteMemWait named it), the watchdog counts the caller as blocked in a
// collective on Comm waiting for Peers.
type MemWait struct {
	Event fiber.Event
	// Comm is the communicator whose ranks share the memory (its
	// collective context id). Set before the first NoteMemWait.
	Comm Comm
	// Me is the caller's rank in Comm.
	Me int
	// Seq numbers the collective waited for (the report shows it).
	Seq atomic.Uint64
	// Peers, if not nil, returns the ranks of Comm the caller waits for;
	// the watchdog calls it from its own goroutine, so it may read only
	// what is safe to read concurrently. Nil, or an empty result, means
	// every other rank.
	Peers func() []int
}

// NoteMemWait tells the deadlock watchdog that the handle's caller blocks
// on mw whenever mw.Event is armed with its waiter (nil: on none). It
// stores only when mw changes, so a caller may call it before each sleep.
func (e *Endpoint) NoteMemWait(mw *MemWait) {
	if k := e.rec; k != nil && k.mem.Load() != mw {
		k.mem.Store(mw)
	}
}

// memBlocked reports whether k sleeps in a wait through memory.
func (k *caller) memBlocked() bool {
	m := k.mem.Load()
	return m != nil && m.Event.Armed() == k.waiter
}

// memOps describes k's wait through memory for a deadlock report.
func (k *caller) memOps() []Op {
	m := k.mem.Load()
	if m == nil {
		return nil
	}
	var peers []int
	if m.Peers != nil {
		peers = m.Peers()
	}
	if len(peers) == 0 {
		for i := range m.Comm.Addrs {
			if i != m.Me {
				peers = append(peers, i)
			}
		}
	}
	world := k.h.world
	ops := make([]Op, 0, len(peers))
	for _, r := range peers {
		op := recvOp(m.Comm.Context, r, int(m.Seq.Load()), 0, world, m.Comm.Addrs)
		op.Memory = true
		ops = append(ops, op)
	}
	return ops
}
