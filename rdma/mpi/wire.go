//go:build mpi

package mpi

import (
	"encoding/binary"

	"github.com/fibermpi/fibermpi/packet"
)

// Every message on a transport's control tag starts with a 64-byte head
// whose first byte is its kind. A packet is its head (kind, destination
// address), the packet's wire header (packet.EncodeHeader) and its
// payload; every other kind is the head alone:
//
//	byte  0      kind
//	      1..4   the destination transport's generation (24 bits)
//	      4..8   from: the sending process (every kind but packets);
//	             for a packet, the destination address
//	      8..12  addr: the endpoint concerned (bound, unbound, owner)
//	      12..16 code: the answer's status
//	      16..24 id: the request an answer is for
//	      24..28 key, 32..40 off, 40..48 n, 48..56 tag: an access
//
// A packet longer than Config.Whole travels as a kPacketFirst (a kPacket's
// head and the first Whole−64 bytes of the payload) and kPacketMore
// messages (kind and generation, then up to Whole−64 more bytes), back to
// back: MPI keeps the order of one source and tag, so the receiver joins
// the parts of each source in turn (Transport.assemble).
//
// Bytes of a transfer travel as MPI messages of their own, not on the
// control tag: a Put's (kPut) and a Get's answer on the receiver's data
// tag, a started Put's (kPutAsk) on the owner's put tag, each after
// kPutGo.
const headSize = 64

// Kinds of messages.
const (
	kPacket      = 1 + iota // a packet for an endpoint
	kBind                   // addr is bound now; answer kAck
	kUnbind                 // addr is not bound any more; answer kAck
	kAck                    // the answer to kBind, kUnbind
	kPut                    // n bytes for a region follow on the data tag; answer kPutAck once placed
	kPutAck                 // code
	kGet                    // send n bytes of a region; answer kGetAck, then (if ok) the bytes on the data tag
	kGetAck                 // code
	kBye                    // the sender closed its transport
	kPutAsk                 // a started Put: answer kPutGo once the receive is posted, kPutAck once the bytes are in
	kPutGo                  // the receive of kPutAsk id's bytes is posted: send them on the put tag
	kPacketFirst            // a kPacket longer than Config.Whole: its head and the first bytes of its payload
	kPacketMore             // the next bytes of the payload of the kPacketFirst before it from the same process
)

// Status codes of answers.
const (
	stOK       = 0
	stNoPeer   = 1 // the owner address is not bound
	stNoRegion = 2 // no such registration
	stBounds   = 3 // the access is outside the registration
)

// pktHead is the packet's own header, after the 8 bytes of the head.
const pktHead = 8

// ctl is a decoded head of a control message.
type ctl struct {
	kind byte
	from uint32
	addr uint32
	code uint32
	id   uint64
	key  uint32
	off  uint64
	n    uint64
	tag  uint64
}

// putGen writes the destination's generation into bytes 1..3.
func putGen(b *[headSize]byte, gen uint32) {
	b[1], b[2], b[3] = byte(gen), byte(gen>>8), byte(gen>>16)
}

// genOf reads the generation a message is for.
func genOf(b []byte) uint32 { return uint32(b[1]) | uint32(b[2])<<8 | uint32(b[3])<<16 }

func (c *ctl) encode(b *[headSize]byte, gen uint32) {
	le := binary.LittleEndian
	*b = [headSize]byte{}
	b[0] = c.kind
	putGen(b, gen)
	le.PutUint32(b[4:], c.from)
	le.PutUint32(b[8:], c.addr)
	le.PutUint32(b[12:], c.code)
	le.PutUint64(b[16:], c.id)
	le.PutUint32(b[24:], c.key)
	le.PutUint64(b[32:], c.off)
	le.PutUint64(b[40:], c.n)
	le.PutUint64(b[48:], c.tag)
}

func (c *ctl) decode(b []byte) {
	le := binary.LittleEndian
	c.kind = b[0]
	c.from = le.Uint32(b[4:])
	c.addr = le.Uint32(b[8:])
	c.code = le.Uint32(b[12:])
	c.id = le.Uint64(b[16:])
	c.key = le.Uint32(b[24:])
	c.off = le.Uint64(b[32:])
	c.n = le.Uint64(b[40:])
	c.tag = le.Uint64(b[48:])
}

// payloadLen reads the payload length in a packet message's header (the
// length field of packet.EncodeHeader's layout).
func payloadLen(msg []byte) int { return int(binary.LittleEndian.Uint32(msg[pktHead+12:])) }

// encodePacketHead writes a packet's head for destination to.
func encodePacketHead(b *[headSize]byte, gen, to uint32, pk *packet.Packet) {
	b[0] = kPacket
	putGen(b, gen)
	binary.LittleEndian.PutUint32(b[4:], to)
	pk.EncodeHeader(b[pktHead:])
}
