package comm

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"
	"weak"

	"golang.org/x/sys/cpu"

	"github.com/fibermpi/fibermpi/endpoint"
	"github.com/fibermpi/fibermpi/fiber"
	"github.com/fibermpi/fibermpi/internal/invariants"
	"github.com/fibermpi/fibermpi/trace"
)

// Collectives through memory. When every rank of a communicator lives in
// this process, its collectives do not send messages: the ranks meet in a
// shared area (one per communicator and process, found through a registry)
// and read and write each other's buffers directly.
//
// The area has shmCells cells; collective k of the communicator (every rank
// counts its collectives, and they agree because every rank calls the same
// collectives in the same order) uses cell k mod shmCells, which lets a
// rank run up to shmCells−1 collectives ahead of the slowest (nonblocking
// ones, or the rank that left first). A use of a cell goes:
//
//	wait until gen = use          (the cell's previous use is over)
//	publish: pointers to the rank's buffers, or a copy of small data
//	arrive (arr+1), and for some collectives a second phase (mid+1)
//	read the others' buffers, reduce, copy
//	exit (exit+1): the rank no longer touches the cell nor lets it touch
//	its buffers; the last to exit resets the counters and sets gen = use+1
//
// One rank may decide for all (the last to arrive, or the root): it stores
// its decision (an algorithm, a staged result, a mismatch) in the cell and
// then flag = seq+1. Counters and flags live on their own cache lines;
// each rank's published fields on lines of their own.
//
// Waiting: a rank whose condition (a counter reaching a value) does not
// hold sets its bit in the cell's sleep mask, looks again, and blocks with
// its waiter — a fiber yields to its worker, a goroutine parks. Whoever
// completes a condition (the last arrival, the decider's flag, the last
// exit) swaps the mask to zero and wakes the ranks whose bits were set. No
// rank spins: a worker with nothing to run idles as it always does, and
// the ranks that still compute get the cores.
//
// What the algorithms are (shm_coll.go): small reductions are combined by
// the last rank to arrive, in rank order, into the cell's result buffer,
// from which every rank copies; large ones are a reduce-scatter in place
// (rank r reduces chunk r reading every rank's buffer, writing its own
// receive buffer) then an allgather (each rank copies the others' chunks
// from their receive buffers). Small data that a rank may leave behind
// (Reduce, Gather, Allgather, Alltoall, ReduceScatter from a non-root) is
// copied into the rank's slot so the rank returns at once; large data is
// read where it lies and its owner waits for the last reader.

// shmCells is the number of cells of an area: how far ahead of the slowest
// rank another may run.
const shmCells = 4

// Size limits of the algorithms, in bytes.
const (
	// shmInlineMax: a rank's contribution up to this size is copied into
	// its slot (it may leave before the others read it); larger ones are
	// read in place.
	shmInlineMax = 4 << 10
	// shmCombineMax: a reduction (Allreduce, Reduce) of vectors up to this
	// size is combined by one rank; larger ones are reduce-scattered.
	shmCombineMax = 16 << 10
	// shmStageMax: Bcast and Scatter stage up to this much data in the
	// cell, so the root returns at once; above, the others copy from the
	// root's buffer and the root waits for them.
	shmStageMax = 16 << 10
)

// invariantsOn compiles the shared area's checks in with the invariants tag.
const invariantsOn = invariants.Enabled

// panicKinds reports ranks that called different collectives at the same
// point (invariants build).
func panicKinds(j int, k shmKind, me int, mine shmKind) {
	invariants.Failf("comm: shared area: rank %d runs collective kind %d where rank %d runs kind %d (the ranks called different collectives)", j, k, me, mine)
}

// padU64 is an atomic counter alone on its cache line(s).
type padU64 struct {
	v atomic.Uint64
	_ cpu.CacheLinePad
}

// shmMode is what a cell's decider chose.
type shmMode uint8

const (
	shmSmall shmMode = iota + 1 // combined or staged in the cell
	shmLarge                    // every rank works in place
	shmBad                      // the ranks' sizes disagree: cell.bad
)

// shmPub is what one rank publishes for one use of a cell. Its rank writes
// it before its arrival (or the flag), the others read it after.
type shmPub struct {
	send, recv unsafe.Pointer // the rank's buffers (pointer mode), nil if none
	n, rn      int            // bytes at send (or in buf), bytes at recv
	inline     bool           // the contribution is in buf, not at send
	buf        []uint64       // the inline copy (grown by its rank)
	counts     []int          // v-forms: the rank's counts (valid while it waits)
	displs     []int          // and displacements
	kind       shmKind        // the collective (invariants)
	_          cpu.CacheLinePad
}

// shmCell is one cell of an area; see the file comment for the protocol.
type shmCell struct {
	gen  padU64 // uses completed; Store by the last exit (after the reset), Load by a starting rank
	arr  padU64 // arrivals of the current use; Add by each rank, Load by waiters
	mid  padU64 // second phase of the current use
	exit padU64 // exits of the current use; the Add that reaches n resets the three
	flag padU64 // seq+1 of the last use whose decider published; Store by it, Load by the others

	// Written by the decider (or root) before flag, read after it.
	mode shmMode
	res  []uint64 // staged or combined data (grown by the decider)
	resN int      // bytes valid in res
	offs []int    // Scatter: rank i's block is res[offs[i]:offs[i+1]] (bytes)
	bad  MismatchError

	_ cpu.CacheLinePad

	// sleep has a bit per rank waiting for a condition of this cell:
	// Or by the sleeper before its last look, Swap by the waker.
	sleep []padU64
	pub   []shmPub
}

// shmSlot is one rank's own state in an area, kept across its views of the
// communicator. Only the rank's caller touches it, except mw.Event.
type shmSlot struct {
	// mw is how the rank sleeps: its caller arms mw.Event (Rearm) before
	// it sets a sleep bit; the waker that took the bit signals it. The
	// deadlock watchdog sees the caller blocked while it is armed
	// (endpoint.MemWait).
	mw      endpoint.MemWait
	seq     atomic.Uint64 // collectives this rank started on the area: Stored by the rank, Loaded by the deadlock watchdog too
	scratch []uint64      // reduction scratch
	joined  bool          // the rank has found the area (under shmArea.pinMu)
	_       cpu.CacheLinePad
}

// shmArea is the shared area of one communicator in one process.
type shmArea struct {
	n     int
	cells [shmCells]shmCell
	slots []shmSlot
	frees atomic.Int32 // ranks that freed the communicator
	key   areaKey

	pinMu sync.Mutex
	joins int // ranks that have found the area (shmArea.join)
}

func newArea(c endpoint.Comm, key areaKey) *shmArea {
	n := len(c.Addrs)
	a := &shmArea{n: n, slots: make([]shmSlot, n), key: key}
	for i := range a.slots {
		mw := &a.slots[i].mw
		mw.Comm, mw.Me = c, i
		mw.Peers = func() []int { return a.late(i) }
	}
	for i := range a.cells {
		a.cells[i].sleep = make([]padU64, (n+63)/64)
		a.cells[i].pub = make([]shmPub, n)
	}
	return a
}

// late returns the ranks that rank me, waiting in its collective
// mw.Seq, waits for as far as the area tells: those that have not begun
// that collective. None once every rank has, and the watchdog then
// names all the others (one of them has yet to arrive, publish or exit).
// For the watchdog, from its own goroutine: it reads only atomics.
func (a *shmArea) late(me int) []int {
	seq := a.slots[me].mw.Seq.Load()
	var late []int
	for j := range a.slots {
		if j != me && a.slots[j].seq.Load() <= seq {
			late = append(late, j)
		}
	}
	return late
}

// wake wakes every rank sleeping on the cell.
func (a *shmArea) wake(cl *shmCell) {
	for i := range cl.sleep {
		m := &cl.sleep[i].v
		if m.Load() == 0 {
			continue
		}
		for b := m.Swap(0); b != 0; b &= b - 1 {
			a.slots[i<<6|bits.TrailingZeros64(b)].mw.Event.Signal()
		}
	}
}

// The registry: areas by process, collective context id and ranks. A
// context id names one communicator at an endpoint, but communicators with
// disjoint ranks (Split's) share one, and an id is reused once freed, so
// the ranks are part of the key. The registry holds an area strongly until
// every rank has found it (join), then weakly: from then on the ranks'
// communicator views (and their pending collectives) keep it alive, and
// once none is left it goes, with its entry. (Were every rank's view
// dropped and a new one made, the ranks would all start afresh on a new
// area, as they all restart their collective count.) Until every rank has
// found it, a rank that already left — the root of a small Bcast returns
// as soon as its data is in the cell, frees its view and may drop it — must
// not take the area with it, or the others would find a fresh one and wait
// there forever. (So a communicator that some ranks drop without Free
// and without a collective keeps its area until the process finalizes;
// Free joins.) The process is in the key weakly too: it is only an
// identity.
type areaKey struct {
	proc  weak.Pointer[endpoint.Process]
	ctx   uint32
	addrs string // the ranks' addresses, 4 bytes each
}

var shmAreas sync.Map // areaKey → weak.Pointer[shmArea]

// shmPinned holds the areas that some of their ranks have not found yet.
var shmPinned sync.Map // areaKey → *shmArea

// join records that rank me has found the area: the first rank to find it
// pins it in the registry, the last unpins it. A rank joins once, however
// many views of the communicator it makes.
func (a *shmArea) join(me int) {
	a.pinMu.Lock()
	defer a.pinMu.Unlock()
	if a.slots[me].joined {
		return
	}
	a.slots[me].joined = true
	a.joins++
	switch a.joins {
	case a.n:
		shmPinned.CompareAndDelete(a.key, a)
	case 1:
		shmPinned.Store(a.key, a)
	}
}

// lookupArea returns the area of communicator c at process p, making it on
// first use.
func lookupArea(p *endpoint.Process, c endpoint.Comm) *shmArea {
	addrs := make([]byte, 4*len(c.Addrs))
	for i, a := range c.Addrs {
		binary.LittleEndian.PutUint32(addrs[4*i:], uint32(a))
	}
	key := areaKey{proc: weak.Make(p), ctx: c.Context, addrs: string(addrs)}
	hookHalt(p, key.proc)
	return weakCached(&shmAreas, key, func() *shmArea { return newArea(c, key) })
}

// weakCached returns the value m holds under key (weakly: as a
// weak.Pointer[V]) while it lives, or makes one with mk and holds that; a
// value's entry goes when the value is collected, unless replaced by then.
func weakCached[K comparable, V any](m *sync.Map, key K, mk func() *V) *V {
	for {
		old, ok := m.Load(key)
		if ok {
			if v := old.(weak.Pointer[V]).Value(); v != nil {
				return v
			}
		}
		v := mk()
		wv := weak.Make(v)
		if ok && !m.CompareAndSwap(key, old, wv) {
			continue
		}
		if !ok {
			if _, loaded := m.LoadOrStore(key, wv); loaded {
				continue
			}
		}
		runtime.AddCleanup(v, dropCached[K, V], cachedRef[K, V]{m: m, key: key, wv: wv})
		return v
	}
}

// cachedRef is what a cached value's cleanup gets: its entry, the value
// held weakly.
type cachedRef[K comparable, V any] struct {
	m   *sync.Map
	key K
	wv  weak.Pointer[V]
}

func dropCached[K comparable, V any](r cachedRef[K, V]) { r.m.CompareAndDelete(r.key, r.wv) }

// shmHooks records the processes whose halt wakes their areas' sleepers.
var shmHooks sync.Map // weak.Pointer[endpoint.Process] → struct{}

// hookHalt makes sure that when p's job ends (or p finalizes) every rank
// sleeping in one of p's areas wakes, finds the job halted and returns its
// error.
func hookHalt(p *endpoint.Process, wp weak.Pointer[endpoint.Process]) {
	if _, loaded := shmHooks.LoadOrStore(wp, struct{}{}); loaded {
		return
	}
	p.AtHalt(func() { wakeAreas(wp) })
	runtime.AddCleanup(p, func(wp weak.Pointer[endpoint.Process]) { shmHooks.Delete(wp) }, wp)
}

// wakeAreas wakes every sleeper of every area of a process, and unpins
// its areas: once the job has ended or the process finalizes, no rank
// that has not found an area yet will need what it holds.
func wakeAreas(wp weak.Pointer[endpoint.Process]) {
	shmPinned.Range(func(k, _ any) bool {
		if k.(areaKey).proc == wp {
			shmPinned.Delete(k)
		}
		return true
	})
	shmAreas.Range(func(k, v any) bool {
		if k.(areaKey).proc == wp {
			if a := v.(weak.Pointer[shmArea]).Value(); a != nil {
				for i := range a.cells {
					a.wake(&a.cells[i])
				}
			}
		}
		return true
	})
}

// release records that one rank freed the communicator; the last drops the
// area from the registry, so a later communicator with the same context id
// and ranks gets a new one.
func (a *shmArea) release() {
	if int(a.frees.Add(1)) == a.n {
		shmAreas.CompareAndDelete(a.key, weak.Make(a))
		shmPinned.CompareAndDelete(a.key, a)
	}
}

// released reports whether every rank has freed the communicator.
func (a *shmArea) released() bool { return int(a.frees.Load()) >= a.n }

// CollPath says how a communicator runs its collectives.
type CollPath uint8

const (
	// CollAuto: through memory when every rank of the communicator lives
	// in this process (the ranks read and write each other's buffers), as
	// message schedules otherwise. The default.
	CollAuto CollPath = iota
	// CollMessages: always as schedules of point-to-point messages, as
	// between processes (for comparisons and tests).
	CollMessages
)

// String names the path.
func (p CollPath) String() string {
	switch p {
	case CollAuto:
		return "auto"
	case CollMessages:
		return "messages"
	}
	return fmt.Sprintf("CollPath(%d)", uint8(p))
}

// SetCollPath sets how the communicator runs its collectives. Every rank
// must set the same path, before its first collective on c (the path of a
// communicator already in use does not change); communicators derived
// from c (Dup, Split, Create) inherit it.
func (c *Comm[T]) SetCollPath(p CollPath) error {
	if p > CollMessages {
		return fmt.Errorf("%w: %v", ErrPath, p)
	}
	st := c.st()
	if (st.shmChecked || st.topoChecked) && st.path != p {
		return fmt.Errorf("%w: the communicator has run collectives already", ErrPath)
	}
	st.path = p
	return nil
}

// area returns the communicator's shared area, or nil if its collectives go
// by messages. The answer is computed once per communicator view.
func (c *Comm[T]) area() *shmArea {
	st := c.x
	if st == nil {
		st = c.st()
	}
	if st.shmChecked {
		return st.shm
	}
	st.shmChecked = true
	if st.path == CollMessages || c.size == 0 {
		return nil
	}
	// The layout the process's ranks share says whether all the ranks
	// live here, and holds the area (one look per process, not per rank).
	st.shm = topoOf(c.ep.Proc(), st.coll.comm.Context, c.c.Addrs).wholeArea(c.ep.Proc(), st.coll.comm.Context)
	if st.shm != nil {
		st.shm.join(c.rank)
	}
	return st.shm
}

// shmBase is the untyped part of one rank's collective on an area: where
// it is in its protocol and what it waits for.
type shmBase struct {
	ep   *endpoint.Endpoint
	proc *endpoint.Process
	a    *shmArea
	cl   *shmCell
	slot *shmSlot
	w    *fiber.Waiter
	me   int
	seq  uint64 // the collective's number on the area
	use  uint64 // its use of the cell: seq / shmCells
	pc   uint8  // protocol step
	done bool
	err  error
	// wc ≥ wt is what the rank waits for when step returns false.
	wc *atomic.Uint64
	wt uint64
}

// begin takes the rank's next collective number and its cell.
func (x *shmBase) begin(ep *endpoint.Endpoint, a *shmArea, me int) {
	s := &a.slots[me]
	x.ep, x.proc, x.w = ep, ep.Proc(), ep.Waiter()
	x.a, x.slot, x.me = a, s, me
	x.seq = s.seq.Load()
	s.seq.Store(x.seq + 1)
	x.use = x.seq / shmCells
	x.cl = &a.cells[x.seq%shmCells]
}

// await reports whether *c ≥ t, recording the condition if not.
func (x *shmBase) await(c *atomic.Uint64, t uint64) bool {
	if c.Load() >= t {
		return true
	}
	x.wc, x.wt = c, t
	return false
}

// free reports whether the cell's previous use is over.
func (x *shmBase) free() bool {
	if !x.await(&x.cl.gen.v, x.use) {
		return false
	}
	if invariants.Enabled {
		g := x.cl.gen.v.Load()
		invariants.Check(g == x.use, "comm: shared area: a cell was reused before this rank's use of it")
		invariants.Check(x.cl.exit.v.Load() < uint64(x.a.n), "comm: shared area: a free cell has all its exits")
	}
	return true
}

// arrive counts the rank in c and reports whether it came last (then it
// wakes the cell's sleepers).
func (x *shmBase) arrive(c *atomic.Uint64) bool {
	v := c.Add(1)
	if invariants.Enabled {
		invariants.Check(v <= uint64(x.a.n), "comm: shared area: more arrivals than ranks")
	}
	if v == uint64(x.a.n) {
		x.a.wake(x.cl)
		return true
	}
	return false
}

// publish tells the others the decider's choice (flag = seq+1).
func (x *shmBase) publish() {
	if invariants.Enabled {
		invariants.Check(x.cl.flag.v.Load() < x.seq+1, "comm: shared area: a cell's flag published twice")
	}
	x.cl.flag.v.Store(x.seq + 1)
	x.a.wake(x.cl)
}

// published reports whether the decider has published this use's flag.
func (x *shmBase) published() bool { return x.await(&x.cl.flag.v, x.seq+1) }

// exit ends the rank's part in the cell's use; the last rank to exit
// resets the counters and frees the cell.
func (x *shmBase) exit() {
	cl := x.cl
	v := cl.exit.v.Add(1)
	if invariants.Enabled {
		invariants.Check(v <= uint64(x.a.n), "comm: shared area: more exits than ranks")
	}
	if v != uint64(x.a.n) {
		return
	}
	// Every rank has exited: nobody reads these until gen moves on.
	cl.arr.v.Store(0)
	cl.mid.v.Store(0)
	cl.exit.v.Store(0)
	cl.gen.v.Store(x.use + 1)
	x.a.wake(cl)
}

// over reports whether every rank has exited this use (after the rank's
// own exit): nobody reads or writes its buffers any more.
func (x *shmBase) over() bool { return x.await(&x.cl.gen.v, x.use+1) }

// end marks the collective done.
func (x *shmBase) end() bool {
	x.done = true
	return true
}

// shmSpins is how many times a goroutine lets others run before it parks.
const shmSpins = 8

// sleep blocks the caller until the recorded condition holds: a fiber
// yields to its worker, a goroutine parks (after letting the others run a
// few times: a park and wake-up costs microseconds).
func (x *shmBase) sleep() {
	if x.w.Fiber() == nil {
		for i := 0; i < shmSpins && x.wc.Load() < x.wt; i++ {
			runtime.Gosched()
		}
	}
	ev := &x.slot.mw.Event
	for !x.arm() {
		ev.Wait(x.w)
		if x.proc.Halted() != nil {
			return // the next step ends the collective
		}
	}
}

// blocked is what step does when the protocol cannot go on: if the job has
// ended (a rank failed or aborted, the process finalizes), the collective
// ends with that error — nobody would ever wake it — and blocked reports
// true (done).
func (x *shmBase) blocked() bool {
	if err := x.proc.Halted(); err != nil {
		x.err = err
		x.done = true
		return true
	}
	return false
}

// abort ends the job because the ranks' arguments disagree (as a message
// schedule's mismatch does): the other ranks' calls return an
// *endpoint.AbortError wrapping err.
func (x *shmBase) abort(err error) {
	x.ep.Abort(err)
}

// arm registers the rank to be woken when its condition may hold, and
// reports whether it holds already (then the rank is not armed). While
// armed, the deadlock watchdog counts the rank's caller blocked.
func (x *shmBase) arm() bool {
	if x.wc.Load() >= x.wt {
		return true
	}
	mw := &x.slot.mw
	x.ep.NoteMemWait(mw)
	mw.Seq.Store(x.seq)
	mw.Event.Rearm(x.w)
	x.cl.sleep[x.me>>6].v.Or(1 << (x.me & 63))
	// The bit is set before this look: either the waker's Swap sees it, or
	// this Load sees the waker's store.
	if x.wc.Load() >= x.wt {
		mw.Event.Disarm(x.w)
		return true
	}
	return false
}

// disarm ends a wait armed by arm that the caller left another way.
func (x *shmBase) disarm() { x.slot.mw.Event.Disarm(x.w) }

// scratch returns the rank's scratch space of at least n bytes, 8-aligned.
func (x *shmBase) scratch(n int) []uint64 {
	s := x.slot
	if w := (n + 7) / 8; cap(s.scratch) < w {
		s.scratch = make([]uint64, w)
	}
	return s.scratch[:(n+7)/8]
}

// grow returns buf with room for n bytes, 8-aligned.
func grow(buf []uint64, n int) []uint64 {
	if w := (n + 7) / 8; cap(buf) < w {
		return make([]uint64, w, w+w/4)
	}
	return buf[:(n+7)/8]
}

// ptrOf returns the address of s's first element (nil for an empty s).
func ptrOf[T any](s []T) unsafe.Pointer {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Pointer(unsafe.SliceData(s))
}

// view returns n elements of T at p.
func view[T any](p unsafe.Pointer, n int) []T {
	if n <= 0 || p == nil {
		return nil
	}
	// Safety: p is the address of a buffer of at least n elements of T
	// (a rank's slice, published with its length, or a []uint64 of
	// at least n·size bytes: Go aligns those to 8, the largest alignment
	// of a pointer-free T), kept alive by the publishing rank's
	// collective until every reader is done.
	return unsafe.Slice((*T)(p), n)
}

// words views n elements of T at the start of buf.
func words[T any](buf []uint64, n int) []T {
	if n <= 0 {
		return nil
	}
	return view[T](unsafe.Pointer(unsafe.SliceData(buf)), n)
}

// viaShm runs a collective through memory if the communicator's ranks
// share this process (ok), after the same checks as the message path: it
// runs x to the end (blocking), or starts it and returns its request.
// name names the collective in a trace.
func (c *Comm[T]) viaShm(name string, nb bool, check func() error, x *shmColl[T]) (q *CollRequest, ok bool, err error) {
	a := c.area()
	if a == nil {
		return nil, false, nil
	}
	st, err := c.live()
	if err != nil {
		return nil, true, err
	}
	if err := c.ep.Proc().Halted(); err != nil {
		return nil, true, err
	}
	if err := check(); err != nil {
		// The other ranks would wait for this one: end the job (coll.go).
		c.ep.Abort(err)
		return nil, true, err
	}
	w := c.ep.Waiter()
	x.begin(c.ep, a, c.rank)
	x.size = c.size
	eng := st.coll.eng
	if !nb {
		if tr := c.ep.Tracer(); tr != nil {
			sp := tr.Begin("fibermpi." + name)
			err := runBlocking(eng, w, x)
			sp.End(trace.KindColl, trace.NoPeer, 0, st.coll.comm.Context, 0, name)
			return nil, true, err
		}
		return nil, true, runBlocking(eng, w, x)
	}
	h := new(shmColl[T])
	*h = *x
	eng.add(h)
	h.advance()
	q = &CollRequest{op: h, eng: eng, w: w}
	if st.owned {
		st.refs.Add(1)
		q.st = st
	}
	return q, true, nil
}

// runBlocking runs a begun collective to its end: alone, on the caller's
// stack; with other collectives of the caller pending, through its engine.
func runBlocking[T any](eng *engine, w *fiber.Waiter, x *shmColl[T]) error {
	if len(eng.active) == 0 {
		x.block()
		return x.err
	}
	h := new(shmColl[T])
	*h = *x
	eng.add(h)
	h.advance()
	eng.wait(w, h)
	return h.err
}
