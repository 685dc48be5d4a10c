package datatype

import (
	"testing"
	"unsafe"
)

// packer is one contender in BenchmarkPack: it packs the red cells of one
// grid row (every other float32 of a row) into dst.
type packer interface {
	pack(dst, src []byte) int
}

// sorRow is the row length of Snir 2009 §4.3's red-black SOR: N = 10,000
// cells, of which every other one (N/2 = 5,000 float32, 20,000 bytes) is
// sent to a neighbour.
const sorRow = 10000

// vectorPacker packs with Pack and the Vector layout, as a send would.
type vectorPacker struct{ t Type }

func (p vectorPacker) pack(dst, src []byte) int {
	n, err := Pack(dst, src, 1, p.t)
	if err != nil {
		panic(err)
	}
	return n
}

// naivePacker packs element by element from the layout's typemap (the
// offset of every element, precomputed), one copy per element: the
// straightforward interpreter a datatype engine without compiled runs is.
type naivePacker struct {
	offs []int
	size int
}

func (p naivePacker) pack(dst, src []byte) int {
	n := 0
	for _, o := range p.offs {
		n += copy(dst[n:n+p.size], src[o:o+p.size])
	}
	return n
}

// loopPacker is the typed Go loop a user would write for this one case,
// over []float32: the best a portable scalar loop does.
type loopPacker struct{ n int }

func (p loopPacker) pack(dst, src []byte) int {
	d := unsafe.Slice((*float32)(unsafe.Pointer(&dst[0])), p.n)
	s := unsafe.Slice((*float32)(unsafe.Pointer(&src[0])), 2*p.n-1)
	for i := range d {
		d[i] = s[2*i]
	}
	return 4 * p.n
}

// streamPacker packs with a Packer into 8 KiB packets, as the eager
// protocol does.
type streamPacker struct {
	t      Type
	p      *Packer
	packet []byte
}

func (p streamPacker) pack(dst, src []byte) int {
	if err := p.p.Reset(src, 1, p.t); err != nil {
		panic(err)
	}
	n := 0
	for !p.p.Done() {
		k, _ := p.p.Read(p.packet)
		n += copy(dst[n:], p.packet[:k])
	}
	return n
}

// copyPacker copies the same number of bytes contiguously: the bound.
type copyPacker struct{ n int }

func (p copyPacker) pack(dst, src []byte) int { return copy(dst[:p.n], src[:p.n]) }

func BenchmarkPack(b *testing.B) {
	red, err := Vector(sorRow/2, 1, 2, Float32)
	if err != nil {
		b.Fatal(err)
	}
	var offs []int
	for off, n := range Runs(1, red) {
		for k := 0; k < n; k += 4 {
			offs = append(offs, off+k)
		}
	}
	// Safety (loopPacker): src and dst come from []float32 and []byte
	// allocations that are at least 4-aligned and long enough.
	src := Bytes(make([]float32, sorRow))
	dst := make([]byte, red.Size())
	for _, c := range []struct {
		name string
		p    packer
	}{
		{"vector", vectorPacker{red}},
		{"naive", naivePacker{offs: offs, size: 4}},
		{"typedloop", loopPacker{red.Size() / 4}},
		{"packer8KiB", streamPacker{t: red, p: new(Packer), packet: make([]byte, 8192)}},
		{"copy", copyPacker{red.Size()}},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(red.Size()))
			for b.Loop() {
				if c.p.pack(dst, src) != red.Size() {
					b.Fatal("short pack")
				}
			}
		})
	}
}
