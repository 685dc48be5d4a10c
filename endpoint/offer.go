package endpoint

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/fibermpi/fibermpi/match"
	"github.com/fibermpi/fibermpi/packet"
	"github.com/fibermpi/fibermpi/rdma"
)

// The receiver-driven rendezvous (Dang et al. 2016b §2.2.2) over transports between
// processes, where a sender cannot look into its peer's matching table.
//
// A receive with an exact source and tag and a buffer above the eager limit
// registers its buffer and, if it is the first receive queued under its key
// and no wildcard receive is posted (match.Table.Leads), offers the buffer to
// the sender at once (a kindOffer packet, an RTR sent before any RTS). The sender keeps the
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

// Packet kinds and flags of the receiver-driven rendezvous. The kinds are
// this package's own (packet.KindUser upwards).
const (
	// kindOffer: receiver → sender, an offered buffer (payload: the
	// region), for the receive RecvID under (Context, Tag); Count holds the
	// receiver's count of eager and RTS packets from the sender.
	kindOffer = packet.KindUser + iota
	// kindWithdraw: receiver → sender, withdraw the offer of receive
	// RecvID under (Context, Tag).
	kindWithdraw
	// The sender's answers to a withdrawal, for receive RecvID: the offer
	// was unused and is gone; a send is using it (its Done follows); no
	// such offer (dropped as stale, or its Done was sent).
	kindWithdrawn
	kindTaken
	kindNotHeld
)

// Flags of a Done.
const (
	doneFailed = 1 // the Put failed, the receiver must not trust its buffer
	doneOffer  = 2 // completes an offer; Size holds the message length
)

// offerKey names an offer at the sender, among the offers of one receiver:
// the key of the receive (the sender's own rank in the communicator is
// implied by the context).
type offerKey struct {
	ctx uint32
	tag int32
}

// offer is a receive buffer offered to the sender.
type offer struct {
	region rdma.Region
	id     uint64 // the receive's rendezvous id at the receiver
}

// offers is an endpoint's state for the receiver-driven rendezvous: one
// peerOffers per endpoint of another process it talks to.
type offers struct {
	peers peerTable[peerOffers, *peerOffers]

	kept, dropped atomic.Uint64 // offers the sender kept and dropped (tests)
}

func newOffers() *offers { return &offers{} }

// peerOffers is the offer state between this endpoint and one peer. The
// counters are atomics so that a send takes no lock unless the peer holds an
// offer (see route and keep for why that is safe).
type peerOffers struct {
	// sent counts the eager and RTS packets this endpoint sent to the
	// peer (route adds before each; keep compares).
	sent atomic.Uint64
	// arrived counts the peer's eager and RTS packets matched or queued
	// here (counted adds; arrivedFrom loads for an offer).
	arrived atomic.Uint64
	// open is len(offers), for route's lock-free check: keep adds before it
	// compares sent, route loads after it adds to sent.
	open atomic.Int32

	mu     sync.Mutex
	offers map[offerKey]offer // sender: fresh offers not used yet
	inUse  map[uint64]bool    // sender: offers (by receive id) taken by a send whose Done is not sent yet
}

// init makes the maps (peerTable calls it once, before publishing).
func (po *peerOffers) init() {
	po.offers = make(map[offerKey]offer)
	po.inUse = make(map[uint64]bool)
}

// held returns the number of fresh offers held, for every peer (tests).
func (o *offers) held() int {
	n := 0
	o.peers.each(func(po *peerOffers) { n += int(po.open.Load()) })
	return n
}

// inUseCount returns the number of offers taken by sends whose Done is not
// sent yet, for every peer (tests).
func (o *offers) inUseCount() int {
	n := 0
	o.peers.each(func(po *peerOffers) {
		po.mu.Lock()
		n += len(po.inUse)
		po.mu.Unlock()
	})
	return n
}

// arrivedFrom returns how many eager and RTS packets from peer have been
// matched or queued.
func (o *offers) arrivedFrom(peer rdma.Addr) uint64 {
	return o.peers.get(peer).arrived.Load()
}

// counted records n eager or RTS packets from peer, after they were
// matched or queued.
func (o *offers) counted(peer rdma.Addr, n int) {
	o.peers.get(peer).arrived.Add(uint64(n))
}

// route is called before every send to the peer: it counts the eager or
// RTS packet the caller is about to send and reports whether the peer may
// hold an offer; if so, the caller calls take for the send's (ctx, tag),
// which uncounts the send when it takes an offer. route inlines into
// every send; take is out of line.
//
// It counts first and looks for offers second, while keep does the opposite
// (announces an offer in open, then compares the count); with sequentially
// consistent atomics, either route sees the offer (and take takes it, under
// the lock, uncounting its send) or keep sees the count that includes this
// send (and drops the offer as stale). An offer kept while take waits for
// the lock is found there. Dropping is always safe: the receive is then
// matched by an RTS like any other.
func (po *peerOffers) route() (mayHold bool) {
	po.sent.Add(1)
	return po.open.Load() != 0
}

// take takes the fresh offer for (ctx, tag), if there is one, for a send
// that route counted.
func (po *peerOffers) take(ctx uint32, tag int32) (offer, bool) {
	k := offerKey{ctx, tag}
	po.mu.Lock()
	defer po.mu.Unlock()
	off, ok := po.offers[k]
	if !ok {
		return offer{}, false
	}
	delete(po.offers, k)
	po.open.Add(-1)
	po.inUse[off.id] = true
	po.sent.Add(^uint64(0)) // this send goes by the offer: no eager or RTS
	return off, true
}

// keep records an offer from peer if it is fresh (see the top of this
// file) and the sender may use offers, and reports whether it did. count is
// the receiver's count of arrivals from this endpoint, mod 2^32.
func (o *offers) keep(peer rdma.Addr, k offerKey, off offer, count uint32, level ThreadLevel) bool {
	if level == ThreadMultiple {
		o.dropped.Add(1)
		return false
	}
	po := o.peers.get(peer)
	po.mu.Lock()
	defer po.mu.Unlock()
	po.open.Add(1)
	if uint32(po.sent.Load()) != count {
		po.open.Add(-1)
		o.dropped.Add(1)
		return false
	}
	if _, dup := po.offers[k]; dup {
		// A fresh offer is used by the next send under its key, and the
		// receiver offers again only after that send's Done.
		po.open.Add(-1)
		panic(fmt.Sprintf("endpoint: two fresh offers from %d for %+v", peer, k))
	}
	po.offers[k] = off
	o.kept.Add(1)
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

// mayOffer reports whether r, a receive from src with tag, may offer its
// buffer: an exact receive above the eager limit, below ThreadMultiple
// (where senders drop offers, and a receive need not lose Cancel for
// nothing). It is post's cheap test, inlined, before offerBuffer.
func (e *Endpoint) mayOffer(src, tag int, r *Request) bool {
	return e.c.level != ThreadMultiple && src != AnySource && tag != AnyTag && len(r.buf) != 0 && !e.Eager(len(r.buf))
}

// offerBuffer registers r's buffer before r is posted, when r may be
// offered (mayOffer), its source is in another process and the transport
// there does not move messages itself (rdma.Mover.Moves), filling in po;
// it reports false if r is not to be offered. (po is filled in place: a
// pendingOffer returned by value went through the stack as small stores
// read back as one wide load, which the processor cannot forward.)
func (e *Endpoint) offerBuffer(c Comm, src int, r *Request, po *pendingOffer) bool {
	to := c.Addrs[src]
	if !e.c.p.remote(to) {
		return false // the sender fills the receive itself
	}
	if m := e.c.p.moverOf(to); m != nil && m.Moves() {
		return false // the sender moves the message (rdma.Mover.Moves)
	}
	count := e.c.off.arrivedFrom(to)
	region, err := e.c.p.tr.Register(r.buf)
	if err != nil {
		return false // no offer; an RTS will come, and its RTR registers then
	}
	r.region, r.peer, r.hasRegion = region, to, true
	r.id = e.c.register(r)
	*po = pendingOffer{count: count, to: to, region: region, id: r.id}
	return true
}

// offerReceive sends the offer of r, just queued under key, if r leads the
// key. r may already be matched by another thread: the offer is then stale
// (the count excludes the message that matched r) and the sender drops it.
func (e *Endpoint) offerReceive(key match.Key, po *pendingOffer, r *Request) {
	if !e.c.table.Leads(key, r) {
		return
	}
	pk := e.c.getPacket(e.worker, e.waiter)
	pk.Kind = kindOffer
	pk.Context, pk.Tag = key.Context(), key.Tag()
	pk.Count, pk.RecvID = uint32(po.count), po.id
	setRegion(pk, po.region)
	if e.c.send(e.worker, po.to, pk) == nil {
		r.offered = true // read by Cancel, the owner's call like this one
	}
}

// onOffer runs at the sender when an offer arrives: keep it if fresh.
func (c *core) onOffer(w int, pk *packet.Packet) {
	from, k, count := rdma.Addr(pk.From), offerKey{pk.Context, pk.Tag}, pk.Count
	region, err := rdma.ParseRegion(pk.Data())
	off := offer{region: region, id: pk.RecvID}
	c.p.pool.Put(w, pk)
	if err != nil {
		panic(fmt.Sprintf("endpoint: offer from %d: %v", from, err))
	}
	c.off.keep(from, k, off, count, c.level)
}

// putOffered sends data into an offered receive buffer: a Put of what fits,
// then Done with the message length, from which the receiver reports its
// status (and truncation). The send is then complete.
//
// The Put is made here, in the sender's call, even on a transport that can
// start it and finish later (rdma.PutStarter, which onRTR uses): the
// offered receive stays in the receiver's matching table until this Done
// arrives, so the Done must precede every later packet of this sender
// under the key (see the top of this file); a Done sent from the Put's
// end would let the sender's next eager message overtake it and match the
// offered receive.
func (e *Endpoint) putOffered(to rdma.Addr, off offer, data []byte) error {
	n := min(uint64(len(data)), off.region.Len)
	var err error
	if e.c.tr != nil {
		err = e.c.tracedPut(to, off.region, data[:n])
	} else {
		err = e.c.p.tr.Put(to, off.region, 0, data[:n])
	}
	pk := e.c.getPacket(e.worker, e.waiter)
	pk.Kind, pk.Flags = packet.KindDone, doneOffer
	if err != nil {
		pk.Flags |= doneFailed
	}
	pk.RecvID, pk.Size = off.id, uint64(len(data))
	if serr := e.c.send(e.worker, to, pk); serr != nil && err == nil {
		err = serr
	}
	// Only now may a withdrawal of this offer be answered "not held": the
	// answer is sent after the Done, so it arrives after it (withdraw).
	po := e.c.off.peers.get(to)
	po.mu.Lock()
	delete(po.inUse, off.id)
	po.mu.Unlock()
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
		c.unregisterRegion(r)
	}
}

// unregisterRegion is unregister's work, apart so that unregister inlines
// into the delivery paths, where a receive mostly has no region.
func (c *core) unregisterRegion(r *Request) {
	c.take(r.id)
	c.dropRegion(r)
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
	pk.Kind = kindWithdraw
	pk.Context, pk.Tag, pk.RecvID = r.key.Context(), r.key.Tag(), r.id
	if c.send(packet.NoWorker, r.peer, pk) != nil {
		c.withdrawn(r.id) // the sender is gone: nothing will use the offer
	}
}

// onWithdraw runs at the sender: answer whether the offer is still unused.
func (c *core) onWithdraw(w int, pk *packet.Packet) {
	from, k, id := rdma.Addr(pk.From), offerKey{pk.Context, pk.Tag}, pk.RecvID
	answer := kindNotHeld
	po := c.off.peers.get(from)
	po.mu.Lock()
	if po.inUse[id] {
		answer = kindTaken
	} else if off, ok := po.offers[k]; ok && off.id == id {
		delete(po.offers, k)
		po.open.Add(-1)
		answer = kindWithdrawn
	}
	po.mu.Unlock()
	clearHeader(pk)
	pk.Kind, pk.RecvID = answer, id
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
