package endpoint

import (
	"errors"
	"fmt"

	"github.com/fibermpi/fibermpi/fiber"
	"github.com/fibermpi/fibermpi/internal/invariants"
	"github.com/fibermpi/fibermpi/match"
	"github.com/fibermpi/fibermpi/packet"
	"github.com/fibermpi/fibermpi/rdma"
	"github.com/fibermpi/fibermpi/trace"
)

// Errors of the endpoint layer.
var (
	// ErrFinalized is returned by calls after Process.Finalize.
	ErrFinalized = errors.New("endpoint: process finalized")
	// ErrNotRegistered is returned by calls through an Endpoint handle that
	// is not (or no longer) registered with a caller.
	ErrNotRegistered = errors.New("endpoint: caller not registered with the endpoint")
	// ErrThreadLevel is returned for a registration the endpoint's thread
	// level forbids, and for an unknown level.
	ErrThreadLevel = errors.New("endpoint: thread level violated")
	// ErrRank is returned for a rank outside the communicator.
	ErrRank = errors.New("endpoint: rank out of range")
	// ErrTag is returned for a negative tag (other than AnyTag on a
	// receive) or one above MaxTag.
	ErrTag = errors.New("endpoint: tag out of range")
	// ErrTruncate is matched by a *TruncateError.
	ErrTruncate = errors.New("endpoint: message truncated")
	// ErrCancelled is the status error of a cancelled receive.
	ErrCancelled = errors.New("endpoint: request cancelled")
	// ErrNilRequest is returned for a nil request.
	ErrNilRequest = errors.New("endpoint: nil request")
	// ErrRequestActive: a request passed for reuse has not completed.
	ErrRequestActive = errors.New("endpoint: request still pending")
	// ErrTransfer is the status error of a rendezvous receive whose data
	// transfer failed at the sender.
	ErrTransfer = errors.New("endpoint: rendezvous transfer failed")
	// ErrEndpoints is returned when endpoints cannot be created.
	ErrEndpoints = errors.New("endpoint: cannot create endpoints")
	// ErrOptions wraps Options.Validate's errors.
	ErrOptions = errors.New("endpoint: bad options")
)

// Wildcards and limits of receives.
const (
	AnySource = int(match.AnySource) // receive from any rank
	AnyTag    = int(match.AnyTag)    // receive with any tag
	MaxTag    = int(match.MaxTag)    // the largest tag (MPI_TAG_UB)
)

// An Endpoint is a rank: a handle on one endpoint's resources. Handles from
// CreateEndpoints and World are not registered; Register binds a handle to
// the fiber or goroutine that will make calls through it, and the blocking
// calls of that handle then wait the caller's way (a fiber yields to its
// worker, a goroutine parks). Registration is Snir's MPI_Endpoint_register
// (Snir 2009 §2.3); the endpoint's thread level says how many handles may be
// registered at once and whether they may call at the same time.
//
// A registered handle belongs to its caller: pass it to no other goroutine.
type Endpoint struct {
	c      *core
	world  Comm
	proc   Comm
	rank   int32
	waiter *fiber.Waiter // nil until registered
	worker int           // packet pool index of the caller
	active bool
	helper bool   // made by RegisterHelper: not counted in handles
	gid    uint64 // registering goroutine (invariants builds)

	// scratch is the request of the handle's blocking Send and Recv: the
	// handle belongs to one caller, and a blocking call returns only once
	// its request is complete, so one request serves them all and the
	// blocking fast path allocates nothing.
	scratch *Request

	// dst caches what a send needs to know of its destination, for the
	// last one this handle sent to: none of it changes while the process
	// lives. src is the same for the last source a blocking Recv took a
	// message from itself (takeRecv), and take that Recv's envelope.
	dst   dest
	src   dest
	take  taking
	takes uint64 // messages takeRecv took (tests read it)

	// rec is the registration as the watchdogs see it (job.go).
	rec *caller
	// tracing is set while a traced call runs the untraced one
	// (trace.go).
	tracing bool
}

// dest is a handle's knowledge of its last destination (Endpoint.dst).
type dest struct {
	to     rdma.Addr
	set    bool
	remote bool // to lives in another process
	// peer is to's core when to lives in this process and is bound (a
	// destination not bound yet is looked up again at the next send).
	peer   *core
	offers *peerOffers // to's offers and counts (remote only)
	// eager is the way of an eager send to to: the transport's own
	// rdma.EagerSender, or the backend an rdma.EagerRouter hands to; nil
	// means none (send packets).
	eager rdma.EagerSender
	// mover is the transport that moves a rendezvous message's bytes to
	// to itself (rdma.Mover; remote only); nil: RTR, Put and Done.
	mover rdma.Mover
	// taker is eager's rdma.EagerTaker, if it is one (remote only): a
	// blocking Recv from to may take its message itself (takeRecv).
	taker rdma.EagerTaker
}

// dest returns the handle's knowledge of destination to, looked up if to
// is not the last one.
func (e *Endpoint) dest(to rdma.Addr) *dest {
	if d := &e.dst; d.set && d.to == to && (d.remote || d.peer != nil) {
		return d
	}
	return e.lookDest(to)
}

// lookDest is dest's lookup.
func (e *Endpoint) lookDest(to rdma.Addr) *dest {
	e.dst = e.lookup(to)
	return &e.dst
}

// lookup finds out what dest holds for address to.
func (e *Endpoint) lookup(to rdma.Addr) dest {
	p := e.c.p
	d := dest{to: to, set: true, remote: p.remote(to)}
	if d.remote {
		d.offers = e.c.off.peers.get(to)
		d.mover = p.moverOf(to)
	} else if r, err := p.local.Peer(to); err == nil {
		d.peer, _ = r.(*core)
	}
	if p.eagerTr != nil {
		d.eager = p.eagerTr
		if p.eagerRouter != nil {
			d.eager = p.eagerRouter.EagerVia(to)
		}
	}
	if d.remote {
		d.taker, _ = d.eager.(rdma.EagerTaker)
	}
	return d
}

// Rank returns the endpoint's rank in its world.
func (e *Endpoint) Rank() int { return int(e.rank) }

// Size returns the size of the endpoint's world.
func (e *Endpoint) Size() int { return e.world.Size() }

// World returns the world communicator the endpoint belongs to.
func (e *Endpoint) World() Comm { return e.world }

// Process returns the communicator of this process's endpoints from the
// same CreateEndpoints call (Snir 2009's MPI_COMM_PROCESS).
func (e *Endpoint) Process() Comm { return e.proc }

// Addr returns the endpoint's transport address.
func (e *Endpoint) Addr() rdma.Addr { return e.c.addr }

// Proc returns the process the endpoint belongs to.
func (e *Endpoint) Proc() *Process { return e.c.p }

// Waiter returns the registered caller's waiter (nil if unregistered).
func (e *Endpoint) Waiter() *fiber.Waiter { return e.waiter }

// Register returns a handle on the same endpoint bound to the caller w: a
// fiber's waiter (f.Waiter()) or a goroutine's (fiber.NewGoroutineWaiter()).
// At ThreadSingle and ThreadFunneled only one handle may be registered at a
// time (ErrThreadLevel otherwise). After Finalize it fails with
// ErrFinalized; after the job has failed it still succeeds, and the
// handle's calls return the job's *AbortError.
func (e *Endpoint) Register(w *fiber.Waiter) (*Endpoint, error) {
	if w == nil {
		return nil, fmt.Errorf("%w: nil waiter", ErrNotRegistered)
	}
	if e.c.p.finalized.Load() {
		return nil, ErrFinalized
	}
	e.c.regMu.Lock()
	if e.c.level <= ThreadFunneled && e.c.handles > 0 {
		e.c.regMu.Unlock()
		return nil, fmt.Errorf("%w: %v endpoint %d already has a registered caller", ErrThreadLevel, e.c.level, e.c.addr)
	}
	e.c.handles++
	e.c.regMu.Unlock()
	return e.bind(w), nil
}

// RegisterHelper returns a handle on the same endpoint for a helper of
// e's registered caller: a goroutine, with waiter w
// (fiber.NewGoroutineWaiter()), that makes calls on the caller's behalf,
// as comm.CollRequest.Done's progress goroutine does. Unlike Register it
// does not count against the thread level, so the caller and its helper
// together are one caller: below ThreadMultiple they must not call through
// the endpoint at the same time. Call it from the caller (it reads e);
// the handle it returns may then be used by the one helper goroutine. e
// must be registered (ErrNotRegistered); Unregister, from the helper, ends
// the helper's handle.
func (e *Endpoint) RegisterHelper(w *fiber.Waiter) (*Endpoint, error) {
	if w == nil {
		return nil, fmt.Errorf("%w: nil waiter", ErrNotRegistered)
	}
	if !e.active {
		return nil, ErrNotRegistered
	}
	if e.c.p.finalized.Load() {
		return nil, ErrFinalized
	}
	h := e.bind(w)
	h.helper = true
	return h, nil
}

// bind returns a registered copy of e for the caller w.
func (e *Endpoint) bind(w *fiber.Waiter) *Endpoint {
	h := *e
	h.waiter, h.active, h.worker = w, true, packet.NoWorker
	h.scratch = new(Request)
	if f := w.Fiber(); f != nil {
		h.worker = f.Worker()
	}
	if invariants.Enabled {
		h.gid = goid()
	}
	h.rec = h.c.p.addCaller(&h)
	h.scratch.owner = h.rec
	if e.c.tr != nil {
		e.c.tr.Label(int(e.rank))
	}
	h.helper = false
	return &h
}

// Unregister ends the handle's registration; later calls through it fail
// with ErrNotRegistered.
func (e *Endpoint) Unregister() error {
	if !e.active {
		return ErrNotRegistered
	}
	e.active = false
	e.c.p.dropCaller(e.rec)
	e.rec = nil
	if e.helper {
		return nil
	}
	e.c.regMu.Lock()
	e.c.handles--
	e.c.regMu.Unlock()
	return nil
}

// enter checks that a call may proceed: the process is alive, the handle
// registered, and (invariants builds) the caller is the registered one and
// alone in a ThreadSingle or ThreadSerialized endpoint.
func (e *Endpoint) enter() error {
	if !e.active {
		return ErrNotRegistered
	}
	if e.c.p.job.halted.Load() { // finalized, or the job failed (job.go)
		return e.c.p.haltErr()
	}
	if invariants.Enabled {
		if g := goid(); g != e.gid && !e.helper {
			return fmt.Errorf("%w: handle registered by goroutine %d used by goroutine %d", ErrNotRegistered, e.gid, g)
		}
		if e.c.level < ThreadMultiple && e.c.busy.Add(1) != 1 {
			e.c.busy.Add(-1)
			invariants.Failf("endpoint: two callers inside %v endpoint %d at once", e.c.level, e.c.addr)
		}
	}
	return nil
}

// leave undoes enter's busy count (invariants builds). The hot calls defer
// it under invariants.Enabled, so that other builds pay for no defer.
func (e *Endpoint) leave() {
	if invariants.Enabled && e.c.level < ThreadMultiple {
		e.c.busy.Add(-1)
	}
}

// checkSend validates a send's destination rank and tag in comm c
// (validSend is its inlined test of the common case).
func checkSend(c Comm, src, dst int, tag int) error {
	if dst < 0 || dst >= len(c.Addrs) {
		if dst == ProcNull {
			return nullSend(c, src, tag)
		}
		return fmt.Errorf("%w: destination %d, communicator size %d", ErrRank, dst, len(c.Addrs))
	}
	if src < 0 || src >= len(c.Addrs) {
		return fmt.Errorf("%w: source %d, communicator size %d", ErrRank, src, len(c.Addrs))
	}
	if tag < 0 || tag > MaxTag {
		return fmt.Errorf("%w: %d (want 0..%d)", ErrTag, tag, MaxTag)
	}
	return nil
}

// validSend is checkSend's test for a valid send, small enough to inline.
func validSend(n, src, dst, tag int) bool {
	return uint(dst) < uint(n) && uint(src) < uint(n) && uint(tag) <= uint(MaxTag)
}

// Isend starts sending data to rank dst of communicator c, in which the
// caller is rank me, with tag. The send is complete on return when it is
// eager (up to the eager limit: data is copied into a packet), when the
// destination lives in this process and its receive is posted (data is
// copied into it), or when the receiver offered its buffer (data is put
// into it); otherwise it announces itself (RTS) and completes when the data
// has been put into the matched receive's buffer, so data must not change
// until then. Isend never blocks
// except on an exhausted packet pool, where it yields a fiber or lets other
// goroutines run until a packet frees.
func (e *Endpoint) Isend(c Comm, me, dst, tag int, data []byte) (*Request, error) {
	return e.isend(c, me, dst, tag, data, false)
}

// Issend is Isend in synchronous mode: the request completes only once the
// matching receive has started (it never goes eager).
func (e *Endpoint) Issend(c Comm, me, dst, tag int, data []byte) (*Request, error) {
	return e.isend(c, me, dst, tag, data, true)
}

func (e *Endpoint) isend(c Comm, me, dst, tag int, data []byte, sync bool) (*Request, error) {
	return e.isendInto(nil, c, me, dst, tag, data, sync)
}

// IsendInto is Isend with a request the caller provides (nil means
// allocate one), so a layer above can embed the request in its own and
// allocate once. r must be new (zero) or complete (it is then reused; a
// pending one gets ErrRequestActive) and is used only if the send goes by
// rendezvous; the request returned is r, or a shared completed request for
// an eager send.
func (e *Endpoint) IsendInto(r *Request, c Comm, me, dst, tag int, data []byte) (*Request, error) {
	return e.isendInto(r, c, me, dst, tag, data, false)
}

func (e *Endpoint) isendInto(r *Request, c Comm, me, dst, tag int, data []byte, sync bool) (*Request, error) {
	if e.c.tr != nil && !e.tracing {
		return e.tracedIsend(r, c, me, dst, tag, data, sync)
	}
	if err := e.enter(); err != nil {
		return nil, err
	}
	if invariants.Enabled {
		defer e.leave() // the busy count of enter: nothing else to undo
	}
	if !validSend(len(c.Addrs), me, dst, tag) {
		if err := checkSend(c, me, dst, tag); err != nil {
			if err == errProcNull {
				return completedSend, nil
			}
			return nil, err
		}
	}
	if done, err := e.quick(c, me, dst, tag, data, sync); err != nil {
		return nil, err
	} else if done {
		return completedSend, nil
	}
	if r == nil {
		r = new(Request)
	}
	if err := r.recycle(reqSend, e.c); err != nil {
		return nil, err
	}
	r.owner = e.rec
	if err := e.rendezvous(c, me, dst, tag, data, r, sync); err != nil {
		r.fail(err)
		return nil, err
	}
	return r, nil
}

// completedSend is what an eager Isend returns: a send request that is
// complete from the start. It is shared and never changes, so nothing is
// allocated for an eager send.
var completedSend = func() *Request {
	r := &Request{kind: reqSend}
	r.ev.Signal()
	d := &doneState{ch: make(chan struct{})}
	d.close()
	r.doneCh.Store(d)
	return r
}()

// Eager reports whether a plain (not synchronous) send of n bytes goes by
// the eager protocol, and so completes when Isend returns.
func (e *Endpoint) Eager(n int) bool { return n <= e.c.p.opts.EagerLimit }

// isEager reports whether data goes by the eager protocol.
func (e *Endpoint) isEager(data []byte, sync bool) bool {
	return !sync && e.Eager(len(data))
}

// quick sends data in one step when it can, and reports whether it did
// (the send is then complete); otherwise the caller starts a rendezvous.
// In order:
//   - the destination lives in this process and its receive is posted: the
//     data goes straight into the receive's buffer, whatever its size (no
//     packet, one copy; a synchronous send is then satisfied too);
//   - the destination offered its receive buffer (offer.go): Put and Done;
//   - the message is eager: a packet carries it.
func (e *Endpoint) quick(c Comm, me, dst, tag int, data []byte, sync bool) (bool, error) {
	to := c.Addrs[dst]
	d := e.dest(to)
	if d.remote {
		if d.offers.route() {
			if off, ok := d.offers.take(c.Context, int32(tag)); ok {
				return true, e.putOffered(to, off, data)
			}
		}
	} else if peer := d.peer; peer != nil {
		if peer.deliverDirect(c.Context, int32(me), int32(tag), data) {
			if peer.tr != nil {
				peer.tr.Instant(trace.KindMatch, int32(e.c.addr), int32(tag), c.Context, len(data))
			}
			return true, nil
		}
	}
	if !e.isEager(data, sync) {
		return false, nil
	}
	return true, e.eager(c, me, d, tag, data)
}

// eager copies data into a packet and posts it: the send is complete. A
// transport that takes eager messages without a packet (rdma.EagerSender)
// gets data straight, unless packets wait in the backlog (they go first).
func (e *Endpoint) eager(c Comm, me int, d *dest, tag int, data []byte) error {
	to := d.to
	if e.c.tr != nil {
		e.c.tr.Instant(trace.KindEager, int32(to), int32(tag), c.Context, len(data))
	}
	p := e.c.p
	if d.eager != nil && p.backlog.queued.Load() == 0 &&
		d.eager.SendEager(e.worker, to, rdma.EagerHeader{From: e.c.addr, Context: c.Context, Source: int32(me), Tag: int32(tag)}, data) {
		return nil
	}
	pk := e.c.getPacket(e.worker, e.waiter)
	pk.Context, pk.Source, pk.Tag = c.Context, int32(me), int32(tag)
	pk.Kind = packet.KindEager
	if err := pk.SetData(data); err != nil { // cannot fail: EagerLimit <= payload
		e.c.p.pool.Put(e.worker, pk)
		return err
	}
	return e.c.send(e.worker, to, pk)
}

// rendezvous announces a large (or synchronous) send with an RTS; r
// completes when the receiver's RTR has come, so the receive has matched,
// and the data is put: that is also what a synchronous send waits for. A
// send that is not synchronous goes by the destination's rdma.Mover when
// it has one (moved): r completes when the transport has moved the bytes.
func (e *Endpoint) rendezvous(c Comm, me, dst, tag int, data []byte, r *Request, sync bool) error {
	to := c.Addrs[dst]
	pk := e.c.getPacket(e.worker, e.waiter)
	pk.Context, pk.Source, pk.Tag = c.Context, int32(me), int32(tag)
	r.buf, r.peer = data, to
	r.id = e.c.register(r)
	pk.Kind = packet.KindRTS
	pk.SendID = r.id
	pk.Size = uint64(len(data))
	if e.c.tr != nil {
		e.c.tr.Instant(trace.KindRTS, int32(to), int32(tag), c.Context, len(data))
	}
	if !sync && e.c.tr == nil {
		if moved, err := e.moved(to, pk, data, r); moved || err != nil {
			return err
		}
	}
	if err := e.c.send(e.worker, to, pk); err != nil {
		e.c.take(r.id)
		return err
	}
	return nil
}

// moved sends the RTS pk of the registered send r by a transport that
// moves the bytes itself (rdma.Mover), and reports whether it did: not to
// an endpoint of this process, nor while packets to anyone wait in the
// backlog (the RTS must not overtake them), nor when the transport says
// ErrAgain. The send completes when the transport says the bytes are
// taken (movedSend). A synchronous send never comes here: MPI may
// complete the sends of a message below its own rendezvous size before the
// receive is posted.
func (e *Endpoint) moved(to rdma.Addr, pk *packet.Packet, data []byte, r *Request) (bool, error) {
	d := e.dest(to)
	p := e.c.p
	if d.mover == nil || p.backlog.queued.Load() != 0 {
		return false, nil
	}
	pk.Flags = rtsMoved
	pk.From = uint32(e.c.addr)
	// No transfer is counted here (job.transfers): until a receive
	// matches, a send waits like one whose RTR has not come, and a job
	// whose ranks all wait so is deadlocked. The receiver counts the
	// transfer from the match on (takeMoved).
	err := d.mover.SendMoved(e.worker, to, pk, data, &movedSend{c: e.c, id: r.id})
	if err == nil {
		return true, nil
	}
	pk.Flags, pk.RecvID = 0, 0
	if errors.Is(err, rdma.ErrAgain) {
		return false, nil // the RTS goes the other way
	}
	p.pool.Put(e.worker, pk)
	e.c.take(r.id)
	return false, fmt.Errorf("endpoint: send to %d: %w", to, err)
}

// Irecv posts a receive into buf for a message from rank src (or AnySource)
// with tag (or AnyTag) on communicator c. A message that arrived already is
// copied at once; otherwise the data is copied straight into buf when it
// arrives (eager) or put there by the sender (rendezvous). buf must not be
// touched until the request completes.
func (e *Endpoint) Irecv(c Comm, src, tag int, buf []byte) (*Request, error) {
	if err := e.enter(); err != nil {
		return nil, err
	}
	if invariants.Enabled {
		defer e.leave() // the busy count of enter: nothing else to undo
	}
	r := &Request{kind: reqRecv, ep: e.c, owner: e.rec}
	if err := e.post(c, src, tag, buf, r); err != nil {
		return nil, err
	}
	return r, nil
}

// IrecvInto is Irecv with a request the caller provides, which must be new
// (zero) or complete (it is then reused; a pending one gets
// ErrRequestActive); a layer above embeds it in its own request to allocate
// once.
func (e *Endpoint) IrecvInto(r *Request, c Comm, src, tag int, buf []byte) error {
	if r == nil {
		return ErrNilRequest
	}
	if err := e.enter(); err != nil {
		return err
	}
	if invariants.Enabled {
		defer e.leave() // the busy count of enter: nothing else to undo
	}
	if err := r.recycle(reqRecv, e.c); err != nil {
		return err
	}
	r.owner = e.rec
	if err := e.post(c, src, tag, buf, r); err != nil {
		r.fail(err)
		return err
	}
	return nil
}

// post matches receive r against the arrived messages or queues it.
func (e *Endpoint) post(c Comm, src, tag int, buf []byte, r *Request) error {
	key, err := recvKey(c, src, tag)
	if err != nil {
		if err == errProcNull {
			completeNull(r)
			return nil
		}
		return err
	}
	r.key, r.buf = key, buf
	var po pendingOffer
	offering := e.mayOffer(src, tag, r) && e.offerBuffer(c, src, r, &po)
	m, _, ok, err := e.c.table.Post(key, r)
	if err != nil {
		e.c.unregister(r)
		return err
	}
	if ok {
		e.c.matched(e.worker, r, m)
	} else if offering {
		e.offerReceive(key, &po, r)
	}
	return nil
}

// recvKey validates a receive's source and tag and builds its key.
func recvKey(c Comm, src, tag int) (match.Key, error) {
	if uint(src) < uint(len(c.Addrs)) && uint(tag) <= uint(MaxTag) {
		if k, ok := match.ExactKey(c.Context, int32(src), int32(tag)); ok {
			return k, nil // an exact receive: no wildcard to check
		}
	}
	if len(c.Addrs) == 0 { // no rank could send it (a freed communicator's view)
		return match.Key{}, fmt.Errorf("%w: receive on a communicator of no ranks", ErrRank)
	}
	if src != AnySource && (src < 0 || src >= len(c.Addrs)) && src != ProcNull {
		return match.Key{}, fmt.Errorf("%w: source %d, communicator size %d", ErrRank, src, len(c.Addrs))
	}
	if tag != AnyTag && (tag < 0 || tag > MaxTag) {
		return match.Key{}, fmt.Errorf("%w: %d (want 0..%d or AnyTag)", ErrTag, tag, MaxTag)
	}
	if src == ProcNull {
		return match.Key{}, errProcNull
	}
	return match.NewKey(c.Context, int32(src), int32(tag))
}

// Iprobe reports whether a message from src (or AnySource) with tag (or
// AnyTag) on c has arrived, and its status, without receiving it.
func (e *Endpoint) Iprobe(c Comm, src, tag int) (Status, bool, error) {
	if err := e.enter(); err != nil {
		return Status{}, false, err
	}
	if invariants.Enabled {
		defer e.leave() // the busy count of enter: nothing else to undo
	}
	key, err := recvKey(c, src, tag)
	if err != nil {
		if err == errProcNull {
			return nullStatus, true, nil
		}
		return Status{}, false, err
	}
	m, mk, ok, err := e.c.table.Probe(key)
	if err != nil || !ok {
		return Status{}, false, err
	}
	st := Status{Source: mk.Source(), Tag: mk.Tag(), Count: m.Len()}
	if m.Kind == packet.KindRTS {
		st.Count = int(m.Size)
	}
	return st, true, nil
}

// Probe waits until Iprobe would report a message and returns its status.
// A fiber yields between looks, a goroutine lets others run.
func (e *Endpoint) Probe(c Comm, src, tag int) (Status, error) {
	for first := true; ; first = false {
		st, ok, err := e.Iprobe(c, src, tag)
		if err != nil || ok {
			if !first && e.rec != nil {
				e.rec.probing.Store(nil)
			}
			return st, err
		}
		if first && e.rec != nil { // for the deadlock watchdog (deadlock.go)
			e.rec.probing.Store(&probeWait{c: c, src: src, tag: tag})
		}
		e.c.p.progress(e.worker)
		e.c.p.pause(e.waiter)
	}
}

// Wait waits for r with the handle's caller: a fiber yields, a goroutine
// parks. It returns r's status error.
func (e *Endpoint) Wait(r *Request) error {
	if r == nil {
		return ErrNilRequest
	}
	if !e.active {
		return ErrNotRegistered
	}
	return r.WaitFor(e.waiter)
}

// Send sends data to rank dst of c (the caller being rank me) and returns
// once data may be reused: at once for an eager message, after the transfer
// for a rendezvous one. A fiber yields while it waits, a goroutine parks.
func (e *Endpoint) Send(c Comm, me, dst, tag int, data []byte) error {
	return e.blockingSend(c, me, dst, tag, data, false)
}

// Ssend sends in synchronous mode: it returns once the matching receive has
// started.
func (e *Endpoint) Ssend(c Comm, me, dst, tag int, data []byte) error {
	return e.blockingSend(c, me, dst, tag, data, true)
}

func (e *Endpoint) blockingSend(c Comm, me, dst, tag int, data []byte, sync bool) error {
	if e.c.tr != nil && !e.tracing {
		return e.tracedSend(c, me, dst, tag, data, sync)
	}
	if err := e.enter(); err != nil {
		return err
	}
	if invariants.Enabled {
		defer e.leave() // the busy count of enter: nothing else to undo
	}
	if !validSend(len(c.Addrs), me, dst, tag) {
		if err := checkSend(c, me, dst, tag); err != nil {
			if err == errProcNull {
				return nil
			}
			return err
		}
	}
	if done, err := e.quick(c, me, dst, tag, data, sync); done || err != nil {
		return err
	}
	r := e.scratch
	r.reset(reqSend, e.c, e.waiter)
	if err := e.rendezvous(c, me, dst, tag, data, r, sync); err != nil {
		r.ev.Reset() // not armed while the caller goes on (deadlock.go)
		return err
	}
	return r.WaitFor(e.waiter)
}

// Recv receives into buf a message from src (or AnySource) with tag (or
// AnyTag) on c, and returns its status. A fiber yields while it waits, a
// goroutine parks. A fiber alone on its worker, receiving from a given
// source and tag in another process, first spins for a while looking at
// the shared-memory ring that source sends into (or polling MPI, over
// rdma/mpi), and takes its message from there itself when it comes first
// and nothing posted or queued here precedes it (MPI's order is kept): the
// receive is then never posted, and the message never delivered through
// Progress.
func (e *Endpoint) Recv(c Comm, src, tag int, buf []byte) (Status, error) {
	if e.c.tr != nil {
		return e.tracedRecv(c, src, tag, buf)
	}
	if err := e.enter(); err != nil {
		return Status{}, err
	}
	if invariants.Enabled {
		defer e.leave() // the busy count of enter: nothing else to undo
	}
	if st, ok := e.takeRecv(c, src, tag, buf); ok {
		return st, nil
	}
	r := e.scratch
	r.reset(reqRecv, e.c, e.waiter)
	if err := e.post(c, src, tag, buf, r); err != nil {
		r.ev.Reset() // not armed while the caller goes on (deadlock.go)
		return Status{}, err
	}
	// r.WaitFor(e.waiter), written out: Event.Wait inlines, so a fiber
	// resumed from its switch returns through one frame fewer (see
	// fiber.Waiter.park).
	if !r.ev.Done() {
		if e.c.p.opts.Progress == ProgressCaller {
			r.poll(e.waiter)
		} else if !r.spin(e.waiter) {
			r.ev.Wait(e.waiter)
		}
	}
	return r.status, r.status.Err
}
