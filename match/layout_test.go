package match

import (
	"runtime"
	"testing"
	"unsafe"
)

func TestLayout(t *testing.T) {
	var b bucket
	var p pair
	var c core
	checks := []struct {
		name      string
		got, want uintptr
	}{
		{"Sizeof(entry)", unsafe.Sizeof(entry{}), entrySize},
		{"Sizeof(bucket)", unsafe.Sizeof(b), bucketSize},
		{"Offsetof(bucket.ents)", unsafe.Offsetof(b.ents), bucketSize - slots*entrySize},
		{"Sizeof(side)", unsafe.Sizeof(side{}), sideSize},
		{"Sizeof(pair)", unsafe.Sizeof(p), pairSize},
		{"Offsetof(pair.s)", unsafe.Offsetof(p.s), cacheLine},
		{"Sizeof(stripe)", unsafe.Sizeof(stripe{}), cacheLine},
		{"Sizeof(Key)", unsafe.Sizeof(Key{}), 8},
		// setHead writes an atomic.Pointer's storage as a plain pointer.
		{"Sizeof(atomic.Pointer[opaque])", unsafe.Sizeof(b.ents[0].val), unsafe.Sizeof((*opaque)(nil))},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
	// The hot, written counters must not share a line with the read-only
	// header or with each other's neighbours.
	if d := unsafe.Offsetof(c.wild) - unsafe.Offsetof(c.cfg); d < cacheLine {
		t.Errorf("wild is %d bytes after cfg, want a cache line apart", d)
	}
	if d := unsafe.Offsetof(c.wmu) - unsafe.Offsetof(c.epoch); d < cacheLine {
		t.Errorf("wmu is %d bytes after epoch, want a cache line apart", d)
	}
	if d := unsafe.Offsetof(c.freeMu) - unsafe.Offsetof(c.wtail); d < cacheLine {
		t.Errorf("freeMu is %d bytes after wtail, want a cache line apart", d)
	}
	if d := unsafe.Offsetof(c.arrivals) - unsafe.Offsetof(c.free); d < cacheLine {
		t.Errorf("arrivals are %d bytes after free, want a cache line apart", d)
	}
}

// TestPlainHead checks that setHead's plain store is what the atomic Load
// of the same entry reads.
func TestPlainHead(t *testing.T) {
	var c core
	var e entry
	x := new(int)
	v := (*opaque)(unsafe.Pointer(x))
	c.setHead(&e, v)
	if e.val.Load() != v {
		t.Fatal("plain store not seen by Load")
	}
	c.setHead(&e, nil)
	if e.val.Load() != nil {
		t.Fatal("plain nil store not seen by Load")
	}
	c.seed.Store(true)
	c.setHead(&e, v)
	if !e.val.CompareAndSwap(v, nil) {
		t.Fatal("atomic store not seen by CompareAndSwap")
	}
}

// TestAlignment checks that buckets start on a cache line for every table
// size from minBuckets up, in the main array and in overflow buckets.
// (Smaller tables are allowed to straddle lines: see minBuckets.)
func TestAlignment(t *testing.T) {
	for _, exp := range []int{minBuckets, 1000, 5000, 1 << 16} {
		tb, err := New[int, int](Config{Expected: exp})
		if err != nil {
			t.Fatal(err)
		}
		if a := uintptr(unsafe.Pointer(&tb.c.pairs[0])); a%pairSize != 0 {
			t.Errorf("Expected=%d: pairs at %#x, not %d-byte aligned", exp, a, pairSize)
		}
	}
	tb := newCollide[int, int](Config{})
	v := 0
	for i := range 3 * 300 { // 300 buckets: more than one slab
		tb.Arrive(MustKey(0, int32(i), 0), &v)
	}
	n := 0
	for q := &tb.c.pairs[0]; q != nil; q = q.b.ovf {
		if a := uintptr(unsafe.Pointer(q)); a%pairSize != 0 {
			t.Fatalf("overflow bucket %d at %#x, not %d-byte aligned", n, a, pairSize)
		}
		n++
	}
	if n != 300 {
		t.Fatalf("chain of %d buckets, want 300", n)
	}
}

// TestSmallTableMemory checks that a small table stays small: an endpoint
// among very many must not cost tens of kilobytes.
func TestSmallTableMemory(t *testing.T) {
	var before, after runtime.MemStats
	const n = 1000
	tables := make([]*Table[int, int], n)
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range tables {
		tb, err := New[int, int](Config{Expected: 8})
		if err != nil {
			t.Fatal(err)
		}
		tables[i] = tb
	}
	runtime.ReadMemStats(&after)
	per := (after.TotalAlloc - before.TotalAlloc) / n
	if per > 4096 {
		t.Fatalf("a table for 8 keys takes %d bytes", per)
	}
	// And it works, overflow included.
	v := 0
	tb := tables[0]
	for i := range 100 {
		if _, ok, err := tb.Arrive(MustKey(0, int32(i), 0), &v); ok || err != nil {
			t.Fatal(ok, err)
		}
	}
	for i := range 100 {
		if m, _, ok, err := tb.Post(MustKey(0, int32(i), 0), &v); !ok || err != nil || m != &v {
			t.Fatal(i, ok, err)
		}
	}
	runtime.KeepAlive(tables)
}
