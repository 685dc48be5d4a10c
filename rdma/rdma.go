// Package rdma is the seam between fibermpi's endpoints and the ways bytes
// move between them: a Transport posts packets to peers, and writes or reads
// registered memory of a peer one-sidedly (Put, Get) for the rendezvous
// protocol.
//
// Backends live in their own packages: rdma/inproc (every endpoint in one
// process, the embedded default; a Put is a copy), rdma/shm (processes on
// one node), and rdma/route, which gives a process one Transport that picks
// a backend per destination. Every backend's tests run the conformance
// suite in rdma/rdmatest.
//
// # Addresses
//
// A transport names endpoints by Addr, a dense index over all endpoints of
// the job, of every process. A Layout records which process owns each
// address; it grows when endpoints are created, identically at every
// process. A local endpoint binds its Addr with the Receiver that takes its
// arrivals and the packet pool its arrivals are built in.
//
// # Delivery
//
// Send hands a packet to the transport; ownership passes with it, and the
// transport delivers it to the peer's Receiver exactly once, or returns an
// error and keeps nothing. Packets between one pair of endpoints are
// delivered in the order they were sent when their Send calls do not
// overlap in time (in particular, all sent by one goroutine or fiber); the
// endpoint layer's receiver-driven rendezvous relies on it. A transport
// may deliver synchronously, in the sender's call (inproc does), or later,
// from Progress; a Receiver must therefore not block and must not assume it
// runs on any particular goroutine.
//
// A transport between processes builds each arrival in a packet of the
// pool the destination was bound with (Bind), so the Receiver returns it
// to its own pool. When that pool is dry it leaves the bytes where they
// are (in its ring or socket) and tries again at the next Progress:
// exhaustion is back-pressure, never a drop.
//
// # Never blocking
//
// Nothing a Receiver calls may wait for a peer: two processes whose queues
// to each other are full, each delivering arrivals that answer with a
// Send, would wait for each other forever. So Send never waits for room: a
// full queue returns ErrAgain, the caller keeps the packet and sends it
// again after more Progress (the endpoint layer keeps such packets in a
// per-peer backlog, in order). Put and Get finish their copy before they
// return and never wait for the owner to call into its transport (a
// transport that can overlap Puts offers PutStarter too); a
// backend that must move the bytes through its peer's progress (a chunked
// copy through rings, a socket) keeps delivering its own arrivals into an
// internal queue while it waits, so that two processes doing it to each
// other cannot deadlock.
//
// # Memory
//
// Register exposes a local buffer to Put and Get from peers until Deregister;
// the Region it returns is plain data that travels in a packet's payload
// (AppendRegion, ParseRegion). A buffer from the Go heap must stay
// reachable, and for a transport whose peer writes it from another
// process, pinned (runtime.Pinner) while registered; the transport does that.
package rdma

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/fibermpi/fibermpi/packet"
)

// Addr identifies an endpoint to a transport: its index among all endpoints
// of the job.
type Addr uint32

// Region describes registered memory, as a peer needs it for Put and Get:
// the owner's key for the registration, a base address (or offset, as the
// transport defines), and the length in bytes.
type Region struct {
	Key  uint32
	Addr uint64
	Len  uint64
}

// RegionWireSize is the size in bytes of a Region as AppendRegion writes it.
const RegionWireSize = 20

// AppendRegion appends r's wire form (little-endian key, address, length) to
// b, for a packet payload.
func AppendRegion(b []byte, r Region) []byte {
	b = binary.LittleEndian.AppendUint32(b, r.Key)
	b = binary.LittleEndian.AppendUint64(b, r.Addr)
	return binary.LittleEndian.AppendUint64(b, r.Len)
}

// ParseRegion reads a Region that AppendRegion wrote at the start of b. It
// returns ErrBadRegion (wrapped) if b is too short.
func ParseRegion(b []byte) (Region, error) {
	if len(b) < RegionWireSize {
		return Region{}, fmt.Errorf("%w: %d bytes, want %d", ErrBadRegion, len(b), RegionWireSize)
	}
	le := binary.LittleEndian
	return Region{Key: le.Uint32(b), Addr: le.Uint64(b[4:]), Len: le.Uint64(b[12:])}, nil
}

// String formats the region for debugging.
func (r Region) String() string {
	return fmt.Sprintf("region{key=%d addr=%#x len=%d}", r.Key, r.Addr, r.Len)
}

// A Receiver takes the packets a transport delivers to one local endpoint.
// Receive owns pk from the call on (it returns it to the pool or keeps it).
// w is the worker index of the goroutine delivering it, or packet.NoWorker.
// Receive must not block.
type Receiver interface {
	Receive(w int, pk *packet.Packet)
}

// Transport moves packets and registered memory between endpoints. All
// methods may be called from any goroutine or fiber at once.
type Transport interface {
	// Name identifies the backend ("inproc", "shm", "tcp").
	Name() string
	// Bind attaches the local endpoint a, whose arrivals go to r, built in
	// packets from pool (a transport that delivers the sender's own packet,
	// as inproc does, may ignore it). Binding an address twice is an error
	// (ErrBound); so is a nil Receiver or pool (ErrNoPeer).
	Bind(a Addr, r Receiver, pool *packet.Pool) error
	// Unbind detaches a; later sends to it fail with ErrNoPeer.
	Unbind(a Addr) error
	// Send hands pk to the transport for delivery to the endpoint to; on
	// success the caller no longer owns pk. On error the caller keeps it;
	// ErrAgain means the queue to that peer is full for now: Send never
	// waits for room (see "Never blocking" above). w is the caller's
	// worker index or packet.NoWorker.
	Send(w int, to Addr, pk *packet.Packet) error
	// Register exposes buf for Put and Get by peers until Deregister.
	Register(buf []byte) (Region, error)
	// Deregister withdraws a registration; it fails with ErrNoRegion for
	// a region it does not know.
	Deregister(r Region) error
	// Put copies src into the region r, registered by the endpoint owner,
	// at byte offset off. It returns when src may be reused; the bytes are
	// visible to the owner once the owner is told so by a later packet
	// (packet order makes that safe). It never waits for the owner to
	// call into its transport.
	Put(owner Addr, r Region, off uint64, src []byte) error
	// Get copies from the region r, registered by owner, at offset off,
	// into dst.
	Get(owner Addr, r Region, off uint64, dst []byte) error
	// Progress polls for arrivals and completions and delivers them,
	// returning how many it handled. A transport that delivers
	// synchronously returns 0.
	Progress(w int) int
	// Close releases the transport; every later call fails with ErrClosed.
	Close() error
}

// EagerHeader is what an eager message carries besides its bytes: the
// sending endpoint and the message's envelope.
type EagerHeader struct {
	From    Addr   // the sending endpoint
	Context uint32 // the communicator's context id
	Source  int32  // the sender's rank in it
	Tag     int32
}

// EagerSender is implemented by transports that can send an eager message
// (a packet of kind packet.KindEager) straight from the caller's buffer,
// without a packet: rdma/shm copies it into its ring, rdma/route hands it
// to the destination's backend. SendEager reports whether it sent the
// message; false means nothing was done, for any reason (a full queue, a
// backend without this path, an unbound or unknown destination, a message
// longer than a packet): the caller then sends a packet with Send, which
// reports errors. Like Send it never waits, and messages sent by either
// call between the same pair of endpoints arrive in the order of the calls.
type EagerSender interface {
	SendEager(w int, to Addr, h EagerHeader, data []byte) bool
}

// EagerRouter is implemented by transports that hand each destination to
// another transport (rdma/route). EagerVia returns the EagerSender that
// SendEager uses for to, nil if it has none, so that a caller that sends
// to one destination many times looks the way up once. A destination's
// way never changes while the transport is open, and after Close the
// EagerSender returned reports false, as SendEager does.
type EagerRouter interface {
	EagerVia(to Addr) EagerSender
}

// EagerTaker is implemented by transports that let a waiting receiver take
// an eager message from their memory itself, instead of waiting for
// Progress to deliver it (rdma/shm, rdma/mpi). TakeEager looks at the next
// message from the process of address from (in arrival order, everything
// that process sent to this one before it included): if it is an eager
// message for to, it offers it to t, and consumes it if t.TakeEager takes
// it. It reports Took when it consumed one, TakeNone when there is nothing
// to look at yet (or another caller holds the queue: look again), and
// TakeOther when something else comes first (a message for another
// address, a packet that is no eager message, an eager message t did not
// take, or a transport that cannot tell): the caller must then let
// Progress deliver it, in order, before it takes anything after it. A
// transport whose arrivals from every process share one queue (rdma/mpi)
// may look at the next arrival from any process, and deliver what it does
// not offer or t does not take as Progress would, reporting TakeOther. It
// never waits. t runs with the transport's queue locked: the rules of
// EagerReceiver.ReceiveEager apply to it.
type EagerTaker interface {
	TakeEager(w int, from, to Addr, t EagerTake) Take
}

// EagerTake decides whether to take one eager message that an EagerTaker
// offers: it copies data out and reports true, or changes nothing and
// reports false. data is valid only during the call.
type EagerTake interface {
	TakeEager(h EagerHeader, data []byte) bool
}

// Take is the outcome of EagerTaker.TakeEager.
type Take uint8

// The outcomes of EagerTaker.TakeEager.
const (
	TakeNone  Take = iota // nothing to look at yet
	Took                  // the message was taken and consumed
	TakeOther             // something else comes first: leave it to Progress
)

// EagerReceiver is implemented by Receivers that can take an eager message
// straight from a transport's memory, without a packet, when a receive is
// posted for it. ReceiveEager reports whether it took the message (it has
// copied data out; data is valid only during the call); false means
// nothing changed, and the transport then delivers the message as a packet
// through Receive, before anything that arrived after it. Transports that
// keep arrivals in their own memory (rdma/shm) try it first. Like Receive,
// it must not block; and it must not Send, Put, Get or Progress through the
// transport that calls it (the transport may hold a lock of its ring), though
// it may Deregister.
type EagerReceiver interface {
	Receiver
	ReceiveEager(w int, h EagerHeader, data []byte) bool
}

// EagerRunReceiver is implemented by EagerReceivers that can also take a
// run of eager messages with one envelope at once (the endpoint: it
// matches them under one lock). A transport that finds several such
// messages in a row for one destination (rdma/shm, draining its ring)
// offers them together. ReceiveEagerRun returns how many it took, n, from
// the start of data, in order, as n calls of ReceiveEager taking each
// would have; the transport delivers the others as before (ReceiveEager,
// or a packet through Receive), before anything that arrived after them.
// Each data[i] is valid only during the call; the rules of ReceiveEager
// apply.
type EagerRunReceiver interface {
	EagerReceiver
	ReceiveEagerRun(w int, h EagerHeader, data [][]byte) int
}

// Mover is implemented by transports that move a large message's bytes
// with a rendezvous of their own (rdma/mpi: the production MPI's), so that
// the endpoint layer's rendezvous needs one packet, the RTS, instead of an
// RTS, an RTR, a Put and a Done. SendMoved sends the RTS pk to `to`, as
// Send does (the transport owns pk on success), and starts moving data
// after it; it stamps pk.RecvID, which an RTS leaves unused, with the
// token the receiver hands to TakeMoved. It never waits: it returns
// ErrAgain, having sent nothing, when the transport cannot take the
// message now or cannot move it to that destination, and the caller then
// sends its RTS the other way. data must not change until done.PutDone,
// called once from a later Progress (or from Close, with ErrClosed), says
// the bytes are taken (received, or buffered by the transport: the send
// completes as a standard-mode send may).
//
// TakeMoved receives the size bytes that the RTS carrying token, from
// the endpoint from, announced into buf: all of them if buf holds them,
// else the first len(buf) (the rest is received and dropped). done.PutDone
// is called once, from a later Progress or from Close, when they are in.
// The receiver must take every moved message it is sent, truncated or not:
// the sender's transfer ends only then. Neither call may be made from
// inside ReceiveEager.
//
// Moves reports whether SendMoved moves messages at all (rdma/mpi: not
// with Config.NoMove, nor when MPI_TAG_UB leaves no room for their tags).
// While it does, a receiver does not offer its buffer to a sender behind
// this transport (the endpoint layer's offers, which save the RTS and RTR
// of transports without a rendezvous of their own): a sender that has an
// offer Puts into it, the slower way here.
type Mover interface {
	SendMoved(w int, to Addr, pk *packet.Packet, data []byte, done PutDone) error
	TakeMoved(w int, from Addr, token uint64, buf []byte, size int, done PutDone) error
	Moves() bool
}

// MoverRouter is implemented by transports that hand each destination to
// another transport (rdma/route): MoverVia returns the Mover of the
// backend that reaches a, nil if that backend is none.
type MoverRouter interface {
	MoverVia(a Addr) Mover
}

// Local is implemented by transports that can reach some endpoints
// directly because they live in this process (inproc: all of them;
// route: those of this process). Peer returns the Receiver bound at a if a
// is such an endpoint, else an error (ErrNoPeer, or ErrRemote for an
// endpoint of another process): a sender then hands data to it directly,
// filling a receive that is already posted at the peer without making a
// packet. Locality is decided per address, not per transport.
type Local interface {
	Peer(a Addr) (Receiver, error)
}

// PutStarter is implemented by transports that can have many Puts in
// flight at once (rdma/mpi, rdma/shm, and rdma/route over them): StartPut
// starts a Put and returns without waiting for it, and the transport
// reports its end later, from Progress. The endpoint layer's rendezvous uses it when the
// transport offers it, so that a window of large sends moves as many
// concurrent transfers instead of one at a time, each waited for inside
// the delivery of its RTR; it calls Put on transports without it.
type PutStarter interface {
	// StartPut starts what Put(owner, r, off, src) does and returns at
	// once; it never waits for the owner, nor for the bytes to move.
	//
	// With pending false the Put is over already (an owner this
	// transport reaches directly, or a failure found before anything
	// started): err is its result, and done is never called. With
	// pending true (err is then nil) the transport reads src until it
	// calls done.PutDone, exactly once, with the Put's result: from a
	// later Progress of this transport (w is that caller's worker
	// index), or from Close, with ErrClosed and packet.NoWorker, for
	// the Puts it ends. src must not change until then. As with Put, the
	// bytes are visible to the owner once the owner is told so by a
	// packet sent after PutDone was called.
	StartPut(owner Addr, r Region, off uint64, src []byte, done PutDone) (pending bool, err error)
}

// PutDone is told the end of a Put that PutStarter.StartPut started. Like
// a Receiver, PutDone must not block; it may Send.
type PutDone interface {
	PutDone(w int, err error)
}

// Sleeper is implemented by transports whose arrivals come from other
// processes (rdma/shm), so that an idle process need not burn a core
// polling. A progress loop spins on Progress for a bounded time and then
// calls Sleep.
type Sleeper interface {
	// Sleep blocks until an arrival may be pending for this process, or
	// until max has passed, whichever comes first; it may return early
	// for no reason, so the caller polls Progress after it either way.
	// It parks the calling goroutine's OS thread in the kernel (a futex),
	// so it must not be called from a fiber, and a worker calls it only
	// when it has nothing else to run.
	Sleep(max time.Duration)
}

// Alarm is implemented by transports whose peers can wake a sleeping
// thread of this process through a futex word in memory they share
// (rdma/shm): Arm reads the word, announces a sleeper and reports whether
// an arrival may be pending already; a peer that sends after Arm either is
// seen by that check or sees the sleeper and changes the word and wakes
// it. Every Arm is followed by one Disarm. Its method set is
// fiber.Alarm's: the endpoint layer hands it to the fiber scheduler, whose
// idle workers then sleep until an arrival or a local wake-up, whichever
// comes first, instead of polling.
type Alarm interface {
	Arm() (word *atomic.Uint32, val uint32, ok bool)
	Disarm()
}

// AlarmSource is implemented by transports that may have an Alarm to
// offer (rdma/route: its backend's, when exactly one backend carries the
// other processes' traffic and has one). Alarm returns nil when there is
// none.
type AlarmSource interface {
	Alarm() Alarm
}

// Errors of transports.
var (
	// ErrClosed is returned by every call after Close.
	ErrClosed = errors.New("rdma: transport closed")
	// ErrNoPeer is returned by Send, Put and Get for an address nobody
	// bound.
	ErrNoPeer = errors.New("rdma: no endpoint at that address")
	// ErrBound is returned by Bind for an address bound already.
	ErrBound = errors.New("rdma: address already bound")
	// ErrNoRegion is returned for a region that is not (or no longer)
	// registered.
	ErrNoRegion = errors.New("rdma: region not registered")
	// ErrOutOfBounds is returned by Put and Get for an access past the
	// end of the region.
	ErrOutOfBounds = errors.New("rdma: access outside the registered region")
	// ErrAgain is returned by Send when the queue to the peer is full: the
	// caller keeps the packet and sends it again after Progress.
	ErrAgain = errors.New("rdma: queue to peer full, try again")
	// ErrRemote is returned by Local.Peer for an endpoint of another
	// process.
	ErrRemote = errors.New("rdma: endpoint lives in another process")
	// ErrBadRegion is returned by ParseRegion for a malformed region.
	ErrBadRegion = errors.New("rdma: malformed region")
)

// BoundsError reports a Put or Get outside a region.
type BoundsError struct {
	Region Region
	Off    uint64
	Len    int
}

// Error describes the access.
func (e *BoundsError) Error() string {
	return fmt.Sprintf("rdma: access of %d bytes at offset %d outside %v", e.Len, e.Off, e.Region)
}

// Is makes errors.Is(err, ErrOutOfBounds) true.
func (e *BoundsError) Is(target error) bool { return target == ErrOutOfBounds }

// CheckBounds returns a *BoundsError if n bytes at off do not fit in r
// (a negative n never fits).
func CheckBounds(r Region, off uint64, n int) error {
	if n < 0 || off > r.Len || uint64(n) > r.Len-off {
		return &BoundsError{Region: r, Off: off, Len: n}
	}
	return nil
}
