package endpoint

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/fibermpi/fibermpi/fiber"
	"github.com/fibermpi/fibermpi/match"
	"github.com/fibermpi/fibermpi/packet"
	"github.com/fibermpi/fibermpi/rdma"
	"github.com/fibermpi/fibermpi/trace"
)

// The deadlock watchdog. Every registered caller of the job blocked in a
// fibermpi call, with nothing in flight and nothing changing for
// Watch.Deadlock, is a deadlock: no MPI library reports one, they hang. We
// end the job with a *DeadlockError saying who waits for whom.
//
// How it knows, at no cost to the message path: a caller blocked in its
// blocking Send or Recv waits on its handle's scratch request, whose event
// is armed with the caller's waiter; one blocked in Wait, WaitAll, WaitAny
// or a collective told its endpoint which request (noteWait, on the slow
// path only, and only when it changes); one in Probe set a flag. Every
// period (a quarter of Watch.Deadlock) the watchdog looks at each
// registered caller's events. If all of them are armed, it marks them
// (fiber.Event.Mark: armed → marked, which behaves as armed); a mark lasts
// until the event fires or is armed anew, so if every caller's mark is
// still there Watch.Deadlock later, no caller has returned from its wait
// in between, nobody can have sent anything, and in a job whose ranks all
// live in this process nothing can ever wake them. Any caller not blocked
// (computing, sleeping, waiting in ordinary Go, not yet started) or any
// mark gone restarts the clock; a rank busy computing is never blocked.
//
// Limits. A caller blocked in WaitContext, WaitTimeout, Done, fiber.Sleep
// or ordinary Go is counted as running (those waits end on their own, or
// the stuck-fiber report covers them), so a deadlock behind one is not
// reported. With ProgressCaller a Wait on a request other than the blocking
// Send and Recv is not seen as blocked. A goroutine that sends without
// being registered is invisible. Between processes each process can tell
// only its own part (Process.Deadlocked); process 0 decides for the job from
// every process's reports and a count of the messages in flight between
// them (deadlock_job.go), and every deadlocked process then fails its own
// ranks with its own part of the report.

// Defaults of Watch.
const (
	DefaultDeadlockAfter = 1500 * time.Millisecond
	DefaultStuckAfter    = time.Second
)

// Watch configures the job's watchdogs. The zero value turns both on with
// their defaults.
type Watch struct {
	// Deadlock is how long every registered caller must stay blocked in
	// fibermpi calls, with nothing in flight, before the job fails with a
	// *DeadlockError. Zero means DefaultDeadlockAfter; negative turns the
	// watchdog off.
	Deadlock time.Duration
	// Stuck is how long a fiber may keep its worker while blocked in
	// ordinary Go (a channel, a mutex, select, time.Sleep, a system call)
	// before it is reported, once. Zero means DefaultStuckAfter; negative
	// turns the report off.
	Stuck time.Duration
	// OnStuck receives each stuck fiber's report; nil prints it to
	// standard error.
	OnStuck func(*StuckReport)
}

func (w Watch) String() string {
	f := func(d time.Duration) string {
		if d < 0 {
			return "off"
		}
		return d.String()
	}
	d := w.withDefaults()
	return fmt.Sprintf("watch{deadlock=%s stuck=%s}", f(d.Deadlock), f(d.Stuck))
}

func (w Watch) withDefaults() Watch {
	if w.Deadlock == 0 {
		w.Deadlock = DefaultDeadlockAfter
	}
	if w.Stuck == 0 {
		w.Stuck = DefaultStuckAfter
	}
	return w
}

// StuckReport is a fiber rank found blocked in ordinary Go (see Watch.Stuck).
type StuckReport struct {
	// Rank is the stuck fiber's rank in its world, −1 if it is not
	// known. The report knows the ranks registered from fibers of the
	// worker that are not waiting in fibermpi calls (Candidates); when
	// there is one, it is the stuck fiber.
	Rank       int
	Candidates []int
	fiber.StuckFiber
}

// String says which rank, where, and what to do instead.
func (r *StuckReport) String() string {
	who := "a fiber that is not a registered rank"
	switch {
	case r.Rank >= 0:
		who = fmt.Sprintf("rank %d", r.Rank)
	case len(r.Candidates) > 0:
		who = fmt.Sprintf("one of ranks %v", r.Candidates)
	}
	return fmt.Sprintf("fibermpi: %s has kept fiber worker %d for %v while blocked in Go (%s): "+
		"the worker's other fibers, and the ranks waiting for them, cannot run. "+
		"A fiber rank must not block outside fibermpi (channels, mutexes, select, time.Sleep, system calls): "+
		"use fiber.Sleep and the fibermpi waits (WaitTimeout, WaitContext), which yield, or run the ranks "+
		"as goroutines (RunGoroutines). Its stack:\n%s",
		who, r.Worker, r.For.Round(time.Millisecond), r.State, r.Stack)
}

// startWatchdogs starts what Options.Watch asks for (Init).
func (p *Process) startWatchdogs() error {
	w := p.opts.Watch.withDefaults()
	if w.Stuck > 0 {
		if err := p.sched.WatchStuck(w.Stuck, p.onStuck); err != nil {
			return err
		}
	}
	if w.Deadlock > 0 {
		wd := &watchdog{p: p, after: w.Deadlock, stop: make(chan struct{}), done: make(chan struct{})}
		if p.procs > 1 {
			wd.job = &jobWatch{kick: make(chan struct{}, 1)}
			if p.rank == 0 {
				wd.job.reports = make([]atomic.Pointer[procReport], p.procs)
			}
		}
		p.job.mu.Lock()
		p.job.watch = wd
		p.job.mu.Unlock()
		go wd.run()
	}
	return nil
}

// onStuck names the rank of a stuck fiber and reports it. The stuck fiber
// is one of the callers registered from fibers of its worker that are not
// waiting in a fibermpi call (their waits have armed events; the stuck one
// runs Go code); the others of those, if any, were woken and wait for the
// worker to resume them.
func (p *Process) onStuck(sf fiber.StuckFiber) {
	r := &StuckReport{Rank: -1, StuckFiber: sf}
	for _, k := range p.callers() {
		if k.worker != sf.Worker || k.probing.Load() != nil {
			continue
		}
		if k.scratch.ev.Armed() == k.waiter {
			continue
		}
		if w := k.wait.Load(); w != nil && w.ev.Armed() == k.waiter {
			continue
		}
		r.Candidates = append(r.Candidates, int(k.h.rank))
	}
	slices.Sort(r.Candidates)
	if len(r.Candidates) == 1 {
		r.Rank = r.Candidates[0]
	}
	if f := p.opts.Watch.OnStuck; f != nil {
		f(r)
		return
	}
	fmt.Fprintln(os.Stderr, r)
}

// watchdog is the deadlock watchdog's goroutine state.
type watchdog struct {
	p     *Process
	after time.Duration
	stop  chan struct{}
	done  chan struct{}

	// The current episode: since when every caller has been blocked on
	// the same marked waits.
	since time.Time
	marks map[*fiber.Waiter]blockMark

	// ticks counts the looks taken (tests wait on it).
	ticks atomic.Int64

	// job is the state of a job of several processes (deadlock_job.go),
	// nil in a job of one.
	job *jobWatch
}

// blockMark is what a blocked caller waits on: a marked event or a Probe.
type blockMark struct {
	ev    *fiber.Event
	probe *probeWait
}

func (wd *watchdog) stopWatch() {
	close(wd.stop)
	<-wd.done
}

func (wd *watchdog) run() {
	defer close(wd.done)
	t := time.NewTicker(max(wd.after/4, time.Millisecond))
	defer t.Stop()
	var kick <-chan struct{}
	if wd.job != nil {
		kick = wd.job.kick // a verdict arrived: act on it now
	}
	for {
		var now time.Time
		select {
		case <-wd.stop:
			return
		case now = <-t.C:
		case <-kick:
			now = time.Now()
		}
		d := wd.check(now)
		wd.ticks.Add(1)
		if d != nil {
			wd.p.rec.SetDeadlock(d.waitFor()) // nil-safe: tracing off
			wd.p.fail(-1, d)
			if wd.job == nil {
				return
			}
			// In a job of several processes it goes on reporting this
			// process quiet, until Finalize stops it.
		}
	}
}

// check looks at every caller once; it returns the report once the job has
// been deadlocked for wd.after.
func (wd *watchdog) check(now time.Time) *DeadlockError {
	p := wd.p
	if wd.job != nil {
		return wd.checkJob(now)
	}
	if p.job.halted.Load() || p.job.pending.Load() > 0 || !p.allLocal() || p.someRunning() {
		wd.marks = nil
		return nil
	}
	callers := p.callers()
	if wd.marks == nil || !holds(wd.marks, callers) {
		// A new episode, if every caller is blocked now. The marks are
		// checked before they are renewed: a wait that ended and began
		// again on the same event was re-armed, which took its mark away.
		wd.marks, wd.since = blocked(callers), now
		return nil
	}
	if now.Sub(wd.since) < wd.after {
		return nil
	}
	return wd.finalReport(now, callers)
}

// finalReport builds the report of the episode's callers, or returns nil
// (and ends the episode) if one of them moved meanwhile.
func (wd *watchdog) finalReport(now time.Time, callers []*caller) *DeadlockError {
	d := wd.p.report(callers)
	d.After = now.Sub(wd.since)
	if !holds(wd.marks, wd.p.callers()) { // something moved while the report was built
		wd.marks = nil
		return nil
	}
	return d
}

// someRunning reports whether some registered caller is not blocked in a
// fibermpi call, or none is registered: the cheap look the watchdog takes
// first, without copying the callers (a job of a million fibers has a
// million) and stopping at the first one found running.
func (p *Process) someRunning() bool {
	p.job.mu.Lock()
	defer p.job.mu.Unlock()
	if len(p.job.callers) == 0 {
		return true
	}
	for k := range p.job.callers {
		if k.looksBlocked() {
			continue
		}
		twin := false // a waiter registered with several endpoints waits on one
		for o := range p.job.callers {
			if o != k && o.waiter == k.waiter && o.looksBlocked() {
				twin = true
				break
			}
		}
		if !twin {
			return true
		}
	}
	return false
}

// looksBlocked is blockedOn without the mark.
func (k *caller) looksBlocked() bool {
	if k.probing.Load() != nil || k.scratch.ev.Armed() == k.waiter || k.memBlocked() {
		return true
	}
	r := k.wait.Load()
	return r != nil && r.ev.Armed() == k.waiter
}

// callers returns the registered callers.
func (p *Process) callers() []*caller {
	p.job.mu.Lock()
	defer p.job.mu.Unlock()
	out := make([]*caller, 0, len(p.job.callers))
	for k := range p.job.callers {
		out = append(out, k)
	}
	return out
}

// holds reports whether every caller is still blocked on what marks says:
// the same marked event, or the same Probe.
func holds(marks map[*fiber.Waiter]blockMark, callers []*caller) bool {
	if len(callers) == 0 {
		return false
	}
	for w, m := range marks {
		if m.ev != nil && !m.ev.Marked(w) {
			return false
		}
		if m.probe != nil && !slices.ContainsFunc(callers, func(k *caller) bool { return k.waiter == w && k.probing.Load() == m.probe }) {
			return false
		}
	}
	for _, k := range callers {
		if _, ok := marks[k.waiter]; !ok {
			return false // registered since the episode began
		}
	}
	return true
}

// blocked marks what every caller waits on and returns the marks, or nil if
// some caller is not blocked in a fibermpi call (or there is none).
func blocked(callers []*caller) map[*fiber.Waiter]blockMark {
	if len(callers) == 0 {
		return nil
	}
	marks := make(map[*fiber.Waiter]blockMark)
	for _, k := range callers {
		if _, ok := marks[k.waiter]; ok {
			continue // one waiter registered with several endpoints
		}
		m, ok := k.blockedOn()
		for _, o := range callers { // another handle of the waiter may show it
			if ok {
				break
			}
			if o != k && o.waiter == k.waiter {
				m, ok = o.blockedOn()
			}
		}
		if !ok {
			return nil
		}
		marks[k.waiter] = m
	}
	return marks
}

// blockedOn reports what k's waiter is blocked on, marking the event.
func (k *caller) blockedOn() (blockMark, bool) {
	if pw := k.probing.Load(); pw != nil {
		return blockMark{probe: pw}, true
	}
	if m := k.mem.Load(); m != nil && m.Event.Mark(k.waiter) {
		return blockMark{ev: &m.Event}, true
	}
	for _, r := range []*Request{k.scratch, k.wait.Load()} {
		if r != nil && r.ev.Mark(k.waiter) {
			return blockMark{ev: &r.ev}, true
		}
	}
	return blockMark{}, false
}

// allLocal reports whether every endpoint of the job lives in this
// process: only then can the watchdog decide alone. Every world of a job of
// several processes spans them all (Init and CreateEndpoints are
// collective over the processes).
func (p *Process) allLocal() bool { return p.procs == 1 }

// Deadlocked reports this process's part of a deadlock: if every caller
// registered here is blocked in a fibermpi call, what each waits for and
// what is queued at its endpoint (ok true); otherwise ok is false. It is
// what a process contributes to a deadlock of a job spread over processes
// (every process reports ok, and no packet is in flight between them), as
// the watchdog reports it. It marks what the callers wait on, as the
// watchdog does, which the waits do not notice.
func (p *Process) Deadlocked() (d *DeadlockError, ok bool) {
	callers := p.callers()
	if blocked(callers) == nil {
		return nil, false
	}
	return p.report(callers), true
}

// DeadlockError is the report of a deadlock: every rank still registered
// was blocked in a fibermpi call, with nothing in flight, for After.
type DeadlockError struct {
	After   time.Duration
	Waiting []Waiting // one per blocked caller, by rank
	// Idle lists the ranks of the blocked callers' worlds that have no
	// registered caller: they returned, or never registered.
	Idle []int
	// Cycle is a wait-for cycle among the ranks, the first repeated at
	// the end (0 → 1 → 0 is [0 1 0]); nil if there is none (a rank waits
	// for an idle rank, say). In a job of several processes it is one
	// among this process's ranks only.
	Cycle []int
	// Process and Procs place the report in its job: in a job of several
	// processes each reports its own ranks (Waiting, Idle), and process 0
	// decided for all (see the package's deadlock watchdog).
	Process, Procs int
}

// Waiting is one blocked caller in a deadlock report.
type Waiting struct {
	Rank   int    // the caller's rank in its world
	Call   string // Recv, Send, Wait (a request's, WaitAll's, WaitAny's), Probe, "a collective"
	Ops    []Op   // the operations it waits for
	Queued []Op   // unmatched messages queued at its endpoint
}

// Op is an operation in a deadlock report: a pending receive or send, or
// a queued message.
type Op struct {
	Send       bool   // a send waiting for its receiver (rendezvous)
	Message    bool   // a queued message that no receive has matched
	Context    uint32 // the communicator's context id
	Collective bool   // traffic of a collective on the communicator
	Memory     bool   // a collective through shared memory waits for the peer (MemWait)
	World      bool   // the communicator is the caller's world
	Peer       int    // the peer's rank in the communicator, or AnySource (receives)
	PeerRank   int    // the peer's rank in the world, −1 if unknown or any
	Tag        int    // AnyTag for any (receives)
	Bytes      int
}

// Is makes errors.Is(err, ErrDeadlock) true.
func (e *DeadlockError) Is(target error) bool { return target == ErrDeadlock }

// Error is the whole report, one line per blocked rank.
func (e *DeadlockError) Error() string {
	var b strings.Builder
	if e.Procs > 1 {
		fmt.Fprintf(&b, "endpoint: deadlock: every rank of the job's %d processes has waited with nothing in flight (this process, %d, for %v); its ranks:",
			e.Procs, e.Process, e.After.Round(time.Millisecond))
	} else {
		fmt.Fprintf(&b, "endpoint: deadlock: every rank has waited %v with nothing in flight", e.After.Round(time.Millisecond))
	}
	for _, w := range e.Waiting {
		fmt.Fprintf(&b, "\n  rank %d in %s:", w.Rank, w.Call)
		for i, op := range w.Ops {
			if i > 0 {
				b.WriteString(";")
			}
			b.WriteString(" " + op.String())
		}
		for _, q := range w.Queued {
			b.WriteString("\n    queued, unmatched: " + q.String())
		}
	}
	if len(e.Idle) > 0 {
		fmt.Fprintf(&b, "\n  ranks with no caller (returned or never started): %v", e.Idle)
	}
	if len(e.Cycle) > 0 {
		parts := make([]string, len(e.Cycle))
		for i, r := range e.Cycle {
			parts[i] = fmt.Sprint(r)
		}
		b.WriteString("\n  wait-for cycle: rank " + strings.Join(parts, " → rank "))
	}
	return b.String()
}

// String describes one operation.
func (o Op) String() string {
	var b strings.Builder
	switch {
	case o.Send:
		b.WriteString("send to ")
	case o.Memory:
		b.WriteString("wait through memory for ")
	case o.Message:
		b.WriteString("a message from ")
	default:
		b.WriteString("receive from ")
	}
	switch {
	case !o.Send && o.Peer == AnySource:
		b.WriteString("any rank")
	case o.PeerRank >= 0:
		fmt.Fprintf(&b, "rank %d", o.PeerRank)
	case !o.Send:
		fmt.Fprintf(&b, "rank %d of the communicator", o.Peer)
	default:
		b.WriteString("an unknown rank")
	}
	if !o.Send {
		switch {
		case o.Tag == AnyTag:
			b.WriteString(", any tag")
		case o.Collective:
			fmt.Fprintf(&b, ", collective #%d", o.Tag)
		default:
			fmt.Fprintf(&b, ", tag %d", o.Tag)
		}
		switch {
		case o.Collective && o.World:
			b.WriteString(", in a collective on the world")
		case o.Collective:
			fmt.Fprintf(&b, ", in a collective on the communicator of context %d", o.Context-1)
		case o.World:
			b.WriteString(", on the world")
		default:
			fmt.Fprintf(&b, ", on the communicator of context %d", o.Context)
		}
	}
	fmt.Fprintf(&b, " (%d bytes)", o.Bytes)
	return b.String()
}

// report builds the deadlock report from every registered caller and the
// endpoints' tables and rendezvous registries.
func (p *Process) report(callers []*caller) *DeadlockError {
	callers = slices.Clone(callers)
	p.job.mu.Lock()
	comms := make(map[commKey][]rdma.Addr, len(p.job.comms))
	for k, v := range p.job.comms {
		comms[k] = v
	}
	p.job.mu.Unlock()
	slices.SortFunc(callers, func(a, b *caller) int { return int(a.h.rank) - int(b.h.rank) })

	// What is pending at each endpoint of a caller.
	type pending struct {
		ops  map[*Request]Op
		msgs []Op
	}
	at := make(map[*core]*pending)
	rankOf := func(world Comm, a rdma.Addr) int {
		if i := slices.Index(world.Addrs, a); i >= 0 {
			return i
		}
		return -1
	}
	members := func(c *core, world Comm, ctx uint32) []rdma.Addr {
		even := ctx &^ 1
		if even == world.Context {
			return world.Addrs
		}
		return comms[commKey{c.addr, even}]
	}
	for _, k := range callers {
		c := k.h.c
		if at[c] != nil {
			continue
		}
		pd := &pending{ops: make(map[*Request]Op)}
		at[c] = pd
		world := k.h.world
		keyOp := func(key match.Key, bytes int) Op {
			return recvOp(key.Context(), int(key.Source()), int(key.Tag()), bytes, world, members(c, world, key.Context()))
		}
		c.table.Range(func(key match.Key, m *packet.Packet, r *Request) bool {
			if r != nil {
				pd.ops[r] = keyOp(key, len(r.buf))
				return true
			}
			n := m.Len()
			if m.Kind == packet.KindRTS {
				n = int(m.Size)
			}
			op := keyOp(key, n)
			op.Message = true
			pd.msgs = append(pd.msgs, op)
			return true
		})
		c.rvMu.Lock()
		for _, r := range c.rv {
			if _, queued := pd.ops[r]; queued || r.kind != reqSend {
				continue
			}
			pr := rankOf(world, r.peer)
			pd.ops[r] = Op{Send: true, Peer: pr, PeerRank: pr, Bytes: len(r.buf)}
		}
		c.rvMu.Unlock()
	}

	d := &DeadlockError{Process: p.rank, Procs: p.procs}
	registered := make(map[rdma.Addr]bool)
	edges := make(map[int][]int)
	for _, k := range callers {
		registered[k.h.c.addr] = true
		pd := at[k.h.c]
		w := Waiting{Rank: int(k.h.rank), Call: k.call(), Queued: pd.msgs}
		for r, op := range pd.ops {
			if r.ev.Armed() == k.waiter {
				w.Ops = append(w.Ops, op)
			}
		}
		if pw := k.probing.Load(); pw != nil {
			world := k.h.world
			w.Ops = append(w.Ops, recvOp(pw.c.Context, pw.src, pw.tag, 0, world, pw.c.Addrs))
		}
		if k.memBlocked() {
			w.Ops = append(w.Ops, k.memOps()...)
		}
		slices.SortFunc(w.Ops, func(a, b Op) int { return a.PeerRank - b.PeerRank })
		if w.Call == "Wait" && len(w.Ops) > 0 && !slices.ContainsFunc(w.Ops, func(o Op) bool { return !o.Collective }) {
			w.Call = "a collective"
		}
		for _, op := range w.Ops {
			if op.PeerRank >= 0 {
				edges[w.Rank] = append(edges[w.Rank], op.PeerRank)
			} else if op.Peer == AnySource {
				for i := range k.h.world.Addrs {
					if i != w.Rank {
						edges[w.Rank] = append(edges[w.Rank], i)
					}
				}
			}
		}
		d.Waiting = append(d.Waiting, w)
	}
	seen := make(map[int]bool)
	for _, k := range callers {
		for i, a := range k.h.world.Addrs {
			if p.procs > 1 && p.layout.Owner(a) != p.rank {
				continue // another process's rank: its own report says
			}
			if !registered[a] && !seen[i] {
				seen[i] = true
				d.Idle = append(d.Idle, i)
			}
		}
	}
	slices.Sort(d.Idle)
	d.Cycle = findCycle(edges)
	return d
}

// recvOp describes a receive (or a probe, or a queued message) on the
// communicator of context ctx whose ranks are members, for the caller of
// world.
func recvOp(ctx uint32, src, tag, bytes int, world Comm, members []rdma.Addr) Op {
	op := Op{Context: ctx, Collective: ctx&1 == 1, World: ctx&^1 == world.Context, Peer: src, PeerRank: -1, Tag: tag, Bytes: bytes}
	if src >= 0 && src < len(members) {
		op.PeerRank = slices.Index(world.Addrs, members[src])
	}
	return op
}

// waitFor is the report as a trace's wait-for graph (cmd/fmpi-trace
// draws it): an edge per wait on a known rank, or on every other blocked
// rank for a receive from any.
func (d *DeadlockError) waitFor() trace.WaitFor {
	w := trace.WaitFor{Idle: d.Idle, Cycle: d.Cycle, Report: d.Error()}
	for _, b := range d.Waiting {
		for _, op := range b.Ops {
			switch {
			case op.PeerRank >= 0:
				w.Edges = append(w.Edges, trace.WaitEdge{From: b.Rank, To: op.PeerRank, Call: b.Call, Op: op.String()})
			case !op.Send && op.Peer == AnySource:
				for _, o := range d.Waiting {
					if o.Rank != b.Rank {
						w.Edges = append(w.Edges, trace.WaitEdge{From: b.Rank, To: o.Rank, Call: b.Call, Op: op.String()})
					}
				}
			}
		}
	}
	return w
}

// call names the blocking call k is in, as far as the watchdog knows.
func (k *caller) call() string {
	switch {
	case k.probing.Load() != nil:
		return "Probe"
	case k.memBlocked():
		return "a collective"
	case k.scratch.ev.Armed() == k.waiter:
		if k.scratch.kind == reqSend {
			return "Send"
		}
		return "Recv"
	}
	return "Wait"
}

// findCycle returns a cycle of the graph (first node repeated at the end),
// searching from the lowest node; nil if there is none.
func findCycle(edges map[int][]int) []int {
	nodes := make([]int, 0, len(edges))
	for n := range edges {
		nodes = append(nodes, n)
	}
	slices.Sort(nodes)
	const (
		white = iota
		grey
		black
	)
	color := make(map[int]int)
	var stack []int
	var found []int
	var visit func(n int) bool
	visit = func(n int) bool {
		color[n] = grey
		stack = append(stack, n)
		next := slices.Clone(edges[n])
		slices.Sort(next)
		for _, m := range slices.Compact(next) {
			switch color[m] {
			case grey:
				i := slices.Index(stack, m)
				found = append(slices.Clone(stack[i:]), m)
				return true
			case white:
				if visit(m) {
					return true
				}
			}
		}
		stack = stack[:len(stack)-1]
		color[n] = black
		return false
	}
	for _, n := range nodes {
		if color[n] == white && visit(n) {
			return found
		}
	}
	return nil
}
