package comm

import (
	"errors"
	"math/bits"
	"runtime"
	"slices"
	"sync"
	"unsafe"

	"github.com/fibermpi/fibermpi/endpoint"
	"github.com/fibermpi/fibermpi/fiber"
)

// collCtx is where a communicator's collective traffic goes: its collective
// context id (the point-to-point id + 1) over the same ranks, and the tag
// sequence that keeps one collective's messages from another's.
type collCtx struct {
	ep   *endpoint.Endpoint
	comm endpoint.Comm
	rank int
	seq  uint32
	base int // tag = base | seq&mask
	mask int
	eng  *engine // shared with derived communicators
	// free is a blocking collective's schedule that ran to its end
	// without an error, kept for the next one (newSched), nil if none:
	// the communicator's caller runs one blocking collective at a time.
	free *sched
}

// Tag spaces on a collective context: ordinary collectives count in the
// low 22 bits; the leaders of two-level collectives (twolevel.go) set bit
// 22; CreateGroup's temporary communicators set bit 23.
const (
	collTagMask  = 1<<22 - 1
	leadTagBit   = 1 << 22
	groupTagBit  = 1 << 23
	groupTagBits = 13 // user tag bits of CreateGroup
	groupSeqBits = 10
)

func (x *collCtx) size() int { return len(x.comm.Addrs) }

// next returns the tag of the next collective.
func (x *collCtx) next() int {
	t := x.base | int(x.seq)&x.mask
	x.seq++
	return t
}

// xfer is one message of a round: to or from peer, buf.
type xfer struct {
	peer int
	buf  []byte
}

// round is a set of transfers posted together (receives first), then local
// work once they have all completed.
type round struct {
	recv, send []xfer
	then       func()
}

// sched is a collective as a list of rounds, run to completion by run
// (blocking) or advanced by a CollRequest's Test and Wait. Buffers are
// bound when the schedule is built; their contents are read when a round
// is posted, after the previous rounds' local work.
type sched struct {
	x      *collCtx
	tag    int
	rounds []round
	last   func() // local work after the last round

	nested bool // a phase of a two-level collective: not in the engine itself

	cur   int
	reqs  []*endpoint.Request // the current round's receives then sends
	nrecv int
	err   error
	done  bool

	// Kept across the uses of a reused schedule (see release): the
	// rounds' transfers (one), and the requests the rounds post into (a
	// round's requests have all completed before the next round posts).
	xfers []xfer
	rq    []*endpoint.Request
	// arena backs the schedule's temporary buffers (scratch); used is
	// its part handed out. retired holds the large arenas it replaced in
	// this use: their buffers are in use until release gives them back
	// to bigArenas.
	arena   []uint64
	used    int
	retired [][]uint64
}

// arenaKeep is the largest arena a released schedule keeps: a collective
// of large vectors does not leave its buffers held by the communicator.
const arenaKeep = 64 << 10

// scratch returns a zeroed buffer of n elements of T for one use of s,
// from its arena (or, when the arena is short, from a new one that
// replaces it: the buffers already handed out stay where they are). T is
// a communicator's element type, which has no pointers (datatype.Of), so
// its elements may live in a []uint64, whose alignment (8) is the largest
// of such a type.
func scratch[T any](s *sched, n int) []T {
	b := scratchFilled[T](s, n)
	clear(b)
	return b
}

// scratchFilled is scratch without the zeroing, for a buffer its caller
// fills whole before it reads it: a copy of a vector, or the target of a
// receive of its size (a receive of another size fails the collective).
func scratchFilled[T any](s *sched, n int) []T {
	size := n * int(unsafe.Sizeof(*new(T)))
	words := (size + 7) / 8
	if words == 0 {
		return make([]T, n) // zero-size elements or n = 0
	}
	if s.used+words > len(s.arena) {
		// A large arena replaced goes back to bigArenas with the new one
		// (release). Dropped, it was a new arena from the heap at every
		// call of a collective that takes two large buffers (fmpi-osu
		// reduce of 1 MiB between two processes: a quarter of the time
		// in the allocator and in clearing).
		if len(s.arena)*8 > arenaKeep {
			s.retired = append(s.retired, s.arena)
		}
		s.arena, s.used = newArena(max(2*len(s.arena), words, 64)), 0
	}
	w := s.arena[s.used : s.used+words]
	s.used += words
	return view[T](unsafe.Pointer(unsafe.SliceData(w)), n)
}

// newSched returns a schedule for the next collective of x: the one x
// kept (release) if there is one, else a new one.
func newSched(x *collCtx) *sched {
	s := x.free
	if s == nil {
		return &sched{x: x, tag: x.next()}
	}
	x.free = nil
	s.tag = x.next()
	return s
}

// release keeps s, a blocking collective's schedule that has just ended,
// for x's next collective, unless it failed (its receives may have been
// cancelled and still be pending). What the rounds refer to is dropped,
// the storage kept: a blocking collective then allocates nothing once its
// communicator has run one like it.
func (s *sched) release() {
	if s.err != nil || !s.done || s.nested {
		return
	}
	if s.large() {
		// A completed request keeps its buffer until it is reused: do
		// not hold a large one for the next collective.
		s.rq = nil
	}
	zero(s.rounds)
	zero(s.xfers)
	zero(s.reqs)
	s.rounds, s.xfers, s.reqs = s.rounds[:0], s.xfers[:0], s.reqs[:0]
	s.last, s.cur, s.nrecv, s.done = nil, 0, 0, false
	s.used = 0
	if len(s.arena)*8 > arenaKeep {
		putArena(s.arena)
		s.arena = nil
	}
	for i, a := range s.retired {
		putArena(a)
		s.retired[i] = nil
	}
	s.retired = s.retired[:0]
	s.x.free = s
}

// zero zeroes the elements of s one by one: for the few that a schedule
// of a small collective holds, cheaper than clear, whose runtime call
// (memclrHasPointers) cost a barrier or an allreduce of 8 B about 150
// instructions for its three slices.
func zero[E any](s []E) {
	var z E
	for i := 0; i < len(s); i++ {
		s[i] = z
	}
}

// bigArenas holds the arenas larger than arenaKeep that released schedules
// gave back, by size class (class c holds arenas of 1<<c words), for the
// next large collective of any communicator: a loop of allreduces of 1 MiB
// would otherwise allocate, zero and collect a new 512 KiB arena per call
// (perf: a tenth of its time in the allocator's clearing). The garbage
// collector empties the pools of what stays unused.
var bigArenas [bits.UintSize]sync.Pool // of *[]uint64

// newArena returns an arena of at least words words: above arenaKeep, one
// of a power-of-two size, from bigArenas when it has one.
func newArena(words int) []uint64 {
	if words*8 <= arenaKeep {
		return make([]uint64, words)
	}
	c := bits.Len(uint(words - 1))
	if a, ok := bigArenas[c].Get().(*[]uint64); ok {
		return *a
	}
	return make([]uint64, 1<<c)
}

// putArena gives an arena that newArena made above arenaKeep back to
// bigArenas; no buffer carved from it may be in use any more.
func putArena(a []uint64) {
	if n := len(a); n*8 > arenaKeep && n&(n-1) == 0 {
		bigArenas[bits.TrailingZeros(uint(n))].Put(&a)
	}
}

// large reports whether the transfers of s move more than arenaKeep
// bytes in all (they may be chunks of one large vector).
func (s *sched) large() bool {
	n := 0
	for _, r := range s.rounds {
		for _, t := range r.recv {
			n += len(t.buf)
		}
		for _, t := range r.send {
			n += len(t.buf)
		}
	}
	return n > arenaKeep
}

// one returns a list of one transfer, stored in the schedule.
func (s *sched) one(peer int, buf []byte) []xfer {
	s.xfers = append(s.xfers, xfer{peer: peer, buf: buf})
	n := len(s.xfers)
	return s.xfers[n-1 : n : n]
}

// req returns the request for the i-th transfer of a round.
func (s *sched) req(i int) *endpoint.Request {
	for len(s.rq) <= i {
		s.rq = append(s.rq, new(endpoint.Request))
	}
	return s.rq[i]
}

// add appends a round.
func (s *sched) add(recv, send []xfer, then func()) {
	s.rounds = append(s.rounds, round{recv: recv, send: send, then: then})
}

// local appends local work with no communication.
func (s *sched) local(fn func()) {
	if len(s.rounds) == 0 {
		fn()
		return
	}
	r := &s.rounds[len(s.rounds)-1]
	if prev := r.then; prev != nil {
		r.then = func() { prev(); fn() }
	} else {
		r.then = fn
	}
}

// localCopy appends copying src into dst as local work: done at once when
// no round comes before it, as local does, without making a closure.
func localCopy[T any](s *sched, dst, src []T) {
	if len(s.rounds) == 0 {
		copy(dst, src)
		return
	}
	s.local(func() { copy(dst, src) })
}

// post starts the current round's transfers. On a failure it cancels the
// receives it posted and ends the schedule with the error.
func (s *sched) post() {
	r := &s.rounds[s.cur]
	s.reqs = s.reqs[:0]
	s.nrecv = len(r.recv)
	for i, t := range r.recv {
		q := s.req(i)
		if err := s.x.ep.IrecvInto(q, s.x.comm, t.peer, s.tag, t.buf); err != nil {
			s.abort(err)
			return
		}
		s.reqs = append(s.reqs, q)
	}
	for i, t := range r.send {
		q, err := s.x.ep.IsendInto(s.req(len(r.recv)+i), s.x.comm, s.x.rank, t.peer, s.tag, t.buf)
		if err != nil {
			s.abort(err)
			return
		}
		s.reqs = append(s.reqs, q)
	}
}

func (s *sched) abort(err error) {
	for i, q := range s.reqs {
		if i < s.nrecv {
			q.Cancel()
		}
	}
	s.reqs = s.reqs[:0]
	s.fail(err)
	s.done = true
}

func (s *sched) fail(err error) {
	if s.err == nil {
		s.err = err
	}
}

// mismatch records that the ranks disagree on the collective's sizes: an
// erroneous program whose collectives can no longer line up, so it ends
// the job (as MPI's default error handler would), and every other rank's
// blocked or later call returns an *endpoint.AbortError wrapping err.
func (s *sched) mismatch(err *MismatchError) {
	if s.err == nil {
		s.x.ep.Abort(err)
	}
	s.fail(err)
}

// complete checks the finished round's receives, runs its local work and
// moves on (posting the next round, if any).
func (s *sched) complete() {
	s.check()
	// The local work runs even after an error; the rounds after it end at
	// once (the job has ended).
	if r := &s.rounds[s.cur]; r.then != nil {
		r.then()
	}
	s.cur++
	s.start()
}

// check checks the current round's completed requests: an error ends the
// schedule with it, a receive of the wrong size with a *MismatchError.
func (s *sched) check() {
	r := &s.rounds[s.cur]
	for i, q := range s.reqs {
		st := q.Status()
		if st.Err != nil {
			// te is allocated (errors.As takes its address) only here,
			// not for every request of every round.
			var te *endpoint.TruncateError
			if i < s.nrecv && errors.As(st.Err, &te) {
				s.mismatch(&MismatchError{Peer: r.recv[i].peer, Want: te.Have, Got: te.Got})
			} else {
				s.fail(st.Err)
			}
			continue
		}
		if i < s.nrecv && st.Count != len(r.recv[i].buf) {
			s.mismatch(&MismatchError{Peer: r.recv[i].peer, Want: len(r.recv[i].buf), Got: st.Count})
		}
	}
}

// exchange runs one round on the caller's stack, for a collective run
// without a built schedule (coll_now.go): it posts a receive from peer
// recv into rbuf (none if recv < 0) and a send of sbuf to peer send (none
// if send < 0), as post does, waits for both with w and checks them. It
// reports false when the round failed (s.err says why).
func (s *sched) exchange(w *fiber.Waiter, recv int, rbuf []byte, send int, sbuf []byte) bool {
	s.begin()
	var r round
	if recv >= 0 {
		r.recv = s.one(recv, rbuf)
	}
	if send >= 0 {
		r.send = s.one(send, sbuf)
	}
	return s.runRound(w, r)
}

// begin empties the transfers of the last round run directly, for the
// next (release clears only what is left in them).
func (s *sched) begin() {
	zero(s.xfers)
	s.xfers = s.xfers[:0]
}

// runRound posts r, whose transfers are in s.xfers, waits for it with w
// and checks it, as exchange does.
func (s *sched) runRound(w *fiber.Waiter, r round) bool {
	s.rounds = append(s.rounds[:0], r)
	s.cur = 0
	s.post()
	if s.done {
		return false // post failed: s.err
	}
	endpoint.WaitAll(w, s.reqs...)
	s.check()
	return s.err == nil
}

// start posts the current round, or finishes.
func (s *sched) start() {
	if s.done {
		return
	}
	if s.cur == 0 && !s.nested {
		s.x.eng.add(s)
	}
	if s.cur >= len(s.rounds) {
		if s.last != nil {
			s.last()
		}
		s.done = true
		return
	}
	s.post()
}

// run runs the whole schedule, waiting with the caller's waiter.
func (s *sched) run() error {
	s.start()
	err := s.finishAll()
	s.release()
	return err
}

// finishAll continues a started schedule to the end, progressing the
// caller's other pending collectives meanwhile.
func (s *sched) finishAll() error {
	s.x.eng.wait(s.x.ep.Waiter(), s)
	return s.err
}

// advance completes s's rounds while they are complete.
func (s *sched) advance() {
	for !s.done && endpoint.TestAll(s.reqs...) {
		s.complete()
	}
}

func (s *sched) finished() bool { return s.done }

func (s *sched) failure() error { return s.err }

// block waits for the current round and completes it.
func (s *sched) block() {
	endpoint.WaitAll(s.x.ep.Waiter(), s.reqs...)
	s.complete()
}

// prepare readies a wait on several collectives: the schedule's pending
// requests join reqs. If none is pending (they completed since the last
// poll), the schedule is ready to advance: nothing would wake a wait for
// it.
func (s *sched) prepare(reqs []*endpoint.Request) ([]*endpoint.Request, bool, bool) {
	pending := false
	for _, r := range s.reqs {
		if !r.Test() {
			reqs = append(reqs, r)
			pending = true
		}
	}
	return reqs, false, !pending && !s.done
}

// collOp is a pending collective of one caller: a message schedule
// (*sched), a collective through memory (*shmColl), or one in two levels
// of both (*twoLevel).
type collOp interface {
	// advance progresses the collective as far as it can without blocking.
	advance()
	finished() bool
	failure() error
	// block waits until the collective can progress, and progresses it.
	block()
	// prepare readies a wait on several collectives: a schedule appends
	// its pending requests to reqs; a collective through memory arms the
	// caller's waiter on its area (shm) and says whether it may progress
	// at once (ready).
	prepare(reqs []*endpoint.Request) (out []*endpoint.Request, shm, ready bool)
	// unprepare undoes prepare's arming once the caller has woken.
	unprepare()
	// endpoint returns the endpoint the collective's messages go through,
	// nil if it has none now.
	endpoint() *endpoint.Endpoint
}

func (s *sched) endpoint() *endpoint.Endpoint { return s.x.ep }

func (s *sched) unprepare() {}

// engine progresses the pending collectives of one caller's communicators
// (a communicator and those derived from it share one). A round of a
// collective starts only when its rank looks at it, so a rank waiting for
// one collective must keep the others moving: ranks may wait for their
// collectives in different orders, and one rank's next round may be what
// another's current wait needs. It belongs to the caller, like the
// communicator.
type engine struct {
	active []collOp
	reqs   []*endpoint.Request // scratch of wait
}

func (e *engine) add(s collOp) { e.active = append(e.active, s) }

// progress polls the transport through the first pending schedule's
// endpoint, and reports whether it handled anything.
func (e *engine) progress() bool {
	for _, a := range e.active {
		if ep := a.endpoint(); ep != nil {
			return ep.Progress()
		}
	}
	return false
}

// prune drops finished collectives.
func (e *engine) prune() {
	e.active = slices.DeleteFunc(e.active, func(s collOp) bool { return s.finished() })
}

// poll advances every pending collective without blocking.
func (e *engine) poll() {
	for i := 0; i < len(e.active); i++ {
		e.active[i].advance()
	}
	e.prune()
}

// wait blocks w until s is done, advancing every pending collective. With
// only message schedules pending it waits for any of their requests; with
// only collectives through memory, until one of their areas wakes it; with
// both (rare: nonblocking collectives over communicators of both kinds at
// once) it polls, yielding the fiber (or letting other goroutines run)
// between looks.
func (e *engine) wait(w *fiber.Waiter, s collOp) {
	e.poll()
	for !s.finished() {
		if len(e.active) == 1 {
			s.block()
			continue
		}
		// Only requests still pending: poll has advanced every round whose
		// requests are all complete, and a complete one would make WaitAny
		// return at once, spinning a fiber that never yields.
		e.reqs = e.reqs[:0]
		shm, ready := false, false
		for _, a := range e.active {
			var sh, rd bool
			e.reqs, sh, rd = a.prepare(e.reqs)
			shm, ready = shm || sh, ready || rd
		}
		switch {
		case ready:
		case !shm:
			if len(e.reqs) > 0 {
				endpoint.WaitAny(w, e.reqs...)
			}
		case len(e.reqs) == 0:
			w.Block()
		default:
			// Messages and memory at once: poll, driving the transport
			// (a yielding fiber keeps its worker from idling, and idle
			// workers are what polls it).
			if !e.progress() {
				pause(w)
			}
		}
		if shm {
			for _, a := range e.active {
				a.unprepare()
			}
		}
		clear(e.reqs)
		e.poll()
	}
	e.prune()
}

// pause lets others run: a fiber yields, a goroutine lets other goroutines
// run.
func pause(w *fiber.Waiter) {
	if f := w.Fiber(); f != nil {
		f.Yield()
		return
	}
	runtime.Gosched()
}

// CollRequest is a pending nonblocking collective. Like Request it belongs
// to the caller that started it. A collective progresses in steps (the
// rounds of its messages, or the phases of its work through memory); the
// next step starts when Test or Wait finds the current one complete: call
// Test now and then (or Wait) to make progress.
type CollRequest struct {
	op  collOp
	eng *engine
	w   *fiber.Waiter
	st  *state   // held until the collective completes
	h   *handoff // set by Done: a goroutine progresses it (collreq.go)
}

// Wait waits until the collective completes and returns its error. A
// fiber yields, a goroutine parks.
func (q *CollRequest) Wait() error {
	if q == nil {
		return endpoint.ErrNilRequest
	}
	if q.h != nil && !q.h.keep {
		return q.h.wait()
	}
	q.eng.wait(q.w, q.op)
	q.finish()
	return q.op.failure()
}

// Test advances the collective without blocking and reports whether it has
// completed, with its error if so.
func (q *CollRequest) Test() (bool, error) {
	if q == nil {
		return false, endpoint.ErrNilRequest
	}
	if q.h != nil && !q.h.keep {
		return q.h.test()
	}
	q.eng.poll()
	if !q.op.finished() {
		return false, nil
	}
	q.finish()
	return true, q.op.failure()
}

func (q *CollRequest) finish() {
	if q.st != nil {
		q.st.release()
		q.st = nil
	}
	if q.h != nil && q.h.keep {
		q.h.finish(q.op.failure()) // the channel of Done (collreq.go)
	}
}
