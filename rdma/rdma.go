// Package rdma is the seam between fibermpi's endpoints and the ways bytes
// move between them: a Transport posts packets to peers, and writes or reads
// registered memory of a peer one-sidedly (Put, Get) for the rendezvous
// protocol.
//
// Backends live in their own packages: rdma/inproc (every endpoint in one
// process, the embedded default; a Put is a copy). Every backend's tests run
// the conformance suite in rdma/rdmatest.
//
// # Addresses
//
// A transport names endpoints by Addr, a dense index over all endpoints of
// the job (the endpoint's rank in the world communicator). A local endpoint
// binds its Addr with the Receiver that takes its arrivals.
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
// # Memory
//
// Register exposes a local buffer to Put and Get from peers until Deregister;
// the Region it returns is plain data that can travel in a packet header
// (packet.Packet.RemoteAddr, RemoteLen, RemoteKey). A buffer from the Go heap
// must stay reachable, and for a transport whose peer writes it from another
// process, pinned (runtime.Pinner) while registered; the transport does that.
package rdma

import (
	"errors"
	"fmt"

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
	// Bind attaches the local endpoint a, whose arrivals go to r. Binding
	// an address twice is an error (ErrBound).
	Bind(a Addr, r Receiver) error
	// Unbind detaches a; later sends to it fail with ErrNoPeer.
	Unbind(a Addr) error
	// Send hands pk to the transport for delivery to the endpoint to; on
	// success the caller no longer owns pk. On error the caller keeps it.
	// w is the caller's worker index or packet.NoWorker.
	Send(w int, to Addr, pk *packet.Packet) error
	// Register exposes buf for Put and Get by peers until Deregister.
	Register(buf []byte) (Region, error)
	// Deregister withdraws a registration; it fails with ErrNoRegion for
	// a region it does not know.
	Deregister(r Region) error
	// Put copies src into the region r, registered by the endpoint owner,
	// at byte offset off. It returns when src may be reused; the bytes are
	// visible to the owner once the owner is told so by a later packet
	// (packet order makes that safe).
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

// Local is implemented by transports whose endpoints all live in this
// process (inproc). Peer returns the Receiver bound at a, so that a sender
// may hand data to it directly: an endpoint fills a receive that is already
// posted at the peer without making a packet. Transports between processes
// do not implement it.
type Local interface {
	Peer(a Addr) (Receiver, error)
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
