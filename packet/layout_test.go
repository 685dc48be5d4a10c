package packet

import (
	"testing"
	"unsafe"
)

func TestLayout(t *testing.T) {
	if got := unsafe.Sizeof(Packet{}); got != CacheLine {
		t.Fatalf("sizeof(Packet) = %d, want %d", got, CacheLine)
	}
	if got := unsafe.Sizeof(line{}); got != CacheLine {
		t.Fatalf("sizeof(line) = %d, want %d", got, CacheLine)
	}
	// The deque's owner word and its thieves' word live on different
	// cache lines, and deques of neighbouring workers share none.
	var d deque
	if off := unsafe.Offsetof(d.bottom) - unsafe.Offsetof(d.top); off < CacheLine {
		t.Fatalf("deque.bottom is %d bytes after deque.top, want ≥ %d", off, CacheLine)
	}
	if sz := unsafe.Sizeof(d); sz-unsafe.Offsetof(d.bottom) < CacheLine {
		t.Fatalf("deque has %d bytes after bottom, want ≥ %d", sz-unsafe.Offsetof(d.bottom), CacheLine)
	}
	var s stack
	if unsafe.Offsetof(s.head) < CacheLine || unsafe.Sizeof(s)-unsafe.Offsetof(s.head) < CacheLine {
		t.Fatalf("stack head not padded: at %d of %d bytes", unsafe.Offsetof(s.head), unsafe.Sizeof(s))
	}
	var p Pool
	if unsafe.Offsetof(p.shared)-unsafe.Offsetof(p.first) < CacheLine {
		t.Fatal("Pool.shared shares a line with the read-only fields")
	}
}

func TestPacketsAligned(t *testing.T) {
	p, err := New(Config{Workers: 2, PerWorker: 3, Shared: 5, PayloadSize: 192})
	if err != nil {
		t.Fatal(err)
	}
	for i := range uint32(p.n0) {
		pk := p.at(i)
		if uintptr(unsafe.Pointer(pk))%CacheLine != 0 {
			t.Fatalf("packet %d at %p, not cache-line aligned", i, pk)
		}
		if pk.index != i || pk.Cap() != 192 {
			t.Fatalf("packet %d: index %d cap %d", i, pk.index, pk.Cap())
		}
		if i > 0 && uintptr(unsafe.Pointer(pk))-uintptr(unsafe.Pointer(p.at(i-1))) != CacheLine+192 {
			t.Fatalf("packets %d and %d not adjacent", i-1, i)
		}
	}
}
