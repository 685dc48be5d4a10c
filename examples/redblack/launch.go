package main

import (
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fibermpi/fibermpi/endpoint"
	"github.com/fibermpi/fibermpi/fiber"
	"github.com/fibermpi/fibermpi/internal/testenv"
)

// team runs the n fibers of one parallel run and collects their outcome: it
// places them on the workers in blocks (fibers i·W/n onwards on worker i, so
// neighbouring stripes share a worker), holds them at a start gate until all
// are set up, times the iterations, and turns the first error or panic of any
// fiber into the run's error without waiting for fibers that would block
// forever on the failed one: it then finalizes the process (or closes the
// scheduler), which unwinds every blocked fiber.
type team struct {
	sched  *fiber.Scheduler
	finish func() error // Finalize or Close
	// shared is set when the team runs on the launched process (job), which
	// outlives the run: a successful run leaves it running, a failed one
	// finalizes it (the only way to unwind the blocked fibers).
	shared bool
	n      int
	gate   *barrier

	start    time.Time     // set by the gate's last arriver
	end      time.Time     // set by the last fiber to finish iterating
	cpuStart time.Duration // process CPU time at start, set with it
	cpuEnd   time.Duration // and at end
	ended    atomic.Int64  // fibers done iterating: Add in stop

	live    atomic.Int64 // fibers not yet returned: Add in each fiber's exit
	done    chan struct{}
	abort   chan struct{}
	failed  atomic.Bool // set (Store) before abort is closed; Load in the panic path
	errOnce sync.Once
	err     error
}

// newTeam returns a team of n fibers on a scheduler with the given workers,
// whose idle workers spin for spin before they sleep (0: the fiber default).
// With level ≥ 0 it initialises a process at that thread level and creates
// k endpoints, returned in order; with level < 0 it only starts a scheduler.
// Under a launcher (job not nil) a level ≥ 0 uses job instead of a new
// process, and the k endpoints are this process's part of a new world of
// every process's k (CreateEndpoints is collective over the processes).
func newTeam(n, workers int, spin time.Duration, level endpoint.ThreadLevel, k int) (*team, []*endpoint.Endpoint, error) {
	t := &team{n: n, gate: newBarrier(n), done: make(chan struct{}), abort: make(chan struct{})}
	t.live.Store(int64(n))
	if level < 0 {
		s, err := fiber.New(fiber.Config{Workers: workers, SleepAfter: spin})
		if err != nil {
			return nil, nil, err
		}
		t.sched, t.finish = s, s.Close
		return t, nil, nil
	}
	if job != nil {
		eps, err := job.CreateEndpoints(k)
		if err != nil {
			return nil, nil, err
		}
		t.sched, t.finish, t.shared = job.Scheduler(), job.Finalize, true
		return t, eps, nil
	}
	p, err := endpoint.Init(level, processOptions(workers, spin))
	if err != nil {
		return nil, nil, err
	}
	eps, err := p.CreateEndpoints(k)
	if err != nil {
		return nil, nil, errors.Join(err, p.Finalize())
	}
	t.sched, t.finish = p.Scheduler(), p.Finalize
	return t, eps, nil
}

// traceFile, if not empty, is where every process newTeam starts writes
// its trace at Finalize (the -trace flag; endpoint.Options.Trace).
var traceFile string

// processOptions are the options of every process the command initialises:
// workers fiber workers that spin for spin when idle, and -trace.
func processOptions(workers int, spin time.Duration) endpoint.Options {
	return endpoint.Options{Workers: workers, Fiber: fiber.Config{SleepAfter: spin}, Trace: traceFile}
}

// job is this OS process's part of a job of several processes when a
// launcher (fmpirun, mpiexec.hydra) started the command, set once by cli
// before any run and finalized by it after the last; nil in the embedded
// default, where every run initialises a process of its own. The variants
// that pass messages then run one stripe per process (see doc.go).
var job *endpoint.Process

// noThreadLevel makes newTeam start a bare scheduler.
const noThreadLevel endpoint.ThreadLevel = -1

// fail records err as the run's error (the first one wins) and aborts.
func (t *team) fail(err error) {
	t.errOnce.Do(func() {
		t.err = err
		t.failed.Store(true)
		close(t.abort)
	})
}

// spawn starts fiber id running body.
func (t *team) spawn(id int, body func(f *fiber.Fiber) error) {
	w := id * t.sched.Workers() / t.n
	err := t.sched.SpawnOn(w, func(f *fiber.Fiber) {
		defer func() {
			if p := recover(); p != nil {
				if t.failed.Load() {
					// Most likely the scheduler unwinding a fiber blocked
					// on one that failed: let it have its panic.
					panic(p)
				}
				t.fail(fmt.Errorf("fiber %d panicked: %v\n%s", id, p, debug.Stack()))
			}
			if t.live.Add(-1) == 0 {
				close(t.done)
			}
		}()
		if err := body(f); err != nil {
			t.fail(fmt.Errorf("fiber %d: %w", id, err))
		}
	})
	if err != nil {
		t.fail(fmt.Errorf("spawning fiber %d: %w", id, err))
	}
}

// begin holds fiber id at the start gate until all n fibers are set up; the
// last to arrive collects the garbage of the set-up and starts the clock.
func (t *team) begin(id int, w *fiber.Waiter) {
	t.gate.wait(id, w, func() {
		collect()
		t.cpuStart, t.start = testenv.ProcessCPU(), time.Now()
	})
}

// collect runs a full garbage collection before a timed part, so that a
// cycle started by the set-up's allocations does not run into the timed
// iterations, whose time would then depend on when it started. (Fiber
// workers hold their Ps and give one to the collector's background worker
// only when the runtime preempts them, so a cycle that overlaps the
// iterations stalls a worker for a scheduler round trip or more.) From a
// fiber it blocks the fiber's worker for the collection.
func collect() { runtime.GC() }

// stop records that a fiber has finished iterating; the last stops the clock.
func (t *team) stop() {
	if t.ended.Add(1) == int64(t.n) {
		t.end, t.cpuEnd = time.Now(), testenv.ProcessCPU()
	}
}

// wait waits until every fiber has returned, or one has failed, ends the
// process or scheduler, and returns the run's error and the iteration time,
// wall and CPU.
func (t *team) wait() (wall, cpu time.Duration, err error) {
	select {
	case <-t.done:
		if t.failed.Load() {
			_ = t.finish()
			return 0, 0, t.err
		}
		finish := t.finish
		if t.shared {
			finish = func() error { return nil }
		}
		if err := errors.Join(t.sched.Wait(), finish()); err != nil {
			return 0, 0, err
		}
		return t.end.Sub(t.start), t.cpuEnd - t.cpuStart, nil
	case <-t.abort:
		// Unwinds the fibers blocked on the failed one; their panics are
		// the scheduler's cancellations, not errors of the run.
		_ = t.finish()
		return 0, 0, t.err
	}
}
