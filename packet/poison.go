package packet

import (
	"unsafe"

	"github.com/fibermpi/fibermpi/internal/invariants"
)

// Poisoning, in builds with the invariants tag only: Put fills a free
// packet's header fields and payload with poisonByte, and Get checks the
// pattern is intact before handing the packet out, so a write through a
// stale *Packet or a stale payload slice after Put is reported.

const (
	poisonByte = 0xDB
	poison32   = 0xDBDBDBDB
	poison64   = 0xDBDBDBDBDBDBDBDB
)

// rawPayload is Payload without the ownership check.
func (p *Packet) rawPayload() []byte {
	// Safety: as in Payload.
	return unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(p), CacheLine)), p.Cap())
}

func poison(p *Packet) {
	p.Context = poison32
	p.Source = int32(poison32 - 1<<32)
	p.Tag = int32(poison32 - 1<<32)
	p.length = poison32
	p.From = poison32
	p.Count = poison32
	p.SendID = poison64
	p.RecvID = poison64
	p.Size = poison64
	p.Kind = poisonByte
	p.Flags = poisonByte
	b := p.rawPayload()
	for i := range b {
		b[i] = poisonByte
	}
}

// checkPoison reports a packet that was written while free (newSlab
// poisons every packet it makes).
func checkPoison(p *Packet) {
	if p.length != poison32 || p.Context != poison32 || uint32(p.Source) != poison32 || uint32(p.Tag) != poison32 ||
		p.From != poison32 || p.Count != poison32 || p.SendID != poison64 ||
		p.RecvID != poison64 || p.Size != poison64 || p.Kind != poisonByte ||
		p.Flags != poisonByte {
		invariants.Failf("packet: header of packet %d written after Put", p.index)
	}
	for i, c := range p.rawPayload() {
		if c != poisonByte {
			invariants.Failf("packet: payload byte %d of packet %d written after Put", i, p.index)
		}
	}
}
