package fiber

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/cpu"
)

// Watching fibers from outside: what a deadlock detector needs of an Event
// (Mark, Marked, Armed), and the stuck-fiber monitor (WatchStuck), which
// notices a worker that has stayed inside one fiber while that fiber blocks
// in ordinary Go (a channel, a mutex, time.Sleep, a system call) and says so.

// Armed returns the waiter armed on e, or nil if none is (e has fired, or
// nobody waits on it). An observer's view: it may be stale at once.
func (e *Event) Armed() *Waiter {
	if s := e.state.Load(); s == evArmed || s == evMarked {
		return e.w.Load()
	}
	return nil
}

// Mark records that an observer saw e armed with w, and reports whether it
// is: it moves e from armed to marked (a state that behaves exactly as
// armed). Marked(w) then stays true until e fires, is disarmed, or is armed
// again (Rearm, Reset): an observer that finds a waiter's event still
// marked a while later knows that this wait has not ended meanwhile, even if
// the waiter waited on the same event again in between.
func (e *Event) Mark(w *Waiter) bool {
	if w == nil || e.w.Load() != w {
		return false
	}
	if e.state.CompareAndSwap(evArmed, evMarked) {
		return true
	}
	return e.Marked(w)
}

// Marked reports whether e is still marked with w (see Mark).
func (e *Event) Marked(w *Waiter) bool {
	return e.state.Load() == evMarked && e.w.Load() == w
}

// heartbeat lets the stuck-fiber monitor see a worker come back to its
// scheduler: the monitor raises beat; the worker, at each pass of its loop
// and each fiber it resumes, answers by storing the beat in ack. A beat left
// unanswered for a while means the worker has been inside one fiber (or the
// fibers it handed over to directly) all that time.
type heartbeat struct {
	_ cpu.CacheLinePad
	// beat is raised (Store) by the monitor and loaded by the worker at
	// every answer: a load of a line that changes a few times a second.
	beat atomic.Uint64
	// ack is stored by the worker when it sees a new beat and loaded by
	// the monitor.
	ack atomic.Uint64
	// gid is the worker goroutine's id, stored once when it starts; a
	// fiber's goroutine shows it in its traceback ("created by ... in
	// goroutine gid").
	gid atomic.Uint64
	// seen is the last beat answered (the worker's own).
	seen uint64
	_    cpu.CacheLinePad
}

// answer acknowledges the monitor's latest beat. Owner only.
func (h *heartbeat) answer() {
	if b := h.beat.Load(); b != h.seen {
		h.seen = b
		h.ack.Store(b)
	}
}

// StuckFiber reports a worker that has stayed inside one fiber for longer
// than the threshold given to WatchStuck while that fiber is blocked outside
// fibermpi: every other fiber of the worker waits meanwhile.
type StuckFiber struct {
	Worker    int           // the worker's index
	Goroutine uint64        // the fiber's goroutine id, as tracebacks show it
	State     string        // where it blocks, as tracebacks say: "chan receive", "sleep", "sync.Mutex.Lock", "syscall", ...
	For       time.Duration // how long the worker has been inside it, at least
	Stack     string        // the fiber's traceback
}

// String describes the stuck fiber, what it costs and the fix.
func (s StuckFiber) String() string {
	return fmt.Sprintf("fiber: worker %d has been inside one fiber for %v, blocked in Go (%s, goroutine %d): "+
		"every other fiber of the worker waits until it returns. A fiber must not block in a channel, "+
		"mutex, select, time.Sleep or system call; use fiber.Sleep, Event.WaitTimeout or Event.WaitContext "+
		"(which yield), or plain goroutines for such code.\n%s",
		s.Worker, s.For.Round(time.Millisecond), s.State, s.Goroutine, s.Stack)
}

// ErrWatching is returned by WatchStuck when the scheduler is watched already.
var ErrWatching = errors.New("fiber: scheduler already watched")

// stuckWatch is the monitor goroutine's state.
type stuckWatch struct {
	after  time.Duration
	report func(StuckFiber)
	stop   chan struct{}
	done   chan struct{}
	looks  atomic.Int64 // tracebacks taken (tests)
}

// WatchStuck starts a monitor that reports, through report, every fiber
// whose worker stayed inside it for longer than after while the fiber was
// blocked in Go (a channel, select, a mutex, time.Sleep, a system call):
// each such fiber once. A fiber that runs (computes) that long without
// yielding is not reported, nor is one inside a call into C through cgo
// (which tracebacks show as a system call). A nil report prints to
// standard error.
//
// The monitor wakes every after/4; a worker pays one load at each pass of
// its loop and each fiber it resumes. On a suspect it takes a traceback of
// every goroutine (it stops the world for that, once per suspicion, doubling
// the wait before the next look at the same worker), which with very many
// fibers is costly: it reads at most 64 MiB of tracebacks, and reports a
// fiber it did not find there without a stack. Close stops the monitor.
func (s *Scheduler) WatchStuck(after time.Duration, report func(StuckFiber)) error {
	if after <= 0 {
		return fmt.Errorf("%w: WatchStuck after %v", ErrBadConfig, after)
	}
	if report == nil {
		report = func(sf StuckFiber) { fmt.Fprintln(os.Stderr, sf) }
	}
	sw := &stuckWatch{after: after, report: report, stop: make(chan struct{}), done: make(chan struct{})}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return ErrClosed
	case s.watch != nil:
		return ErrWatching
	}
	s.watch = sw
	go sw.run(s)
	return nil
}

// stopWatch stops the monitor, if any, and waits for it (Close).
func (s *Scheduler) stopWatch() {
	s.mu.RLock()
	sw := s.watch
	s.mu.RUnlock()
	if sw != nil {
		close(sw.stop)
		<-sw.done
	}
}

func (sw *stuckWatch) run(s *Scheduler) {
	defer close(sw.done)
	n := len(s.workers)
	raised := make([]time.Time, n) // when the unanswered beat was raised
	look := make([]time.Duration, n)
	reported := make(map[uint64]bool)
	now := time.Now()
	for i, w := range s.workers {
		w.hb.beat.Add(1)
		raised[i], look[i] = now, sw.after
	}
	t := time.NewTicker(max(sw.after/4, time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-sw.stop:
			return
		case now = <-t.C:
		}
		for i, w := range s.workers {
			if w.dead() {
				continue
			}
			b := w.hb.beat.Load()
			if w.hb.ack.Load() == b || w.sleeping.Load() {
				w.hb.beat.Store(b + 1)
				raised[i], look[i] = now, sw.after
				continue
			}
			d := now.Sub(raised[i])
			if d < look[i] {
				continue
			}
			look[i] *= 2
			sf, ok := findStuck(w.hb.gid.Load())
			sw.looks.Add(1)
			if !ok || reported[sf.Goroutine] {
				continue
			}
			reported[sf.Goroutine] = true
			sf.Worker, sf.For = i, d
			sw.report(sf)
		}
	}
}

// maxDump bounds the tracebacks findStuck reads.
const maxDump = 64 << 20

// allStacks returns the traceback of every goroutine, cut at maxDump bytes.
func allStacks() []byte {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) || len(buf) >= maxDump {
			return buf[:n]
		}
		buf = make([]byte, 4*len(buf))
	}
}

// findStuck looks through every goroutine's traceback for a fiber of the
// worker whose goroutine id is worker that is blocked in Go, and returns
// it. A worker runs one fiber at a time, so at most one of its fibers is in
// any state other than "coroutine" (suspended in a switch).
func findStuck(worker uint64) (StuckFiber, bool) {
	if worker == 0 {
		return StuckFiber{}, false
	}
	creator := []byte(" in goroutine " + strconv.FormatUint(worker, 10) + "\n")
	for _, g := range bytes.Split(allStacks(), []byte("\n\n")) {
		id, state, ok := parseHeader(g)
		if !ok || !blockedState(state) || inC(state, g) {
			continue
		}
		i := bytes.LastIndex(g, []byte("\ncreated by "))
		if i < 0 || !bytes.Contains(g[i:], []byte("created by iter.Pull")) {
			continue
		}
		if !bytes.Contains(g[i:], creator) {
			continue
		}
		return StuckFiber{Goroutine: id, State: state, Stack: string(g)}, true
	}
	return StuckFiber{}, false
}

// parseHeader reads "goroutine 7 [chan receive, 2 minutes, locked to
// thread]:", the first line of a traceback: the id and the state.
func parseHeader(g []byte) (uint64, string, bool) {
	line, _, _ := bytes.Cut(g, []byte("\n"))
	rest, ok := bytes.CutPrefix(bytes.TrimSpace(line), []byte("goroutine "))
	if !ok {
		return 0, "", false
	}
	num, rest, ok := bytes.Cut(rest, []byte(" ["))
	if !ok {
		return 0, "", false
	}
	id, err := strconv.ParseUint(string(num), 10, 64)
	if err != nil {
		return 0, "", false
	}
	state, _, _ := strings.Cut(strings.TrimSuffix(string(rest), "]:"), ",")
	return id, state, true
}

// inC reports whether traceback g, in state state, is a call into C through
// cgo: Go shows it as a system call, but its innermost frame is a cgo stub
// (a pkg._Cfunc_name, or runtime.cgocall below it). C code runs as a
// computing fiber does (a transport polling a C library, for one); the
// monitor cannot tell whether it waits, and does not report it.
func inC(state string, g []byte) bool {
	if !strings.HasPrefix(state, "syscall") {
		return false
	}
	_, rest, _ := bytes.Cut(g, []byte("\n"))
	frame, _, _ := bytes.Cut(rest, []byte("\n"))
	return bytes.Contains(frame, []byte("._Cfunc_")) || bytes.HasPrefix(frame, []byte("runtime.cgocall("))
}

// blockedState reports whether a traceback state is a wait in ordinary Go
// (the Go runtime's wait reasons), as opposed to running, runnable, or a
// fiber suspended in a coroutine switch.
func blockedState(s string) bool {
	for _, p := range []string{"chan ", "select", "sleep", "sync.", "semacquire", "IO wait", "syscall", "sync-"} {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// goid returns the calling goroutine's id, parsed from its traceback header
// (about a microsecond).
func goid() uint64 {
	var buf [64]byte
	id, _, _ := parseHeader(buf[:runtime.Stack(buf[:], false)])
	return id
}
