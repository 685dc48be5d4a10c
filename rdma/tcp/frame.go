package tcp

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/fibermpi/fibermpi/packet"
)

// Frames. Every frame on a connection starts with a kind byte followed by
// a fixed head whose size depends on the kind; frames of kind fPacket,
// fPut and fGetResp are followed by a payload whose length the head
// gives. All integers are little-endian.
//
//	fPacket  dst u32, packet header (packet.HeaderWireSize), payload (length from the header)
//	fBind    seq u64, addr u32           the sender bound addr; answer fAck
//	fUnbind  seq u64, addr u32           the sender unbound addr; answer fAck
//	fAck     seq u64, status u8          the answer to fBind, fUnbind, fPut
//	fPut     seq u64, owner u32, key u32, tag u64, rlen u64, off u64, n u64, then n bytes
//	fGetReq  seq u64, owner u32, key u32, tag u64, rlen u64, off u64, n u64
//	fGetResp seq u64, status u8, n u64, then n bytes
//	fPing    (nothing)                   keeps an idle connection alive
const (
	fPacket byte = 1 + iota
	fBind
	fUnbind
	fAck
	fPut
	fGetReq
	fGetResp
	fPing
)

// Head sizes, the kind byte included.
const (
	packetHead = 1 + 4 + packet.HeaderWireSize
	bindHead   = 1 + 8 + 4
	ackHead    = 1 + 8 + 1
	accessHead = 1 + 8 + 4 + 4 + 8 + 8 + 8 + 8
	respHead   = 1 + 8 + 1 + 8
	pingHead   = 1
)

// Status codes of fAck and fGetResp.
const (
	stOK byte = iota
	stNoPeer
	stNoRegion
	stBounds
	stLimit // bytes beyond what this side accepts
)

// maxAccess bounds the length of one Put or Get a peer may announce.
const maxAccess = 1 << 40

// ErrProtocol is returned (wrapped, in a *PeerError) when a peer sends
// bytes that are not a frame of this protocol: garbage, a frame for an
// endpoint that is not this process's, a payload longer than the job's,
// a truncated frame. The connection is closed and the error logged once.
var ErrProtocol = errors.New("tcp: protocol violation on the wire")

// frame is a decoded frame head.
type frame struct {
	kind   byte
	status byte
	addr   uint32 // fPacket: destination; fBind, fUnbind: the address; fPut, fGetReq: the owner
	key    uint32
	seq    uint64
	tag    uint64
	rlen   uint64
	off    uint64
	n      uint64 // payload bytes that follow the head (fPacket, fPut, fGetResp), or the length asked (fGetReq)
	hdr    []byte // fPacket: the packet header, aliasing the input
}

// headSize returns the size of the head of a frame of kind k, or 0 for an
// unknown kind.
func headSize(k byte) int {
	switch k {
	case fPacket:
		return packetHead
	case fBind, fUnbind:
		return bindHead
	case fAck:
		return ackHead
	case fPut, fGetReq:
		return accessHead
	case fGetResp:
		return respHead
	case fPing:
		return pingHead
	}
	return 0
}

// decodeHead parses the head of a frame at the start of b. It returns the
// head's size; need > 0 means b holds too few bytes and need is how many
// the head takes. maxPayload bounds a packet's payload. An error matches
// ErrProtocol.
func decodeHead(b []byte, maxPayload int) (f frame, size, need int, err error) {
	if len(b) == 0 {
		return f, 0, 1, nil
	}
	f.kind = b[0]
	size = headSize(f.kind)
	if size == 0 {
		return f, 0, 0, fmt.Errorf("%w: unknown frame kind %#x", ErrProtocol, f.kind)
	}
	if len(b) < size {
		return f, 0, size, nil
	}
	le := binary.LittleEndian
	switch f.kind {
	case fPacket:
		f.addr = le.Uint32(b[1:])
		f.hdr = b[5:size]
		f.n = uint64(le.Uint32(f.hdr[12:]))
		if f.n > uint64(maxPayload) {
			return f, 0, 0, fmt.Errorf("%w: a packet of %d payload bytes, the job's payload size is %d", ErrProtocol, f.n, maxPayload)
		}
	case fBind, fUnbind:
		f.seq = le.Uint64(b[1:])
		f.addr = le.Uint32(b[9:])
	case fAck:
		f.seq = le.Uint64(b[1:])
		f.status = b[9]
		if f.status > stLimit {
			return f, 0, 0, fmt.Errorf("%w: status %d", ErrProtocol, f.status)
		}
	case fPut, fGetReq:
		f.seq = le.Uint64(b[1:])
		f.addr = le.Uint32(b[9:])
		f.key = le.Uint32(b[13:])
		f.tag = le.Uint64(b[17:])
		f.rlen = le.Uint64(b[25:])
		f.off = le.Uint64(b[33:])
		f.n = le.Uint64(b[41:])
		if f.n > maxAccess {
			return f, 0, 0, fmt.Errorf("%w: an access of %d bytes", ErrProtocol, f.n)
		}
	case fGetResp:
		f.seq = le.Uint64(b[1:])
		f.status = b[9]
		f.n = le.Uint64(b[10:])
		if f.status > stLimit || f.n > maxAccess || (f.status != stOK && f.n != 0) {
			return f, 0, 0, fmt.Errorf("%w: a Get answer with status %d and %d bytes", ErrProtocol, f.status, f.n)
		}
	}
	return f, size, 0, nil
}

// payloadLen returns how many payload bytes follow f's head.
func (f *frame) payloadLen() uint64 {
	switch f.kind {
	case fPacket, fPut, fGetResp:
		return f.n
	}
	return 0
}

// Encoders: each appends one frame head to b.

func appendPacketHead(b []byte, dst uint32, pk *packet.Packet) []byte {
	b = append(b, fPacket)
	b = binary.LittleEndian.AppendUint32(b, dst)
	n := len(b)
	b = append(b, make([]byte, packet.HeaderWireSize)...)
	pk.EncodeHeader(b[n:])
	return b
}

func appendBind(b []byte, kind byte, seq uint64, addr uint32) []byte {
	b = append(b, kind)
	b = binary.LittleEndian.AppendUint64(b, seq)
	return binary.LittleEndian.AppendUint32(b, addr)
}

func appendAck(b []byte, seq uint64, status byte) []byte {
	b = append(b, fAck)
	b = binary.LittleEndian.AppendUint64(b, seq)
	return append(b, status)
}

func appendAccess(b []byte, kind byte, seq uint64, owner, key uint32, tag, rlen, off, n uint64) []byte {
	le := binary.LittleEndian
	b = append(b, kind)
	b = le.AppendUint64(b, seq)
	b = le.AppendUint32(b, owner)
	b = le.AppendUint32(b, key)
	b = le.AppendUint64(b, tag)
	b = le.AppendUint64(b, rlen)
	b = le.AppendUint64(b, off)
	return le.AppendUint64(b, n)
}

func appendGetResp(b []byte, seq uint64, status byte, n uint64) []byte {
	b = append(b, fGetResp)
	b = binary.LittleEndian.AppendUint64(b, seq)
	b = append(b, status)
	return binary.LittleEndian.AppendUint64(b, n)
}
