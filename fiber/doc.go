// Package fiber runs millions of user-level threads (fibers) on a few
// OS-thread-locked workers, with a wait/signal pair that costs a few
// nanoseconds to signal and one coroutine switch to hand off.
//
// # Vocabulary
//
//   - worker: a goroutine locked to its OS thread (runtime.LockOSThread,
//     never unlocked), optionally pinned to a CPU, that runs fibers.
//   - fiber: a function run by exactly one worker, cooperatively: it runs
//     until it returns or blocks in a fibermpi call, and never migrates.
//   - slot: a fiber's index in its worker's run bit-vector; slots are
//     reused when fibers end.
//   - waiter: what a blocking call blocks, a fiber or a plain goroutine
//     (Waiter); the layers above hold one and never care which it is.
//   - event: a one-shot signal (Event) that tolerates Signal before Wait.
//
// # Design
//
// A fiber is a runtime coroutine made with iter.Pull by the worker that
// runs it, while that worker is locked to its thread. Resuming it (next) and
// suspending it (yield) are the runtime's coroswitch on the same OS thread:
// no scheduler, no futex, about 30 ns a switch. The Go runtime keeps doing
// everything else for fibers: it grows and moves their stacks, scans them for
// the garbage collector, preempts them, prints their tracebacks, profiles
// them, and the race detector sees their synchronization.
//
// Each worker keeps a two-level run bit-vector (Dang et al. 2016b §3.1, Alg. 3–4).
// Level 1 has one bit per slot; level 2 one bit per level-1 cache line of 8
// words (512 slots). With 8 level-2 words that is Dang et al.'s 262,144 slots
// (Config.MaxFibersPerWorker raises it to 2,097,152). Waking a fiber
// (Waiter.Wake) is an atomic OR into level 1, then into level 2 if that bit is
// not already there, then a look at one flag in case the worker sleeps. The
// worker swaps a level-2 word out with one atomic exchange, then each
// non-empty level-1 word of the lines it names, and runs the word's set bits
// in order, starting after the last fiber it ran; the level-2 scan starts at
// a rotating word. A fiber that became runnable is run after at most one
// pass over the others.
//
// Event keeps one atomic state word, idle, armed or signalled (the
// signalled flag of Dang et al. 2016a §3.1), beside the armed waiter: whichever of
// Signal and Wait comes second sees the other, so a wake-up is never lost or
// doubled. Waiters have binary-semaphore semantics and callers wait in a loop
// on their own condition, which makes stale wake-ups harmless.
//
// Direct handoff: a fiber that blocks after its worker resumed it looks at
// its own level-1 word first and resumes a runnable neighbour itself; the
// neighbour, when it blocks, switches straight back. A ping-pong between two
// fibers then costs one coroutine switch per handoff instead of two (fiber →
// worker → fiber). Nesting is one level deep and a worker allows 64 direct
// handoffs before its own scan runs again, so nothing starves.
//
// Frames: after a coroutine switch the CPU mispredicts the returns the
// resumed fiber makes (its return-address stack holds the other coroutine's
// calls), about 6 ns a frame here, so Event.Wait and Waiter.Block inline
// into their callers and reach the switch through one function.
//
// Spawning from another thread goes through a per-worker lock-free queue
// that the worker drains: a coroutine must be created on the thread that
// will resume it. Spawns beyond a worker's slots wait in order for a slot.
//
// # Idle workers
//
// A worker with nothing to run calls Config.Idle (where the progress engine
// runs), spins for about 5 µs, then pauses between looks, and after
// Config.SleepAfter (1 ms) sleeps. With an idle hook the sleep ends after
// Config.PollInterval; a worker that then finds nothing to do (one pass
// and one call of the hook) sleeps again at once, so an idle process costs
// one look a PollInterval, not a CPU. Work found ends the dozing, and the
// next idle period spins first again. On Linux a pause is sched_yield: it
// returns at once on an idle machine, and on a busy one lets a thread
// queued on the same CPU run first (perhaps the very worker that will
// signal this one), where a busy wait would keep the CPU to the end of its
// time slice. A shorter SleepAfter applies only once a pause has taken
// long (another thread ran meanwhile): while every pause returns at once,
// pausing costs nobody anything and a worker pauses on for 1 ms, which
// spares a program whose threads meet every few tens of microseconds a
// wake-up at every meeting. Elsewhere a pause is a growing busy wait that touches no
// shared memory. Signal and Spawn wake a worker only if it sleeps (one flag
// load). On Linux the worker's
// thread sleeps on a futex, and the wake-up is one FUTEX_WAKE system call
// that makes exactly that thread runnable: about 6–12 µs from Signal to the
// woken fiber here (BenchmarkWakeAsleep), most of it the kernel waking an
// idle CPU. Elsewhere it sleeps on a channel, through the Go scheduler, which
// costs 85–200 µs here: the send readies the locked goroutine on the
// waker's P, which is busy running fibers, so another P has to steal it
// (after a short sleep that the kernel's timer slack stretches) and then hand
// itself to the goroutine's thread and wake it. A locked goroutine must not
// park in the Go scheduler on the hot path for the same reason. A spinning
// worker holds a P, so the default number of workers leaves one P for the
// rest of the program.
//
// Fiber switches do not go through the Go scheduler, so to the runtime a
// busy worker is one goroutine that never stops running. Its monitor
// thread preempts such a goroutine after 10 ms, and if it is in a system
// or cgo call then (a worker that polls MPI or a socket), takes its P away
// and looks again every 20 µs for a while, each look on the worker's CPU
// when the process is bound to one. So every 8 turns of its loop a worker
// reads the clock and, 6 ms after it last did, goes through the scheduler
// itself (runtime.Gosched; see internal/breath). A goroutine that needs the
// worker's P, where GOMAXPROCS is not above the workers, then gets it at
// that moment, for up to its 10 ms time slice.
//
// On Linux, the workers of an unpinned scheduler keep off each other's CPU.
// Two of them on one CPU take turns through their pauses and run at the
// speed of one CPU while another may be idle, and the kernel can leave them
// so for a whole run (it may pack woken threads onto a busy CPU, and does
// not move threads that ran a moment ago). A worker whose pause lasted 20 µs
// or more looks where it runs (getcpu); if a sibling worker is there, an
// allowed CPU has none, and the machine runs no more threads than the
// scheduler has awake workers, it binds its thread to that CPU. Crowded
// there for a time slice by another program, it goes back and unbinds, and
// waits longer before it binds again: on a busy machine sharing a CPU with a
// sibling, which hands it over at every meeting, beats sharing one with
// another program. See spread.go.
//
// Work can also come from outside the process: a peer process's message,
// which only the idle hook finds. A worker given an Alarm
// (Config.Alarm; rdma/shm offers one) sleeps on its own futex word and
// on the alarm's word in shared memory at once (futex_waitv, Linux 5.16),
// so a Signal and a peer's send both wake it; without one, such work waits
// for the sleeping worker's next poll (Config.PollInterval).
//
// # Blocking
//
// Every blocking call in fibermpi says what it does to its caller. In this
// package: Waiter.Block, Event.Wait, Event.WaitTimeout, Event.WaitContext,
// Sleep and Fiber.Yield yield a fiber to its worker and park a plain
// goroutine (Go's way); Scheduler.Wait and Scheduler.Close park the calling
// goroutine and must not be called from a fiber of the same scheduler.
// Inside a fiber, anything that blocks the OS thread (channel operations,
// select, sync.Mutex, sleeping system calls, time.Sleep) stops every fiber
// of that worker until it returns: use Sleep for time.Sleep, and
// WaitTimeout and WaitContext for a select on a timer or on ctx.Done().
// Scheduler.WatchStuck reports, once each, the fibers that keep their
// worker that way for longer than a threshold, with their stack. Current
// tells a blocking call that is given no waiter whether its caller is a
// fiber (one system call), so that it can yield instead.
//
// Observers: Event.Armed, Mark and Marked let a watchdog see what a waiter
// waits on and whether that wait has lasted, without any cost to Signal
// and Wait (endpoint's deadlock report uses them).
//
// # Runtime rules
//
// Breaking these is fatal in the Go runtime (a throw, not a panic), so the
// package is built to make them impossible to break by accident: a fiber is
// resumed only by its own worker's thread (Spawn from elsewhere goes through
// the queue; fibers never migrate); the worker never changes its
// LockOSThread count after creating fibers; and a fiber must not call
// runtime.LockOSThread and then block. runtime.Goexit in a fiber (and so
// testing.T.FailNow) cannot be contained: it ends the worker and is reported
// as ErrGoexit. A fiber's panic is recovered, reported as a *PanicError by
// Scheduler.Wait or Close, and does not disturb other fibers.
//
// # Rejected designs
//
// Hand-written assembly stack switching onto mmap'd stacks (fcontext style)
// switched in about 10 ns and failed in every realistic case: objects
// referenced only from a parked fiber's stack were freed by the garbage
// collector, stack scans faulted, system calls and panics were fatal, stacks
// never grew, and the race detector went blind. Go moves and scans goroutine
// stacks; only the runtime may switch them. Goroutines with channels as the
// fiber mechanism cost a scheduler round trip per handoff and an unpark of a
// locked thread (tens of microseconds) whenever the receiver runs on a
// worker. A queue of runnable fibers instead of the bit-vector needs a lock
// or a CAS loop per wake-up; the bit-vector's wake-up is one OR, and a
// duplicate wake-up is free.
package fiber
