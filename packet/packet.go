package packet

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/fibermpi/fibermpi/internal/invariants"
)

// CacheLine is the size in bytes of the header of a packet and the unit
// in which payload sizes are given: a payload starts on a cache line
// boundary and its size is a whole number of lines.
const CacheLine = 64

// Kind says what a packet carries. The values below are the ones the
// fibermpi protocols use; a layer above may define its own kinds from
// KindUser upwards.
type Kind uint8

const (
	// KindNone is the kind of a packet fresh from Get: nobody has said
	// yet what it carries.
	KindNone Kind = iota
	// KindEager carries a whole message in its payload (eager protocol).
	KindEager
	// KindRTS is a rendezvous request-to-send: the sender announces a
	// message too large for a packet; Size holds its length and SendID
	// the sender's request.
	KindRTS
	// KindRTR is a rendezvous ready-to-receive: the receiver answers an
	// RTS (SendID) with its request (RecvID) and, in the payload, the
	// registered buffer for the sender to Put into (its encoding is the
	// transport layer's: rdma.Region).
	KindRTR
	// KindDone tells the receiver that the rendezvous Put into its buffer
	// has completed; RecvID names the receiver's request.
	KindDone
	// KindControl is any other control message of the runtime.
	KindControl

	// KindUser is the first kind free for layers above this package.
	KindUser Kind = 64
)

var kindNames = [...]string{
	KindNone:    "none",
	KindEager:   "eager",
	KindRTS:     "rts",
	KindRTR:     "rtr",
	KindDone:    "done",
	KindControl: "control",
}

// String returns the name of a kind, or "user+N" for kinds from KindUser.
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	if k >= KindUser {
		return fmt.Sprintf("user+%d", k-KindUser)
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Special values of Packet.link.
const (
	// linkNil ends the shared stack's list; it is also the link of a
	// free packet that sits in a private deque.
	linkNil = ^uint32(0)
	// linkInUse marks a packet held by a caller of Get (kept only in
	// builds with the invariants tag).
	linkInUse = ^uint32(0) - 1
	// maxPackets is the most packets one pool can have: indices must
	// stay below the two special link values.
	maxPackets = 1 << 24
)

// Packet is a fixed-size buffer that carries one eager message or one
// control message: a 64-byte header (one cache line, exactly) followed in
// memory by a payload of Pool.PayloadSize bytes. Packets are carved from
// one slab per pool when the pool is made; none is allocated afterwards
// (unless the pool's overflow policy says so).
//
// Packets are runtime-internal. They are never handed to end users: the
// layers above copy user data into and out of the payload, and no slice
// returned by Payload or Data may outlive the packet's return to the pool.
//
// Ownership: a packet belongs to exactly one party at a time — the pool
// (in a private deque or the shared pool), or the one goroutine or fiber
// that got it from Get, or whoever it was handed to since (a transport, the
// matching table, the progress engine). Only the owner reads or writes the
// header and payload; handing a packet on must be a synchronising
// operation (a channel send, an atomic publish, a lock). After Put the
// packet and every slice of it are dead to the caller. In builds with the
// invariants tag, Put of a packet that is already free panics, the
// accessors panic on a free packet, and a write into a free packet's header
// or payload is detected by the next Get that returns it.
//
// The exported header fields are plain data for the protocols above; the
// pool neither reads nor interprets them, and Get returns a packet with
// all of them zero.
type Packet struct {
	// Context is the context id of the communicator the message is for.
	Context uint32
	// Source is the sending rank in that communicator.
	Source int32
	// Tag is the message tag.
	Tag int32
	// From is the job-wide address (rdma.Addr) of the endpoint that sent
	// the packet: every kind carries it.
	From uint32
	// SendID names the sender's request in a rendezvous: set by RTS, and
	// echoed by the receiver's RTR so the sender finds its request.
	SendID uint64
	// RecvID names the receiver's request in a rendezvous: set by RTR (and
	// by the protocol's offers), echoed by Done (and by the control
	// packets about an offer).
	RecvID uint64
	// Size is the length in bytes of the message a rendezvous moves: the
	// message an RTS announces, or the one a Done reports put.
	Size uint64
	// length is the number of payload bytes in use (Len, SetLen).
	length uint32
	// Count is a packet counter of the protocol above (the receiver's
	// count of arrivals from the sender, carried by an offer).
	Count uint32

	// index is the packet's number in its pool; written once, by the
	// pool, before the packet is first published.
	index uint32
	// link is the next packet's index while the packet is in the shared
	// stack (written by Push before the CAS that publishes the packet,
	// read by Pop before the CAS that takes it; a stale Pop may read it
	// while someone else owns the packet, which is why it is atomic).
	// In builds with the invariants tag it holds linkInUse while a caller
	// owns the packet (stored by Get, swapped back by Put).
	link atomic.Uint32
	// lines is the payload capacity in cache lines; written once.
	lines uint16

	// Kind says what the packet carries.
	Kind Kind
	// Flags are boolean properties of the packet, defined per Kind by the
	// protocol above (e.g. "the transfer failed" on a Done). A subtype is
	// a Kind, not a flag.
	Flags uint8
}

// Cap returns the payload capacity in bytes, the same for every packet of
// a pool.
func (p *Packet) Cap() int { return int(p.lines) * CacheLine }

// Len returns the number of payload bytes in use.
func (p *Packet) Len() int {
	if invariants.Enabled {
		p.checkOwned("Len")
	}
	return int(p.length)
}

// SetLen sets the number of payload bytes in use. It panics if n is
// negative or larger than Cap, as slicing beyond capacity would.
func (p *Packet) SetLen(n int) {
	if invariants.Enabled {
		p.checkOwned("SetLen")
	}
	if uint(n) > uint(p.Cap()) {
		panic(fmt.Sprintf("packet: SetLen(%d) out of range [0, %d]", n, p.Cap()))
	}
	p.length = uint32(n)
}

// Payload returns the whole payload, Cap bytes, whatever Len says. The
// slice aliases the packet: it is valid only while the caller owns the
// packet.
func (p *Packet) Payload() []byte {
	if invariants.Enabled {
		p.checkOwned("Payload")
	}
	// Safety: the payload is the p.lines cache lines that follow the
	// header in the same slab allocation (see slab.go), so the pointer
	// and the length stay inside that one object; packets hold no Go
	// pointers, so viewing those bytes as []byte hides nothing from the GC.
	return unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(p), CacheLine)), p.Cap())
}

// Data returns the payload bytes in use, Payload()[:Len()]. It is valid
// only while the caller owns the packet.
func (p *Packet) Data() []byte {
	return p.Payload()[:p.length]
}

// SetData copies b into the payload and sets Len to len(b). If b is longer
// than Cap it copies nothing and returns a *LengthError (errors.Is
// ErrTooLong).
func (p *Packet) SetData(b []byte) error {
	if len(b) > p.Cap() {
		return &LengthError{Len: len(b), Cap: p.Cap()}
	}
	copy(p.Payload(), b)
	p.length = uint32(len(b))
	return nil
}

// clearHeader zeroes the exported header fields and the length.
func (p *Packet) clearHeader() {
	p.Context = 0
	p.Source = 0
	p.Tag = 0
	p.From = 0
	p.SendID = 0
	p.RecvID = 0
	p.Size = 0
	p.length = 0
	p.Count = 0
	p.Kind = KindNone
	p.Flags = 0
}

// checkOwned panics if p is not owned by a caller of Get. Only called
// under invariants.Enabled.
func (p *Packet) checkOwned(op string) {
	if p.link.Load() != linkInUse {
		invariants.Failf("packet: %s on packet %d after Put (use after return)", op, p.index)
	}
}

// HeaderWireSize is the size in bytes of the header as EncodeHeader writes
// it for a transport that carries packets as bytes.
const HeaderWireSize = 56

// EncodeHeader writes the header — every exported field and the length —
// into b[:HeaderWireSize] in a fixed little-endian layout, and returns
// HeaderWireSize. It panics if b is shorter, as a slice index would. The
// pool's own bookkeeping is not part of it.
func (p *Packet) EncodeHeader(b []byte) int {
	_ = b[HeaderWireSize-1]
	le := binary.LittleEndian
	le.PutUint32(b[0:], p.Context)
	le.PutUint32(b[4:], uint32(p.Source))
	le.PutUint32(b[8:], uint32(p.Tag))
	le.PutUint32(b[12:], p.length)
	le.PutUint32(b[16:], p.From)
	le.PutUint32(b[20:], p.Count)
	le.PutUint64(b[24:], p.SendID)
	le.PutUint64(b[32:], p.RecvID)
	le.PutUint64(b[40:], p.Size)
	b[48] = byte(p.Kind)
	b[49] = p.Flags
	clear(b[50:HeaderWireSize])
	return HeaderWireSize
}

// DecodeHeader sets the header from b as EncodeHeader wrote it. It returns
// ErrShortHeader (wrapped) if b is shorter than HeaderWireSize and a
// *LengthError if the encoded length exceeds this packet's Cap; in either
// case the header is left unchanged. The payload is not touched.
func (p *Packet) DecodeHeader(b []byte) error {
	if len(b) < HeaderWireSize {
		return fmt.Errorf("%w: %d bytes, want %d", ErrShortHeader, len(b), HeaderWireSize)
	}
	le := binary.LittleEndian
	n := le.Uint32(b[12:])
	if uint64(n) > uint64(p.Cap()) {
		return &LengthError{Len: int(n), Cap: p.Cap()}
	}
	p.Context = le.Uint32(b[0:])
	p.Source = int32(le.Uint32(b[4:]))
	p.Tag = int32(le.Uint32(b[8:]))
	p.length = n
	p.From = le.Uint32(b[16:])
	p.Count = le.Uint32(b[20:])
	p.SendID = le.Uint64(b[24:])
	p.RecvID = le.Uint64(b[32:])
	p.Size = le.Uint64(b[40:])
	p.Kind = Kind(b[48])
	p.Flags = b[49]
	return nil
}

// EncodeEager writes into b[:HeaderWireSize] the wire header of an eager
// packet (Kind KindEager) with the given context, source, tag, sender
// address and payload length, every other field zero: the bytes
// EncodeHeader writes for such a packet. A transport uses it to send an
// eager message straight from the caller's buffer, without a packet. It
// panics if b is shorter, as a slice index would.
func EncodeEager(b []byte, ctx uint32, src, tag int32, from uint32, n int) {
	_ = b[HeaderWireSize-1]
	le := binary.LittleEndian
	le.PutUint32(b[0:], ctx)
	le.PutUint32(b[4:], uint32(src))
	le.PutUint32(b[8:], uint32(tag))
	le.PutUint32(b[12:], uint32(n))
	le.PutUint32(b[16:], from)
	clear(b[20:48])
	b[48] = byte(KindEager)
	clear(b[49:HeaderWireSize])
}

// PeekEager reads the fields EncodeEager writes from a wire header in b
// (as EncodeHeader or EncodeEager wrote it). ok is false, and the other
// results zero, when b is shorter than HeaderWireSize or the header is not
// an eager packet's; the other fields of the header are not checked.
func PeekEager(b []byte) (ctx uint32, src, tag int32, from uint32, n int, ok bool) {
	if len(b) < HeaderWireSize || Kind(b[48]) != KindEager {
		return 0, 0, 0, 0, 0, false
	}
	le := binary.LittleEndian
	return le.Uint32(b[0:]), int32(le.Uint32(b[4:])), int32(le.Uint32(b[8:])), le.Uint32(b[16:]), int(le.Uint32(b[12:])), true
}

// SameEager reports whether the wire headers a and b (as EncodeEager or
// EncodeHeader wrote them) are both eager packets with the same context,
// source, tag and sender; their lengths may differ.
func SameEager(a, b *[HeaderWireSize]byte) bool {
	le := binary.LittleEndian
	return a[48] == byte(KindEager) && b[48] == byte(KindEager) &&
		le.Uint64(a[0:]) == le.Uint64(b[0:]) && // context, source
		le.Uint32(a[8:]) == le.Uint32(b[8:]) && // tag
		le.Uint32(a[16:]) == le.Uint32(b[16:]) // sender
}

// CopyHeader copies every exported header field and the length of src
// into p, for moving a message from one packet into another (e.g. from a
// packet of one pool into one of another). It panics with a *LengthError
// if src's length exceeds p's capacity.
func (p *Packet) CopyHeader(src *Packet) {
	if int(src.length) > p.Cap() {
		panic(&LengthError{Len: int(src.length), Cap: p.Cap()})
	}
	p.Context = src.Context
	p.Source = src.Source
	p.Tag = src.Tag
	p.length = src.length
	p.From = src.From
	p.Count = src.Count
	p.SendID = src.SendID
	p.RecvID = src.RecvID
	p.Size = src.Size
	p.Kind = src.Kind
	p.Flags = src.Flags
}

// String describes the header, for debugging.
func (p *Packet) String() string {
	return fmt.Sprintf("packet#%d{%s ctx=%d src=%d tag=%d from=%d len=%d/%d send=%d recv=%d size=%d count=%d flags=%#x}",
		p.index, p.Kind, p.Context, p.Source, p.Tag, p.From, p.length, p.Cap(),
		p.SendID, p.RecvID, p.Size, p.Count, p.Flags)
}
