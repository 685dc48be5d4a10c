package comm

import (
	"slices"
	"sync"
	"unsafe"
	"weak"

	"github.com/fibermpi/fibermpi/endpoint"
	"github.com/fibermpi/fibermpi/rdma"
	"github.com/fibermpi/fibermpi/trace"
)

// Two-level collectives, for a communicator whose ranks live in several
// processes, some with more than one rank (endpoints): the ranks of each
// process meet through memory (an area over that process's ranks, as in
// shm.go), and one rank per process — its leader, the process's lowest
// rank — runs the message schedule among the processes. Barrier, Bcast,
// Reduce and Allreduce go this way:
//
//	Barrier    gather nothing to the leader; leaders' barrier; release
//	Allreduce  reduce to the leader; leaders' allreduce; broadcast from it
//	Reduce     reduce to the process's representative (the root in the
//	           root's process, the leader elsewhere); representatives'
//	           reduce to the root
//	Bcast      the root's process broadcasts from the root; leaders'
//	           broadcast; the other processes broadcast from their leader
//
// so that a message crosses between processes once per process, not once
// per rank, and the ranks of a process wait through memory (a fiber
// yields, a goroutine parks) rather than for messages. A non-commutative
// reduction keeps rank order only if every process's ranks are
// consecutive; otherwise it runs the message schedule over all ranks, as
// do the other collectives.
//
// The leaders' messages travel on the communicator's collective context
// with tags in their own space (leadTagBit), numbered by the leaders'
// own sequence. A two-level collective is a list of phases (collectives
// through memory, message schedules) that run in turn; each takes its
// sequence number (cell, tag) when the collective starts, so that
// nonblocking ones interleave the same way at every rank.

// topo is how a communicator's ranks sit in processes, as one rank sees
// it: the shared layout and the caller's place in it.
type topo struct {
	groups     [][]int // the ranks of each process, groups in the order of their first rank
	mine       int     // the caller's group
	local      int     // the caller's index in it (0: the leader)
	contiguous bool    // every group is a run of consecutive ranks
	node       *shmArea
	lead       collCtx // the leaders (rank g: group g's first rank)
	sh         *sharedTopo
}

// sharedTopo is the part of a communicator's two-level layout that every
// rank of it in this process shares. It is computed once per process
// (topoOf): with a rank per endpoint and 10 000 endpoints a process, one
// layout per rank made creating the world's collectives quadratic, 24 s
// and gigabytes for 20 000 ranks in two processes.
type sharedTopo struct {
	addrs      []rdma.Addr // the communicator's, held (their address is in the key)
	groups     [][]int
	group      []int32 // rank → its group
	index      []int32 // rank → its index in its group
	contiguous bool
	leaders    []rdma.Addr
	node       *shmArea // this process's group's area; nil if it has one rank
	flat       bool     // one group, or one rank per group: no two levels

	// whole is the area over all the ranks when they are all at this
	// process (one group), made on first use (Comm.area), and again for a
	// later communicator with the same context id and ranks once every
	// rank has freed the one that used it (shmArea.release).
	wholeMu sync.Mutex
	whole   *shmArea
}

// wholeArea returns the area over all the ranks if they all live at p,
// else nil.
func (s *sharedTopo) wholeArea(p *endpoint.Process, ctx uint32) *shmArea {
	if len(s.groups) != 1 {
		return nil
	}
	s.wholeMu.Lock()
	defer s.wholeMu.Unlock()
	if s.whole == nil || s.whole.released() {
		s.whole = lookupArea(p, endpoint.Comm{Context: ctx, Addrs: s.addrs})
	}
	return s.whole
}

// topoKey identifies a communicator at a process: its collective context
// and its Addrs array, by address. The ranks of the world at a process
// share one array; a communicator whose ranks each hold a copy gets a
// layout per rank, as before. Safety: the address is only compared; the
// entry's sharedTopo holds the array, so while the entry lives no other
// array has that address, and an entry whose sharedTopo was collected is
// replaced, never used (topoOf).
type topoKey struct {
	proc  weak.Pointer[endpoint.Process]
	ctx   uint32
	addrs uintptr
	n     int
}

var topos sync.Map // topoKey → weak.Pointer[sharedTopo]

// topoOf returns the shared layout of the communicator (ctx, addrs) at p,
// computing it on first use.
func topoOf(p *endpoint.Process, ctx uint32, addrs []rdma.Addr) *sharedTopo {
	key := topoKey{proc: weak.Make(p), ctx: ctx, addrs: uintptr(unsafe.Pointer(unsafe.SliceData(addrs))), n: len(addrs)}
	return weakCached(&topos, key, func() *sharedTopo { return newSharedTopo(p, ctx, addrs) })
}

// newSharedTopo groups the ranks of addrs by the process that owns them.
func newSharedTopo(p *endpoint.Process, ctx uint32, addrs []rdma.Addr) *sharedTopo {
	s := &sharedTopo{addrs: addrs, group: make([]int32, len(addrs)), index: make([]int32, len(addrs))}
	byOwner := make([]int32, p.Procs()) // process → group + 1
	for r, a := range addrs {
		o := p.Owner(a)
		g := byOwner[o] - 1
		if g < 0 {
			g = int32(len(s.groups))
			byOwner[o] = g + 1
			s.groups = append(s.groups, nil)
		}
		s.group[r], s.index[r] = g, int32(len(s.groups[g]))
		s.groups[g] = append(s.groups[g], r)
	}
	if len(s.groups) == 1 || len(s.groups) == len(addrs) {
		s.flat = true
		return s
	}
	s.contiguous = true
	s.leaders = make([]rdma.Addr, len(s.groups))
	for g, ranks := range s.groups {
		s.leaders[g] = addrs[ranks[0]]
		if ranks[len(ranks)-1]-ranks[0] != len(ranks)-1 {
			s.contiguous = false
		}
	}
	if g := byOwner[p.Rank()] - 1; g >= 0 && len(s.groups[g]) > 1 {
		mine := s.groups[g]
		local := make([]rdma.Addr, len(mine))
		for i, r := range mine {
			local[i] = addrs[r]
		}
		s.node = lookupArea(p, endpoint.Comm{Context: ctx, Addrs: local})
	}
	return s
}

// topology returns the communicator's two-level layout, or nil if its
// collectives do not go in two levels (all ranks in one process, or one
// rank per process). It is computed once per communicator view, from the
// layout the process's ranks share.
func (c *Comm[T]) topology() *topo {
	st := c.st()
	if st.topoChecked {
		return st.topo
	}
	st.topoChecked = true
	if st.path != CollAuto || c.size == 0 {
		return nil
	}
	p := c.ep.Proc()
	if p.Procs() == 1 {
		return nil
	}
	ctx := st.coll.comm.Context
	s := topoOf(p, ctx, c.c.Addrs)
	if s.flat {
		return nil
	}
	t := &topo{groups: s.groups, mine: int(s.group[c.rank]), local: int(s.index[c.rank]), contiguous: s.contiguous, sh: s}
	if len(s.groups[t.mine]) > 1 {
		t.node = s.node
		t.node.join(t.local)
	}
	t.lead = collCtx{
		ep:   c.ep,
		comm: endpoint.Comm{Context: ctx, Addrs: s.leaders},
		rank: t.mine,
		base: leadTagBit,
		mask: collTagMask,
		eng:  st.coll.eng,
	}
	st.topo = t
	return st.topo
}

// groupOf returns the group of rank r and r's index in it.
func (t *topo) groupOf(r int) (g, i int) {
	return int(t.sh.group[r]), int(t.sh.index[r])
}

// leader reports whether the caller leads its group.
func (t *topo) leader() bool { return t.local == 0 }

// twoLevel is one rank's two-level collective: phases run in turn. The
// typed tlOp holds its parts, so a collective allocates one tlOp (and its
// message schedule's rounds, at a leader).
type twoLevel struct {
	phases [4]phase
	np     int // phases used
	i      int
	cur    collOp
	err    error
	done   bool
}

// phase is one step of a two-level collective: a collective through
// memory (begun, so numbered, when planned), a message schedule (its tag
// taken when planned, its rounds built when the phase starts: builders
// read the buffers), or a local copy.
type phase struct {
	op    collOp
	s     *sched
	build func(s *sched)
	local func()
}

func (tl *twoLevel) add(ph phase) {
	tl.phases[tl.np] = ph
	tl.np++
}

// tlArgs are a two-level collective's arguments.
type tlArgs[T any] struct {
	kind       shmKind
	send, recv []T
	op         Op[T]
	root       int
}

// tlOp is a two-level collective with its arguments and parts.
type tlOp[T any] struct {
	twoLevel
	tlArgs[T]
	shm  [2]shmColl[T]
	nshm int
	s    sched
	x    collCtx // a Reduce's representatives
}

// addShm adds a phase through the caller's process area, numbered now.
func (o *tlOp[T]) addShm(t *topo, ep *endpoint.Endpoint, size int, x shmColl[T]) {
	p := &o.shm[o.nshm]
	o.nshm++
	*p = x
	p.begin(ep, t.node, t.local)
	p.size = size
	o.add(phase{op: p})
}

// addMsg adds a message phase over ctx x (the leaders, or another set of
// representatives sharing their sequence) with tag.
func (o *tlOp[T]) addMsg(x *collCtx, tag int, build func(s *sched)) {
	o.s = sched{x: x, tag: tag, nested: true}
	o.add(phase{s: &o.s, build: build})
}

// start starts phase ph and returns what to wait for (nil: done already).
func (ph *phase) start() collOp {
	switch {
	case ph.local != nil:
		ph.local()
		return nil
	case ph.s != nil:
		ph.build(ph.s)
		ph.s.start()
		return ph.s
	}
	return ph.op
}

// advance runs phases while they complete.
func (tl *twoLevel) advance() {
	for !tl.done {
		if tl.cur == nil {
			if tl.i == tl.np {
				tl.done = true
				return
			}
			tl.cur = tl.phases[tl.i].start()
			tl.i++
			continue
		}
		tl.cur.advance()
		if !tl.cur.finished() {
			return
		}
		// A phase that failed still lets the next run: the other ranks
		// wait for them.
		if err := tl.cur.failure(); err != nil && tl.err == nil {
			tl.err = err
		}
		tl.cur = nil
	}
}

func (tl *twoLevel) finished() bool { return tl.done }

func (tl *twoLevel) failure() error { return tl.err }

func (tl *twoLevel) block() {
	tl.advance()
	if !tl.done {
		tl.cur.block()
		tl.advance()
	}
}

func (tl *twoLevel) endpoint() *endpoint.Endpoint {
	if tl.cur == nil {
		return nil
	}
	return tl.cur.endpoint()
}

func (tl *twoLevel) unprepare() {
	if tl.cur != nil {
		tl.cur.unprepare()
	}
}

func (tl *twoLevel) prepare(reqs []*endpoint.Request) ([]*endpoint.Request, bool, bool) {
	if tl.cur == nil {
		return reqs, false, !tl.done
	}
	return tl.cur.prepare(reqs)
}

// viaTwoLevel runs o's collective in two levels if the communicator's
// layout calls for it (ok). If this collective cannot go in two levels
// (a non-commutative reduction over processes whose ranks interleave), ok
// is false and it runs as one message schedule.
func (c *Comm[T]) viaTwoLevel(name string, nb bool, check func() error, a tlArgs[T]) (q *CollRequest, ok bool, err error) {
	t := c.topology()
	if t == nil {
		return nil, false, nil
	}
	if (a.kind == kReduce || a.kind == kAllreduce) && !a.op.commutative && !t.contiguous {
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
		c.ep.Abort(err) // see coll.go
		return nil, true, err
	}
	h := new(tlOp[T])
	h.tlArgs = a
	switch h.kind {
	case kBarrier:
		c.planBarrier(t, h)
	case kAllreduce:
		c.planAllreduce(t, h)
	case kReduce:
		c.planReduce(t, h)
	case kBcast:
		c.planBcast(t, h)
	}
	tl := &h.twoLevel
	eng, w := st.coll.eng, c.ep.Waiter()
	eng.add(tl)
	tl.advance()
	if nb {
		q = &CollRequest{op: tl, eng: eng, w: w}
		if st.owned {
			st.refs.Add(1)
			q.st = st
		}
		return q, true, nil
	}
	if tr := c.ep.Tracer(); tr != nil {
		sp := tr.Begin("fibermpi." + name)
		eng.wait(w, tl)
		sp.End(trace.KindColl, trace.NoPeer, 0, st.coll.comm.Context, 0, name)
	} else {
		eng.wait(w, tl)
	}
	return nil, true, tl.err
}

// The plans. Each adds the caller's phases in the same order as every
// other rank of its process adds its own, and every rank takes the
// leaders' next tag, whether it sends in that phase or not: the
// representatives of a Reduce are not always the leaders, so every rank
// keeps the leaders' sequence.

func (c *Comm[T]) planBarrier(t *topo, o *tlOp[T]) {
	if t.node != nil {
		o.addShm(t, c.ep, c.size, shmColl[T]{kind: kGather, root: 0})
	}
	tag := t.lead.next()
	if t.leader() {
		o.addMsg(&t.lead, tag, buildBarrier)
	}
	if t.node != nil {
		o.addShm(t, c.ep, c.size, shmColl[T]{kind: kBcast, root: 0})
	}
}

func (c *Comm[T]) planAllreduce(t *topo, o *tlOp[T]) {
	send, recv, op := o.send, o.recv, o.op
	if t.node != nil {
		var acc []T
		if t.leader() {
			acc = recv
		}
		o.addShm(t, c.ep, c.size, shmColl[T]{kind: kReduce, send: send, recv: acc, op: op, root: 0})
	} else if !sameSlice(send, recv) {
		o.add(phase{local: func() { copy(recv, send) }})
	}
	tag := t.lead.next()
	if t.leader() {
		o.addMsg(&t.lead, tag, func(s *sched) { buildAllreduce(s, recv, recv, op) })
	}
	if t.node != nil {
		o.addShm(t, c.ep, c.size, shmColl[T]{kind: kBcast, send: recv, recv: recv, root: 0})
	}
}

func (c *Comm[T]) planReduce(t *topo, o *tlOp[T]) {
	send, recv, op, root := o.send, o.recv, o.op, o.root
	rg, ri := t.groupOf(root)
	repLocal := 0 // the caller's group's representative
	if t.mine == rg {
		repLocal = ri
	}
	rep := t.local == repLocal
	// The representatives' buffer: the root's recv, a scratch vector
	// elsewhere (the vector itself for a rank alone in its process).
	var acc []T
	switch {
	case !rep:
	case c.rank == root:
		acc = recv
	case t.node == nil:
		acc = send
	default:
		acc = make([]T, len(send))
	}
	if t.node != nil {
		o.addShm(t, c.ep, c.size, shmColl[T]{kind: kReduce, send: send, recv: acc, op: op, root: repLocal})
	} else if c.rank == root && !sameSlice(send, recv) {
		o.add(phase{local: func() { copy(recv, send) }})
	}
	tag := t.lead.next()
	if rep {
		o.x = t.lead
		o.x.comm.Addrs = slices.Clone(o.x.comm.Addrs)
		o.x.comm.Addrs[rg] = c.c.Addrs[root]
		var out []T
		if c.rank == root {
			out = recv
		}
		o.addMsg(&o.x, tag, func(s *sched) { buildReduce(s, acc, out, op, rg) })
	}
}

func (c *Comm[T]) planBcast(t *topo, o *tlOp[T]) {
	buf, root := o.send, o.root
	rg, ri := t.groupOf(root)
	if t.mine == rg && t.node != nil {
		o.addShm(t, c.ep, c.size, shmColl[T]{kind: kBcast, send: buf, recv: buf, root: ri})
	}
	tag := t.lead.next()
	if t.leader() {
		o.addMsg(&t.lead, tag, func(s *sched) { buildBcast(s, buf, rg) })
	}
	if t.mine != rg && t.node != nil {
		o.addShm(t, c.ep, c.size, shmColl[T]{kind: kBcast, send: buf, recv: buf, root: 0})
	}
}
