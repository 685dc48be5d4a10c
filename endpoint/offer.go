package endpoint

import (
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/fibermpi/fibermpi/match"
	"github.com/fibermpi/fibermpi/packet"
	"github.com/fibermpi/fibermpi/rdma"
)

// The receiver-driven rendezvous (seed 001 §2.2.2) over transports between
// processes, where a sender cannot look into its peer's matching table.
//
// A receive with an exact source and tag and a buffer above the eager limit
// registers its buffer and, if it is the first receive queued under its key
// and no wildcard receive is posted (match.Table.Leads), offers the buffer to
// the sender at once with an RTR flagged rtrOffer. The sender keeps the
// offer and uses it for its next send under that key, of any size: it Puts
// the data into the buffer and sends Done, without an RTS. A send that finds
// no offer goes as before: eager, or RTS → RTR → Put → Done.
//
// An offer is only a hint; the receive stays in the matching table. It can
// be stale: a message the sender had sent before the offer reached it may
// match the receive first. The sender tells the two cases apart by counting.
// Each side counts the eager and RTS packets between the pair (the sender
// before sending each, the receiver after matching or queueing each), and
// the offer carries the receiver's count, taken before the receive was
// posted. If the sender's count equals it when the offer arrives, no packet
// was in flight when the receive was posted nor sent since, so the next
// message under the key is the one the receive gets: the offer is fresh and
// kept. Otherwise it is dropped, and the receive is matched by the message in
// flight or by an RTS like any other. An offer the receiver sent for a
// receive that something else matched meanwhile is stale by the same
// argument.
//
// Once a fresh offer is kept, no packet under its key is in flight, and the
// next one (the Done of the send that uses the offer) precedes every later
// packet from the same sender, whose calls are ordered (ThreadSingle to
// ThreadSerialized; a ThreadMultiple sender drops every offer, since two of
// its threads may send under one key at once). So nothing else can match the
// offered receive before the Done completes it.
//
// Cancelling an offered receive asks the sender to withdraw the offer
// (withdraw, below): the request then completes with ErrCancelled if the
// offer was unused, or with the message if a send had taken it.
//
// Transports that reach peers directly (rdma.Local, in-process) need none of
// this: a sender fills a posted receive of any size itself (deliverDirect).

// Packet flags of the receiver-driven rendezvous.
const (
	rtrOffer   = 1 // RTR: an offer, sent before any RTS; Request holds the receiver's count
	doneFailed = 1 // Done: the Put failed, the receiver must not trust its buffer
	doneOffer  = 2 // Done: completes an offer; RemoteLen holds the message length

	// KindControl packets: a receiver withdrawing an offer, and the
	// sender's answers.
	ctlWithdraw  = 1 // receiver → sender: withdraw offer Seq (key Context, Tag; payload: receiver address)
	ctlWithdrawn = 2 // sender → receiver: the offer was unused and is gone
	ctlTaken     = 3 // sender → receiver: a send is using the offer; its Done follows
	ctlNotHeld   = 4 // sender → receiver: no such offer (dropped as stale, or its Done was sent)
)

// setSender writes the sending endpoint's address as the payload of an offer
// or a withdrawal (the receiver of either must answer it); sender reads it.
func setSender(pk *packet.Packet, a rdma.Addr) {
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], uint32(a))
	_ = pk.SetData(b[:]) // cannot fail: 4 bytes
}

func sender(pk *packet.Packet) rdma.Addr {
	return rdma.Addr(binary.LittleEndian.Uint32(pk.Data()))
}

// offerKey names an offer at the sender: the receiver and the key of the
// receive (the sender's own rank in the communicator is implied by ctx).
type offerKey struct {
	to  rdma.Addr
	ctx uint32
	tag int32
}

// offer is a receive buffer offered to the sender.
type offer struct {
	region rdma.Region
	id     uint64 // the receive's rendezvous id at the receiver
}

// offers is an endpoint's state for the receiver-driven rendezvous.
type offers struct {
	mu      sync.Mutex
	arrived map[rdma.Addr]uint64 // receiver: eager and RTS packets from each peer
	sent    map[rdma.Addr]uint64 // sender: eager and RTS packets to each peer
	open    map[offerKey]offer   // sender: fresh offers not used yet
	inUse   map[usedKey]bool     // sender: offers taken by a send whose Done is not sent yet

	kept, dropped uint64 // offers the sender kept and dropped (tests)
}

func newOffers() *offers {
	return &offers{
		arrived: make(map[rdma.Addr]uint64),
		sent:    make(map[rdma.Addr]uint64),
		open:    make(map[offerKey]offer),
		inUse:   make(map[usedKey]bool),
	}
}

// usedKey names an offer taken by a send: the receiver and its receive id.
type usedKey struct {
	to rdma.Addr
	id uint64
}

// arrivedFrom returns how many eager and RTS packets from peer have been
// matched or queued.
func (o *offers) arrivedFrom(peer rdma.Addr) uint64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.arrived[peer]
}

// counted records an eager or RTS packet from peer, after it was matched
// or queued.
func (o *offers) counted(peer rdma.Addr) {
	o.mu.Lock()
	o.arrived[peer]++
	o.mu.Unlock()
}

// route is called before every send to peer under (ctx, tag): it takes the
// fresh offer for that key if there is one, else it counts the eager or RTS
// packet the caller is about to send.
func (o *offers) route(peer rdma.Addr, ctx uint32, tag int32) (offer, bool) {
	k := offerKey{peer, ctx, tag}
	o.mu.Lock()
	defer o.mu.Unlock()
	if off, ok := o.open[k]; ok {
		delete(o.open, k)
		o.inUse[usedKey{peer, off.id}] = true
		return off, true
	}
	o.sent[peer]++
	return offer{}, false
}

// keep records an offer if it is fresh (see the top of this file) and the
// sender may use offers, and reports whether it did.
func (o *offers) keep(k offerKey, off offer, count uint64, level ThreadLevel) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if level == ThreadMultiple || o.sent[k.to] != count {
		o.dropped++
		return false
	}
	if _, dup := o.open[k]; dup {
		// A fresh offer is used by the next send under its key, and the
		// receiver offers again only after that send's Done.
		panic(fmt.Sprintf("endpoint: two fresh offers for %+v", k))
	}
	o.open[k] = off
	o.kept++
	return true
}

// pendingOffer is what offerReceive needs, taken before the receive is
// posted: once it is, another thread may match and complete it.
type pendingOffer struct {
	count  uint64 // the receiver's count for the source
	to     rdma.Addr
	region rdma.Region
	id     uint64
}

// offerBuffer registers r's buffer before r is posted, when r may be
// offered: an exact receive above the eager limit, on a transport between
// processes, below ThreadMultiple (where senders drop offers, and a receive
// need not lose Cancel for nothing). It reports false if r is not to be
// offered.
func (e *Endpoint) offerBuffer(c Comm, src, tag int, r *Request) (pendingOffer, bool) {
	if e.c.off == nil || e.c.level == ThreadMultiple || src == AnySource || tag == AnyTag || len(r.buf) == 0 || e.Eager(len(r.buf)) {
		return pendingOffer{}, false
	}
	to := c.Addrs[src]
	count := e.c.off.arrivedFrom(to)
	region, err := e.c.p.tr.Register(r.buf)
	if err != nil {
		return pendingOffer{}, false // no offer; an RTS will come, and its RTR registers then
	}
	r.region, r.peer, r.hasRegion = region, to, true
	r.id = e.c.register(r)
	return pendingOffer{count: count, to: to, region: region, id: r.id}, true
}

// offerReceive sends the offer of r, just queued under key, if r leads the
// key. r may already be matched by another thread: the offer is then stale
// (the count excludes the message that matched r) and the sender drops it.
func (e *Endpoint) offerReceive(key match.Key, po pendingOffer, r *Request) {
	if !e.c.table.Leads(key, r) {
		return
	}
	pk := e.c.getPacket(e.worker, e.waiter)
	pk.Kind, pk.Flags = packet.KindRTR, rtrOffer
	pk.Context, pk.Tag = key.Context(), key.Tag()
	pk.Request, pk.Seq = po.count, po.id
	pk.RemoteKey, pk.RemoteAddr, pk.RemoteLen = po.region.Key, po.region.Addr, po.region.Len
	setSender(pk, e.c.addr)
	if e.c.send(e.worker, po.to, pk) == nil {
		r.offered = true // read by Cancel, the owner's call like this one
	}
}

// onOffer runs at the sender when an offer arrives: keep it if fresh.
func (c *core) onOffer(w int, pk *packet.Packet) {
	from := sender(pk)
	k := offerKey{from, pk.Context, pk.Tag}
	off := offer{region: rdma.Region{Key: pk.RemoteKey, Addr: pk.RemoteAddr, Len: pk.RemoteLen}, id: pk.Seq}
	count := pk.Request
	c.p.pool.Put(w, pk)
	c.off.keep(k, off, count, c.level)
}

// putOffered sends data into an offered receive buffer: a Put of what fits,
// then Done with the message length, from which the receiver reports its
// status (and truncation). The send is then complete.
func (e *Endpoint) putOffered(to rdma.Addr, off offer, data []byte) error {
	n := min(uint64(len(data)), off.region.Len)
	err := e.c.p.tr.Put(to, off.region, 0, data[:n])
	pk := e.c.getPacket(e.worker, e.waiter)
	pk.Kind, pk.Flags = packet.KindDone, doneOffer
	if err != nil {
		pk.Flags |= doneFailed
	}
	pk.Request, pk.RemoteLen = off.id, uint64(len(data))
	if serr := e.c.send(e.worker, to, pk); serr != nil && err == nil {
		err = serr
	}
	// Only now may a withdrawal of this offer be answered "not held": the
	// answer is sent after the Done, so it arrives after it (withdraw).
	e.c.off.mu.Lock()
	delete(e.c.off.inUse, usedKey{to, off.id})
	e.c.off.mu.Unlock()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrTransfer, err)
	}
	return nil
}

// onOfferDone completes an offered receive: the sender put the data.
func (c *core) onOfferDone(r *Request, msgLen uint64, failed bool) {
	// The receive is still queued in the table (an offer is only a hint);
	// nothing else can have matched it (see the top of this file).
	if !c.table.Cancel(r.key, r) {
		if c.p.job.halted.Load() {
			return // the job's end took and completed it (job.go)
		}
		panic(fmt.Sprintf("endpoint: offered receive %d for %v matched twice", r.id, r.key))
	}
	c.dropRegion(r)
	r.status.Source, r.status.Tag = r.key.Source(), r.key.Tag()
	r.status.Count = int(min(msgLen, uint64(len(r.buf))))
	switch {
	case failed:
		r.status.Err = ErrTransfer
	case msgLen > uint64(len(r.buf)):
		r.status.Err = &TruncateError{Have: len(r.buf), Got: int(msgLen)}
	}
	r.complete()
}

// unregister ends r's rendezvous registration, if it has one: its id and
// its registered buffer.
func (c *core) unregister(r *Request) {
	if r.hasRegion {
		c.take(r.id)
		c.dropRegion(r)
	}
}

// cancelled completes r, just removed from the table, as cancelled.
func (c *core) cancelled(r *Request) {
	c.unregister(r)
	r.status.Err = ErrCancelled
	r.complete()
}

// dropRegion deregisters r's buffer, if registered.
func (c *core) dropRegion(r *Request) {
	if r.hasRegion {
		_ = c.p.tr.Deregister(r.region)
		r.hasRegion = false
	}
}

// withdraw asks the sender to withdraw r's offer (Cancel of an offered
// receive). The sender's answer decides (onControl): an unused offer is
// removed and r is cancelled; a taken one is left to the send using it,
// whose Done completes r; for an offer the sender does not hold (it dropped
// it as stale, or sent its Done before the withdrawal came), r is cancelled
// in the table unless a message matched it first. The answer is sent after
// the Done of any send that took the offer, and transports deliver sends to
// one peer that do not overlap in time in order (rdma), so "not held" never
// overtakes a Done.
func (r *Request) withdraw() {
	c := r.ep
	pk := c.getPacket(packet.NoWorker, nil) // Cancel does not know its caller's waiter
	pk.Kind, pk.Flags = packet.KindControl, ctlWithdraw
	pk.Context, pk.Tag, pk.Seq = r.key.Context(), r.key.Tag(), r.id
	setSender(pk, c.addr)
	if c.send(packet.NoWorker, r.peer, pk) != nil {
		c.withdrawn(r.id) // the sender is gone: nothing will use the offer
	}
}

// onControl handles the withdrawal packets.
func (c *core) onControl(w int, pk *packet.Packet) {
	switch pk.Flags {
	case ctlWithdraw:
		c.onWithdraw(w, pk)
	case ctlWithdrawn, ctlNotHeld:
		id := pk.Request
		c.p.pool.Put(w, pk)
		c.withdrawn(id)
	case ctlTaken:
		c.p.pool.Put(w, pk) // the Done of the send that took the offer completes it
	default:
		c.p.pool.Put(w, pk)
		panic(fmt.Sprintf("endpoint: unexpected control packet %d", pk.Flags))
	}
}

// onWithdraw runs at the sender: answer whether the offer is still unused.
func (c *core) onWithdraw(w int, pk *packet.Packet) {
	from := sender(pk)
	k, id := offerKey{from, pk.Context, pk.Tag}, pk.Seq
	var answer uint8 = ctlNotHeld
	c.off.mu.Lock()
	if c.off.inUse[usedKey{from, id}] {
		answer = ctlTaken
	} else if off, ok := c.off.open[k]; ok && off.id == id {
		delete(c.off.open, k)
		answer = ctlWithdrawn
	}
	c.off.mu.Unlock()
	clearHeader(pk)
	pk.Kind, pk.Flags, pk.Request = packet.KindControl, answer, id
	_ = c.send(w, from, pk) // a receiver that is gone needs no answer
}

// withdrawn runs at the receiver when the offer of receive id is withdrawn
// or was never held: cancel the receive unless a message matched it.
func (c *core) withdrawn(id uint64) {
	c.rvMu.Lock()
	r := c.rv[id]
	c.rvMu.Unlock()
	if r == nil || !c.table.Cancel(r.key, r) {
		return // completed, or matched by a message that will complete it
	}
	c.cancelled(r)
}
