package fiber

import (
	"math/bits"
	"runtime"
	"sync/atomic"
	"time"

	"golang.org/x/sys/cpu"

	"github.com/fibermpi/fibermpi/internal/breath"
)

// Bit-vector geometry (Dang et al. 2016b §3.1). Level 1 has one bit per fiber slot;
// level 2 has one bit per level-1 cache line of lineWords words.
const (
	lineWords = 8                    // level-1 words per cache line (s1)
	lineSlots = lineWords * 64       // fiber slots per level-1 line: 512
	l2Slots   = 64 * lineSlots       // slots covered by one level-2 word: 32768
	maxL2     = 64                   // level-2 words at most
	maxSlots  = maxL2 * l2Slots      // 2,097,152 slots per worker at most
	seedSlots = 8 * l2Slots          // Dang et al.'s 262,144 (s1 = s2 = 8)
	maxCancel = 1 << 10              // resumes granted to a cancelled fiber
	relook    = 16                   // times a pass re-takes one level-1 word
	maxDirect = 64                   // direct handoffs between two worker resumes
	spinPause = 32                   // loads per backoff step
	backoffMx = 64                   // longest backoff, in steps
	checkTime = 64                   // idle passes between clock reads
	wakeSlack = 5 * time.Microsecond // idle time spent spinning before backing off
	// crowdPause is how long a pause must take for the worker to conclude
	// that another thread ran on its CPU meanwhile (a sched_yield with
	// nothing else to run returns in about a microsecond).
	crowdPause = 20 * time.Microsecond
	// freeSpin is how long an idle worker keeps pausing, past SleepAfter,
	// while none of its pauses has been crowded (see sleepDue).
	freeSpin = time.Millisecond
)

// worker runs fibers on one locked OS thread. Fields are grouped by who
// writes them: the owner (the worker goroutine and the fibers it runs, one
// at a time), or anyone (signal, Spawn, Close), each group on its own cache
// lines.
type worker struct {
	id  int
	s   *Scheduler
	cpu int // CPU to pin to, or -1

	// Owner-only state.
	cur      *Fiber   // the fiber running now, nil in the scheduler loop
	fibers   []*Fiber // slot -> fiber; nil for a free slot
	free     []uint32 // free slots below len(fibers), reused LIFO
	pending  []*Fiber // spawned fibers waiting for a free slot, FIFO
	pendHead int
	rot      int // level-2 word the next pass starts at (fairness)
	direct   int // direct handoffs since the worker last resumed a fiber
	// local holds the runnable bits of level-1 word localWord that the
	// scan has taken and not run yet; a fiber of that word blocking with a
	// direct handoff takes them too. nextBit is where the scan of a word
	// starts (fairness within a word).
	local     uint64
	localWord uint32
	nextBit   uint
	nslots    int // capacity in slots
	// breath has the worker go through the Go scheduler every few
	// milliseconds (internal/breath): fibers switch without it.
	breath breath.Clock

	// l1 and l2 are the run bit-vectors: written by signal (anyone, atomic
	// OR) and swapped out by the owner (atomic exchange). l2 bit i means
	// "line i of l1 may have a set bit". Each is its own allocation.
	l1 []atomic.Uint64
	l2 []atomic.Uint64

	_ cpu.CacheLinePad
	// spawnq is a LIFO of fibers to create: Spawn pushes with
	// CompareAndSwap, the owner takes the whole list with Swap.
	spawnq atomic.Pointer[Fiber]
	_      cpu.CacheLinePad
	// sleeping is stored true by the owner before it sleeps and read by
	// signal, Spawn and Close after they publish work: each side writes,
	// then reads the other's word, so one of them always sees the other.
	sleeping atomic.Bool
	// stop asks the worker to cancel its fibers and exit (Close).
	stop atomic.Bool
	// park is where the worker's thread sleeps and is woken.
	park parker
	_    cpu.CacheLinePad
	// hb answers the stuck-fiber monitor (watch.go).
	hb heartbeat
	// at is the CPU the worker last found itself on, -1 if not known:
	// stored by the owner, read by the other workers' spread (spread.go).
	at atomic.Int32
	// spr is the owner's spreading state; nil where workers are pinned
	// or cannot be moved.
	spr *spreader
}

func newWorker(s *Scheduler, id, nslots, cpuID int) *worker {
	lines := (nslots + lineSlots - 1) / lineSlots
	w := &worker{
		id:     id,
		s:      s,
		cpu:    cpuID,
		nslots: lines * lineSlots,
		l1:     make([]atomic.Uint64, lines*lineWords),
		l2:     make([]atomic.Uint64, (lines+63)/64),
	}
	w.park.init()
	w.at.Store(-1)
	return w
}

// signal marks slot runnable (Dang et al. 2016b Alg. 4, ThreadSignal): an atomic OR
// into level 1, then into level 2 unless the bit is already there. It may be
// called from anywhere.
func (w *worker) signal(slot uint32) {
	w.l1[slot/64].Or(1 << (slot % 64))
	line := slot / lineSlots
	l2 := &w.l2[line/64]
	bit := uint64(1) << (line % 64)
	// The load is ordered after the OR above: if it sees the level-2 bit,
	// the owner's Swap of that word has not happened yet, and the Swap of
	// our level-1 word comes after it.
	if l2.Load()&bit == 0 {
		l2.Or(bit)
	}
	if w.sleeping.Load() {
		w.wake()
	}
}

// wake ends the worker's sleep; harmless if it is awake.
func (w *worker) wake() { w.park.wake() }

// push queues a new fiber for the worker to create.
func (w *worker) push(f *Fiber) {
	for {
		head := w.spawnq.Load()
		f.qnext = head
		if w.spawnq.CompareAndSwap(head, f) {
			break
		}
	}
	if w.sleeping.Load() {
		w.wake()
	}
}

// run is the worker goroutine: Dang et al. 2016b Alg. 3 plus spawning, idling and
// shutdown. ready receives the result of locking and pinning.
func (w *worker) run(ready chan<- error) {
	defer w.s.wg.Done()
	// Never unlocked: every fiber's coroutine is created under this lock
	// state, and the runtime requires it unchanged at every switch. When
	// the goroutine exits, the thread exits with it.
	runtime.LockOSThread()
	if w.cpu >= 0 {
		if err := pin(w.cpu); err != nil {
			ready <- err
			return
		}
	}
	w.hb.gid.Store(goid())
	defer w.enterThread()() // for Current (current.go)
	ready <- nil
	exited := false
	defer func() {
		if !exited {
			// A fiber called runtime.Goexit; its fibers cannot move.
			w.s.workerDied(w)
		}
	}()
	w.loop()
	exited = true
}

func (w *worker) loop() {
	var (
		idle      int       // consecutive passes without work
		idleSince time.Time // when this idle period began, read lazily
		step      int       // backoff steps per idle pass; 0 while spinning hot
		crowded   bool      // a pause of this idle period was crowded
		// dozing: the worker slept and has found nothing to do since. A
		// sleep with an idle hook ends after PollInterval; such a wake-up
		// looks once (a pass and the hook) and sleeps again, rather than
		// spin through a new idle period: an idle process must not burn a
		// CPU (with SleepAfter 20 ms and PollInterval 1 ms, as in jobs of
		// several processes, a worker spun 95 % of the time).
		dozing bool
	)
	for {
		w.hb.answer()
		w.breath.Turn()
		if w.spawnq.Load() != nil {
			w.drainSpawns()
		}
		if w.pass() {
			idle, idleSince, step, crowded, dozing = 0, time.Time{}, 0, false, false
			continue
		}
		if w.stop.Load() {
			w.shutdown()
			return
		}
		if hook := w.s.cfg.Idle; hook != nil && hook(w.id) {
			idle, idleSince, step, crowded, dozing = 0, time.Time{}, 0, false, false
			continue
		}
		if dozing {
			w.sleep()
			continue
		}
		// Idle policy: spin hot, then pause between looks, then sleep
		// (sleepDue). The clock is read every checkTime passes while
		// spinning hot, and on every pass once pausing (a pause can last
		// a time slice).
		var now time.Time
		if idle++; idle%checkTime == 0 || step > 0 {
			now = time.Now()
			switch d := now.Sub(idleSince); {
			case idleSince.IsZero():
				idleSince = now
			case sleepDue(d, crowded, w.s.cfg.SleepAfter):
				w.sleep()
				idle, idleSince, step, crowded, dozing = 0, time.Time{}, 0, false, true
				continue
			case d >= wakeSlack && idle%checkTime == 0:
				step = min(step+1, backoffMx)
			}
		}
		if step > 0 {
			pause(step)
			if end := time.Now(); end.Sub(now) >= crowdPause {
				// Another thread ran on this CPU meanwhile.
				crowded = true
				if w.spr != nil {
					w.spr.crowded(w, end, end.Sub(now))
				}
			}
		}
	}
}

// sleepDue reports whether a worker idle for idle should sleep now:
// after sleepAfter if one of the pauses of this idle period was crowded
// (took crowdPause or more: another thread wanted the CPU, and pausing on
// would take turns with it), and otherwise only after freeSpin, or
// sleepAfter if that is longer. A pause that returns at once costs no
// other thread anything, while a sleep costs a wake-up when the work
// comes: a futex, an idle CPU woken (6–25 µs on the machines measured),
// and, on kernels that pack woken threads onto busy CPUs, perhaps the CPU
// of the worker that woke it (spread.go). Measured on red-black SOR
// (512×512, two workers, SleepAfter 20 µs, load 1.5, 16 interleaved
// runs): funneled with two threads 233 → 157 µs an iteration (median),
// mpi 210 → 170, threads 160 → 152; at load 5, where pauses are
// crowded, no change.
func sleepDue(idle time.Duration, crowded bool, sleepAfter time.Duration) bool {
	return idle >= sleepAfter && (crowded || idle >= max(sleepAfter, freeSpin))
}

// sleep parks the worker until signal, Spawn or Close wakes it, or the
// Alarm rings, or, when an idle hook is set, until PollInterval passes so
// the hook runs again.
func (w *worker) sleep() {
	w.park.prepare()
	w.sleeping.Store(true)
	if !w.hasWork() {
		var d time.Duration // no limit
		if w.s.cfg.Idle != nil {
			d = w.s.cfg.PollInterval
		}
		if a := w.s.cfg.Alarm; a == nil || !w.sleepAlarm(a, d) {
			w.park.sleep(d)
		}
	}
	w.sleeping.Store(false)
	if w.spr != nil {
		w.at.Store(cpuNow()) // the kernel may have woken it anywhere
	}
}

// sleepAlarm sleeps until the worker's own wake or a's, as sleep; it
// reports false, having not slept, where it cannot (no futex_waitv).
func (w *worker) sleepAlarm(a Alarm, d time.Duration) bool {
	word, val, ok := a.Arm()
	slept := true
	if ok {
		slept = w.park.sleepAlarm(word, val, d)
	}
	a.Disarm()
	return slept
}

// hasWork reports whether anything is runnable or queued.
func (w *worker) hasWork() bool {
	if w.spawnq.Load() != nil || w.stop.Load() {
		return true
	}
	for i := range w.l2 {
		if w.l2[i].Load() != 0 {
			return true
		}
	}
	return false
}

// passOrQueue reports whether the running pass holds bits not run yet, a
// spawn is queued or Close asked the worker to stop: what a fiber alone on
// its worker can find besides itself. Owner only.
func (w *worker) passOrQueue() bool {
	return w.local != 0 || w.spawnq.Load() != nil || w.stop.Load()
}

// othersRunnable reports whether a fiber other than the one in slot self
// is runnable (or taken by the running pass and not run yet), a spawn is
// queued or Close asked the worker to stop. Level 2 may mark lines with
// no bit left (see pass), so it reads their level-1 words. Owner only:
// the worker or the fiber it runs.
func (w *worker) othersRunnable(self uint32) bool {
	if w.passOrQueue() {
		return true
	}
	for i := range w.l2 {
		for lines := w.l2[i].Load(); lines != 0; lines &= lines - 1 {
			line := i*64 + bits.TrailingZeros64(lines)
			for j := line * lineWords; j < (line+1)*lineWords; j++ {
				v := w.l1[j].Load()
				if uint32(j) == self/64 {
					v &^= 1 << (self % 64)
				}
				if v != 0 {
					return true
				}
			}
		}
	}
	return false
}

// pass runs every fiber whose bit is set, visiting level 2 from a rotating
// start, and reports whether it ran any.
func (w *worker) pass() bool {
	ran := false
	n := len(w.l2)
	start := w.rot
	if w.rot++; w.rot == n {
		w.rot = 0
	}
	for k := range n {
		i := start + k
		if i >= n {
			i -= n
		}
		if w.l2[i].Load() == 0 {
			continue
		}
		lines := w.l2[i].Swap(0)
		for lines != 0 {
			line := i*64 + bits.TrailingZeros64(lines)
			lines &= lines - 1
			for j := line * lineWords; j < (line+1)*lineWords; j++ {
				if w.l1[j].Load() == 0 {
					continue
				}
				// Run the word's fibers; then, a bounded number of times,
				// take the bits that were set in it meanwhile (a fiber
				// waking a neighbour) without going back through level 2.
				// Level 2 keeps its bit for this line, which only costs a
				// later pass a look at an empty line.
				// The bits taken but not yet run stay in w.local, where a
				// blocking fiber of this word can take them (direct
				// handoff). Within the word, the bit after the last fiber
				// resumed goes first, so a Yield lets its neighbours run.
				w.localWord = uint32(j)
				for range relook {
					w.local = w.l1[j].Swap(0)
					for w.local != 0 {
						pick := w.local & (^uint64(0) << w.nextBit)
						if pick == 0 {
							pick = w.local
						}
						b := bits.TrailingZeros64(pick)
						w.local &^= 1 << b
						w.nextBit = uint(b+1) & 63
						w.resume(uint32(j*64 + b))
					}
					if w.l1[j].Load() == 0 {
						break
					}
				}
				ran = true
			}
		}
	}
	return ran
}

// resume switches to the fiber in slot until it blocks or ends.
func (w *worker) resume(slot uint32) {
	f := w.fibers[slot]
	if f == nil {
		return // a late Wake for a fiber that has ended
	}
	w.cur = f
	w.direct = 0
	f.started = true
	w.hb.answer()
	_, ok := f.next()
	w.cur = nil
	if !ok {
		w.exit(f)
	}
}

// giveBack returns runnable bits taken from level-1 word j but not run, and
// makes sure level 2 points at their line. Owner only.
func (w *worker) giveBack(j uint32, word uint64) {
	if word == 0 {
		return
	}
	w.l1[j].Or(word)
	line := j / lineWords
	l2 := &w.l2[line/64]
	if bit := uint64(1) << (line % 64); l2.Load()&bit == 0 {
		l2.Or(bit)
	}
}

// drainSpawns creates the queued fibers in the order they were spawned.
func (w *worker) drainSpawns() {
	var fifo *Fiber
	for f := w.spawnq.Swap(nil); f != nil; {
		next := f.qnext
		f.qnext = fifo
		fifo = f
		f = next
	}
	for f := fifo; f != nil; {
		next := f.qnext
		f.qnext = nil
		if !w.place(f) {
			w.pending = append(w.pending, f)
		}
		f = next
	}
}

// place gives f a slot, creates its coroutine and marks it runnable. It
// reports false if every slot is taken.
func (w *worker) place(f *Fiber) bool {
	var slot uint32
	switch {
	case len(w.free) > 0:
		slot = w.free[len(w.free)-1]
		w.free = w.free[:len(w.free)-1]
	case len(w.fibers) < w.nslots:
		slot = uint32(len(w.fibers))
		w.fibers = append(w.fibers, nil)
	default:
		return false
	}
	f.slot = slot
	f.start()
	w.fibers[slot] = f
	w.signal(slot)
	return true
}

// exit releases a finished fiber's slot and places a waiting spawn in it.
func (w *worker) exit(f *Fiber) {
	w.fibers[f.slot] = nil
	w.free = append(w.free, f.slot)
	f.next, f.stop, f.yield, f.fn = nil, nil, nil, nil
	w.s.fiberDone(1)
	if w.pendHead < len(w.pending) {
		p := w.pending[w.pendHead]
		w.pending[w.pendHead] = nil
		w.pendHead++
		if w.pendHead == len(w.pending) {
			w.pending, w.pendHead = w.pending[:0], 0
		}
		w.place(p)
	}
}

// shutdown cancels every fiber of the worker (Close). Fibers that never ran
// are dropped; the others are resumed with their cancelled flag set, so the
// blocking call they are in panics and unwinds them.
func (w *worker) shutdown() {
	dropped := 0
	for f := w.spawnq.Swap(nil); f != nil; f = f.qnext {
		dropped++
	}
	dropped += len(w.pending) - w.pendHead
	w.pending, w.pendHead = nil, 0
	w.s.fiberDone(dropped)
	for _, f := range w.fibers {
		if f != nil {
			w.cancel(f)
		}
	}
}

func (w *worker) cancel(f *Fiber) {
	if !f.started {
		f.stop() // the coroutine ends without running fn
		w.exit(f)
		return
	}
	f.cancelled = true
	for range maxCancel {
		w.cur = f
		_, ok := f.next()
		w.cur = nil
		if !ok {
			w.exit(f)
			return
		}
	}
	// The fiber recovered the cancellation every time and kept blocking.
	w.s.report(&PanicError{Worker: w.id, Value: ErrCancelIgnored})
	w.fibers[f.slot] = nil
	w.s.fiberDone(1)
}
