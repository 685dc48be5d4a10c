package packet

import (
	"unsafe"

	"github.com/fibermpi/fibermpi/internal/invariants"
)

// line is one cache line of a slab. Slabs are made of lines so that the
// memory holds no pointers (the GC never scans it) and is 8-byte aligned.
type line [CacheLine]byte

// slab is one allocation holding n packets back to back, each a header
// line followed by its payload lines:
//
//	base ─► ┌────────┬──────────────── payload ───────────────┐┌────────┬──
//	        │ header │ line │ line │ ... │ line (lines of them) ││ header │ ...
//	        └────────┴──────────────────────────────────────────┘└────────┴──
//	        ◄──────────────────── stride bytes ────────────────►
type slab struct {
	mem  []line         // keeps the allocation alive
	base unsafe.Pointer // first header, aligned to CacheLine
}

// newSlab allocates n packets with payloads of lines cache lines each,
// numbered first, first+1, ..., and initialises their pool fields.
func newSlab(n int, lines int, first uint32) *slab {
	per := 1 + lines
	mem := make([]line, n*per+1) // one spare line for alignment
	start := unsafe.Pointer(&mem[0])
	// Safety: the offset is below CacheLine and mem has one spare line,
	// so base and every packet after it stay inside mem.
	base := unsafe.Add(start, (CacheLine-uintptr(start)%CacheLine)%CacheLine)
	s := &slab{mem: mem, base: base}
	stride := uintptr(per) * CacheLine
	for i := range n {
		p := s.at(uint32(i), stride)
		p.index = first + uint32(i)
		p.lines = uint16(lines)
		p.link.Store(linkNil)
		if invariants.Enabled {
			poison(p)
		}
	}
	return s
}

// at returns packet number i (counted from this slab's first) given the
// pool's stride.
func (s *slab) at(i uint32, stride uintptr) *Packet {
	// Safety: callers pass i below the slab's packet count, so the
	// header lies inside mem and is CacheLine-aligned; Packet is exactly
	// one line of plain integers, so viewing the line as a Packet is a
	// conversion between pointer-free types of equal size.
	return (*Packet)(unsafe.Add(s.base, uintptr(i)*stride))
}
