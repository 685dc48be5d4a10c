package endpoint

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/fibermpi/fibermpi/fiber"
	"github.com/fibermpi/fibermpi/match"
	"github.com/fibermpi/fibermpi/packet"
	"github.com/fibermpi/fibermpi/rdma"
	"github.com/fibermpi/fibermpi/trace"
)

// core is one endpoint's resources: its transport address, its matching
// table and its registry of rendezvous requests in flight. Every Endpoint
// handle registered with it shares it. It is the rdma.Receiver the
// transport delivers the endpoint's packets to.
type core struct {
	p     *Process
	addr  rdma.Addr
	level ThreadLevel
	table *match.Table[packet.Packet, Request]

	// handles counts registrations (thread-level rules); owner is the
	// handle that may call at ThreadFunneled.
	regMu   sync.Mutex
	handles int

	// rendezvous requests in flight, by id; ids are never reused.
	rvMu   sync.Mutex
	rv     map[uint64]*Request
	nextID atomic.Uint64

	// busy detects two callers inside a ThreadSingle or ThreadSerialized
	// endpoint at once (invariants builds only).
	busy atomic.Int32

	// ctx is the endpoint's context-id state (context.go).
	ctx contexts

	// off is the receiver-driven rendezvous state (offer.go); nil on a
	// transport that reaches its peers directly.
	off *offers

	// tr records for the tracer (trace.go); nil when tracing is off.
	tr *trace.Rank
}

func newCore(p *Process, addr rdma.Addr, level ThreadLevel, mcfg match.Config) (*core, error) {
	t, err := match.New[packet.Packet, Request](mcfg)
	if err != nil {
		return nil, err
	}
	c := &core{p: p, addr: addr, level: level, table: t, rv: make(map[uint64]*Request)}
	c.tr = p.rec.Rank(int32(addr))
	if p.local == nil || p.procs > 1 {
		c.off = newOffers() // some peers are reached only by packets
	}
	if err := p.tr.Bind(addr, c, p.pool); err != nil {
		return nil, err
	}
	p.job.addCore(c) // for the sweep (job.go)
	return c, nil
}

// registered orders what the caller wrote to r, a receive registered for an
// offer before it matched (offer.go), before the Done that will end it. The
// Done comes back only through the sender's process, which Go's memory
// model (and the race detector) cannot see through; onDone takes r out of
// the registry under rvMu, and so does this look, which gives the order.
func (c *core) registered(r *Request) bool {
	c.rvMu.Lock()
	defer c.rvMu.Unlock()
	return c.rv[r.id] == r
}

// register records a rendezvous request and returns its id.
func (c *core) register(r *Request) uint64 {
	id := c.nextID.Add(1)
	c.rvMu.Lock()
	c.rv[id] = r
	c.rvMu.Unlock()
	return id
}

// take removes and returns the rendezvous request id.
func (c *core) take(id uint64) *Request {
	c.rvMu.Lock()
	r := c.rv[id]
	delete(c.rv, id)
	c.rvMu.Unlock()
	return r
}

// getPacket takes a packet from the pool for worker w. When the pool is dry
// it drives progress and lets others run until one frees: exhaustion is
// back-pressure, never a drop.
func (c *core) getPacket(w int, waiter *fiber.Waiter) *packet.Packet {
	for {
		if pk := c.p.pool.Get(w); pk != nil {
			return pk
		}
		c.p.progress(w)
		c.p.pause(waiter)
	}
}

// send posts pk to addr, returning it to the pool if the transport refuses.
// It stamps the packet with this endpoint's address.
func (c *core) send(w int, to rdma.Addr, pk *packet.Packet) error {
	pk.From = uint32(c.addr)
	rv := (pk.Kind == packet.KindRTR || pk.Kind == packet.KindDone) && c.p.remote(to)
	if rv {
		c.p.job.rvSent.Add(1) // before it can arrive (deadlock_job.go)
	}
	if err := c.p.post(w, to, pk); err != nil {
		if rv {
			c.p.job.rvSent.Add(^uint64(0))
		}
		c.p.pool.Put(w, pk)
		return fmt.Errorf("endpoint: send to %d: %w", to, err)
	}
	return nil
}

// Receive takes a packet the transport delivers to this endpoint. It runs
// in the sender's call (inproc) or in progress; it never blocks.
func (c *core) Receive(w int, pk *packet.Packet) {
	switch pk.Kind {
	case packet.KindEager, packet.KindRTS:
		key := match.MustKey(pk.Context, pk.Source, pk.Tag)
		from := rdma.Addr(pk.From)
		r, ok, err := c.table.Arrive(key, pk)
		if err != nil {
			// The sender built the key from a checked communicator;
			// a bad key here is a bug, not bad input.
			panic(fmt.Sprintf("endpoint: arrival with bad key %v: %v", key, err))
		}
		if ok {
			c.matched(w, r, pk)
		}
		if c.p.remote(from) {
			c.off.counted(from, 1) // after matching: see offer.go
		}
	case packet.KindRTR, packet.KindDone:
		if c.p.remote(rdma.Addr(pk.From)) {
			c.p.job.rvArrived.Add(1) // deadlock_job.go
		}
		if pk.Kind == packet.KindRTR {
			c.onRTR(w, pk)
		} else {
			c.onDone(w, pk)
		}
	case kindOffer:
		c.onOffer(w, pk)
	case kindWithdraw:
		c.onWithdraw(w, pk)
	case kindWithdrawn, kindNotHeld:
		id := pk.RecvID
		c.p.pool.Put(w, pk)
		c.withdrawn(id)
	case kindTaken:
		c.p.pool.Put(w, pk) // the Done of the send that took the offer completes it
	case kindWatchReport, kindWatchVerdict:
		c.p.onWatch(w, pk) // deadlock_job.go
	default:
		kind := pk.Kind
		c.p.pool.Put(w, pk)
		panic(fmt.Sprintf("endpoint: unexpected packet kind %v", kind))
	}
}

// ReceiveEager takes an eager message that a transport holds in its own
// memory (rdma.EagerReceiver) if a receive is posted for it, copying data
// into the receive's buffer; it reports false, changing nothing, when none
// is posted (the transport then delivers a packet to Receive) or while the
// endpoint is traced (Receive traces the arrival).
//
// It writes out deliverDirect's three steps instead of calling it: calling
// it measured 422 instructions an arrival against 382 without the profile,
// and 366 against 336 with it (callgrind, latency_mt -t 4, session 27).
func (c *core) ReceiveEager(w int, h rdma.EagerHeader, data []byte) bool {
	if c.tr != nil {
		return false
	}
	// deliverDirect's work, written out: one call fewer on the path of
	// every arrival from another process.
	key, ok := match.ExactKey(h.Context, h.Source, h.Tag)
	if !ok {
		key = eagerKey(h.Context, h.Source, h.Tag)
	}
	r, ok, err := c.table.TryArrive(key)
	if err != nil || !ok {
		return false
	}
	c.fillDirect(r, h.Source, h.Tag, data)
	if c.p.remote(h.From) {
		c.off.counted(h.From, 1) // after matching, as Receive: see offer.go
	}
	return true
}

// eagerRun is the most messages ReceiveEagerRun matches under one lock.
const eagerRun = 32

// ReceiveEagerRun takes a run of eager messages with one envelope that a
// transport holds in its own memory (rdma.EagerRunReceiver): the first
// of them, up to eagerRun, for which receives are posted, matched under
// one lock of their key's bucket. It returns how many it took, from the
// start of data; 0 while the endpoint is traced (Receive traces each
// arrival), and at most one while a wildcard receive is posted (the
// wildcards' order is kept message by message): the transport delivers
// the rest as it would have without runs.
func (c *core) ReceiveEagerRun(w int, h rdma.EagerHeader, data [][]byte) int {
	if c.tr != nil {
		return 0
	}
	var rs [eagerRun]*Request
	n, err := c.table.TryArriveRun(eagerKey(h.Context, h.Source, h.Tag), rs[:min(len(data), eagerRun)])
	if err != nil || n == 0 {
		return 0
	}
	for i, r := range rs[:n] {
		c.fillDirect(r, h.Source, h.Tag, data[i])
	}
	if c.p.remote(h.From) {
		c.off.counted(h.From, n) // after matching, as Receive: see offer.go
	}
	return n
}

// deliverDirect hands an eager message from a sender in this process to a
// receive already posted here for (ctx, src, tag), copying data into its
// buffer; it reports false, changing nothing, when none is posted (the
// sender then sends a packet, which Arrive matches or queues in order).
func (c *core) deliverDirect(ctx uint32, src, tag int32, data []byte) bool {
	key, ok := match.ExactKey(ctx, src, tag) // eagerKey's, inline: the common case
	if !ok {
		key = eagerKey(ctx, src, tag)
	}
	r, ok, err := c.table.TryArrive(key)
	if err != nil || !ok {
		return false
	}
	c.fillDirect(r, src, tag, data)
	return true
}

// eagerKey is the key of an eager message's envelope.
func eagerKey(ctx uint32, src, tag int32) match.Key {
	key, ok := match.ExactKey(ctx, src, tag)
	if !ok {
		key = match.MustKey(ctx, src, tag) // panics: senders check their keys
	}
	return key
}

// fillDirect completes receive r, matched to an eager message from src
// with tag whose bytes are data, by copying them into its buffer. The
// rare cases are out of line, so that the profile-guided build of a
// program (fmpi-osu's default.pgo) can inline fillDirect into the path of
// every eager arrival.
func (c *core) fillDirect(r *Request, src, tag int32, data []byte) {
	r.status.Source, r.status.Tag = src, tag
	if r.kind == reqHold { // Mprobe's (mprobe.go)
		holdDirect(r, data)
		return
	}
	n := copy(r.buf, data)
	r.status.Count = n
	if n < len(data) {
		truncated(r, len(data))
	}
	c.unregister(r) // registered for an offer (offer.go): only from another process
	r.complete()
}

// holdDirect completes Mprobe's request r with a copy of data.
//
//go:noinline
func holdDirect(r *Request, data []byte) {
	r.buf = append([]byte(nil), data...)
	r.status.Count = len(data)
	r.complete()
}

// truncated records in r's status that a message of got bytes did not fit
// its buffer.
//
//go:noinline
func truncated(r *Request, got int) {
	r.status.Err = &TruncateError{Have: len(r.buf), Got: got}
}

// matched joins a receive and the message (eager packet or RTS) it matched.
func (c *core) matched(w int, r *Request, pk *packet.Packet) {
	r.status.Source, r.status.Tag = pk.Source, pk.Tag
	if r.kind == reqHold { // Mprobe's: hold the message (mprobe.go)
		c.hold(r, pk)
		return
	}
	if c.tr != nil {
		c.traceMatched(pk)
	}
	if pk.Kind == packet.KindEager {
		data := pk.Data()
		n := copy(r.buf, data)
		r.status.Count = n
		if n < len(data) {
			r.status.Err = &TruncateError{Have: len(r.buf), Got: len(data)}
		}
		c.p.pool.Put(w, pk)
		c.unregister(r) // registered for an offer (offer.go)
		r.complete()
		return
	}
	// RTS: offer the receive buffer (as much of it as the message needs)
	// to the sender, whose request id and address the RTS carries.
	size := int(pk.Size)
	sendID, from := pk.SendID, rdma.Addr(pk.From)
	buf := r.buf
	if size > len(buf) {
		r.status.Err = &TruncateError{Have: len(buf), Got: size}
	} else {
		buf = buf[:size]
	}
	r.status.Count = len(buf)
	if pk.Flags&rtsMoved != 0 {
		c.takeMoved(w, r, pk, from, size)
		return
	}
	if !r.hasRegion { // else registered for an offer (of an exact receive from this sender)
		region, err := c.p.tr.Register(buf)
		if err != nil {
			c.p.pool.Put(w, pk)
			r.status.Err = fmt.Errorf("endpoint: registering receive buffer: %w", err)
			r.complete()
			return
		}
		r.region, r.hasRegion, r.peer = region, true, from
		r.id = c.register(r)
	} else {
		c.registered(r)
	}
	region := r.region
	rtr := pk // reuse the RTS packet for the reply
	clearHeader(rtr)
	rtr.Kind = packet.KindRTR
	rtr.SendID, rtr.RecvID = sendID, r.id
	setRegion(rtr, region)
	if c.tr != nil {
		c.tr.Instant(trace.KindRTR, int32(from), r.status.Tag, r.key.Context(), len(buf))
	}
	if err := c.send(w, from, rtr); err != nil {
		c.unregister(r)
		r.status.Err = err
		r.complete()
	}
}

// rtsMoved flags an RTS whose bytes the transport moves itself
// (rdma.Mover): the receiver takes them with TakeMoved, and no RTR, Put or
// Done follows.
const rtsMoved = 1

// takeMoved has the transport receive the bytes of the moved message whose
// RTS pk matched r (its size bytes, of which r's buffer takes what fits;
// the status says so already). An offered receive drops its offer: the
// RTS shows that the sender found it stale, so it never writes there. r is
// registered until the bytes are in, so that the job's end can end it.
func (c *core) takeMoved(w int, r *Request, pk *packet.Packet, from rdma.Addr, size int) {
	token := pk.RecvID
	c.p.pool.Put(w, pk)
	c.unregister(r)
	r.peer = from
	r.id = c.register(r)
	mv := c.p.moverOf(from)
	if mv == nil {
		// Only a transport that moves messages sends this flag; one that
		// routes the sender elsewhere is a bug.
		panic(fmt.Sprintf("endpoint: moved message from %d, whose transport moves none", from))
	}
	c.p.job.transfers.Add(1) // until PutDone: the bytes move, the job is not stuck
	if err := mv.TakeMoved(w, from, token, r.buf, size, &movedRecv{c: c, id: r.id, size: size}); err != nil {
		c.p.job.transfers.Add(-1)
		c.take(r.id)
		r.status.Err = fmt.Errorf("endpoint: receiving from %d: %w", from, err)
		r.complete()
	}
}

// movedSend is a send whose bytes the transport moves (Endpoint.moved):
// its end completes the send, unless the job's end took it first.
type movedSend struct {
	c  *core
	id uint64
}

func (m *movedSend) PutDone(w int, err error) {
	c := m.c
	s := c.take(m.id)
	if s == nil {
		return // ended by the job's end (job.go)
	}
	s.buf = nil
	s.status.Err = err
	s.complete()
}

// movedRecv is the receive of a moved message's bytes (takeMoved): the
// registered receive id, of a message of size bytes.
type movedRecv struct {
	c    *core
	id   uint64
	size int
}

func (m *movedRecv) PutDone(w int, err error) {
	c := m.c
	c.p.job.transfers.Add(-1)
	r := c.take(m.id)
	if r == nil {
		return // ended by the job's end (job.go)
	}
	if c.tr != nil {
		c.traceDone(r, r.peer, false, uint64(m.size))
	}
	if err != nil && r.status.Err == nil {
		r.status.Err = fmt.Errorf("%w: %w", ErrTransfer, err)
	}
	r.complete()
}

// onRTR runs at the sender: put the data into the offered buffer, tell the
// receiver, complete the send. On a transport that can start a Put and
// report its end later (rdma.PutStarter; not when tracing, which times
// the Put in the caller) it only starts the Put: the Done goes out and the
// send completes from the transport's Progress that reports the end
// (rvPut.PutDone), so that a window of sends has all its transfers in
// flight at once. The send stays in the registry meanwhile, so the job's
// end (job.go) can still end it.
func (c *core) onRTR(w int, pk *packet.Packet) {
	sendID, recvID := pk.SendID, pk.RecvID
	region, perr := rdma.ParseRegion(pk.Data())
	if c.p.putter != nil && c.tr == nil && perr == nil {
		// Read the send under the registry's lock: the job's end may take
		// and complete it (and its owner reuse it) once the lock is free.
		c.rvMu.Lock()
		s := c.rv[sendID]
		var data []byte
		var peer rdma.Addr
		if s != nil {
			data, peer = s.buf, s.peer
		}
		c.rvMu.Unlock()
		if s == nil {
			c.unknownRTR(w, pk, sendID)
			return
		}
		if uint64(len(data)) > region.Len {
			data = data[:region.Len] // the receiver truncates; it reports that
		}
		d := &rvPut{c: c, pk: pk, sendID: sendID, recvID: recvID}
		c.p.job.transfers.Add(1) // until PutDone
		pending, err := c.p.putter.StartPut(peer, region, 0, data, d)
		if !pending {
			d.PutDone(w, err)
		}
		return
	}
	s := c.take(sendID)
	if s == nil {
		c.unknownRTR(w, pk, sendID)
		return
	}
	err := perr
	if err == nil {
		data := s.buf
		if uint64(len(data)) > region.Len {
			data = data[:region.Len] // the receiver truncates; it reports that
		}
		c.p.job.transfers.Add(1)
		if c.tr != nil {
			err = c.tracedPut(s.peer, region, data)
		} else {
			err = c.p.tr.Put(s.peer, region, 0, data)
		}
		c.p.job.transfers.Add(-1)
	}
	c.putDone(w, s, pk, recvID, err)
}

// unknownRTR drops an RTR for a send not (or no longer) in the registry.
func (c *core) unknownRTR(w int, pk *packet.Packet, sendID uint64) {
	c.p.pool.Put(w, pk)
	if c.p.job.halted.Load() {
		return // the send was ended by the job's end (job.go)
	}
	panic(fmt.Sprintf("endpoint: RTR for unknown send %d", sendID))
}

// putDone ends the rendezvous send s, whose Put into receive recvID ended
// with err: it tells the receiver (Done, in the RTR packet pk) and
// completes s.
func (c *core) putDone(w int, s *Request, pk *packet.Packet, recvID uint64, err error) {
	done := pk
	clearHeader(done)
	done.Kind = packet.KindDone
	done.RecvID = recvID
	if err != nil {
		done.Flags = doneFailed
	}
	if serr := c.send(w, s.peer, done); serr != nil && err == nil {
		err = serr
	}
	s.buf = nil
	s.status.Err = err
	s.complete()
}

// rvPut is a rendezvous Put the transport started (onRTR): what its end
// needs. It is an rdma.PutDone.
type rvPut struct {
	c              *core
	pk             *packet.Packet // the RTR, to be the Done
	sendID, recvID uint64
}

// PutDone runs when the transport reports the Put's end (from its
// Progress, or from Close): the send is taken from the registry and
// ended, unless the job's end took it first; then nothing more is sent.
func (d *rvPut) PutDone(w int, err error) {
	c := d.c
	c.p.job.transfers.Add(-1) // onRTR's
	s := c.take(d.sendID)
	if s == nil {
		c.p.pool.Put(w, d.pk) // ended by the job's end (job.go)
		return
	}
	c.putDone(w, s, d.pk, d.recvID, err)
}

// onDone runs at the receiver: the data is in its buffer.
func (c *core) onDone(w int, pk *packet.Packet) {
	id := pk.RecvID
	r := c.take(id)
	failed, offered, msgLen := pk.Flags&doneFailed != 0, pk.Flags&doneOffer != 0, pk.Size
	if c.tr != nil && r != nil {
		c.traceDone(r, rdma.Addr(pk.From), offered, msgLen)
	}
	c.p.pool.Put(w, pk)
	if r == nil {
		if c.p.job.halted.Load() {
			return // the receive was ended by the job's end (job.go)
		}
		panic(fmt.Sprintf("endpoint: Done for unknown receive %d", id))
	}
	if offered {
		c.onOfferDone(r, msgLen, failed)
		return
	}
	c.dropRegion(r)
	if failed && r.status.Err == nil {
		r.status.Err = ErrTransfer
	}
	r.complete()
}

// clearHeader zeroes a packet's protocol fields (not the pool's own).
func clearHeader(pk *packet.Packet) {
	pk.Context, pk.Source, pk.Tag, pk.From = 0, 0, 0, 0
	pk.SendID, pk.RecvID, pk.Size, pk.Count = 0, 0, 0, 0
	pk.Kind, pk.Flags = packet.KindNone, 0
	pk.SetLen(0)
}

// setRegion makes a registered region the payload of an RTR or an offer.
func setRegion(pk *packet.Packet, r rdma.Region) {
	var b [rdma.RegionWireSize]byte
	_ = pk.SetData(rdma.AppendRegion(b[:0], r)) // cannot fail: 20 bytes
}
