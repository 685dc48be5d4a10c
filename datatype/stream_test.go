package datatype

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
	"unsafe"
)

// TestBytesAliases shows the zero-copy path: the byte view of a []T is the
// slice's own memory, and a contiguous layout's ContiguousView is a window
// on it, so a send of contiguous data copies nothing.
func TestBytesAliases(t *testing.T) {
	xs := []float64{1, 2, 3, 4, 5, 6}
	b := Bytes(xs)
	if len(b) != len(xs)*8 {
		t.Fatalf("len %d", len(b))
	}
	if unsafe.Pointer(&b[0]) != unsafe.Pointer(&xs[0]) {
		t.Fatal("Bytes copied the slice")
	}
	xs[2] = -1
	if !bytes.Equal(b[16:24], Bytes(xs[2:3])) {
		t.Fatal("a write to the slice does not show in the view")
	}
	b[0] ^= 0xff // flip the low byte of xs[0]
	if xs[0] == 1 {
		t.Fatal("a write to the view does not show in the slice")
	}
	if Bytes([]float64{}) != nil {
		t.Fatal("empty view")
	}

	row, _ := Contiguous(4, Float64)
	if !row.IsContiguous() {
		t.Fatal("Contiguous(4, Float64) is not contiguous")
	}
	v, ok, err := ContiguousView(b, 1, row)
	if err != nil || !ok || len(v) != 32 || unsafe.Pointer(&v[0]) != unsafe.Pointer(&xs[0]) {
		t.Fatalf("ContiguousView = %d bytes, %v, %v; want an alias of the slice", len(v), ok, err)
	}
	// A subarray that is a whole row of a matrix is contiguous too.
	mid, _ := Subarray([]int{3, 2}, []int{1, 2}, []int{1, 0}, Float64)
	whole, _ := Resized(mid, 16, 16)
	v, ok, err = ContiguousView(b, 2, whole)
	if err != nil || !ok || unsafe.Pointer(&v[0]) != unsafe.Pointer(&xs[2]) || len(v) != 32 {
		t.Fatalf("ContiguousView of rows = %d bytes, %v, %v", len(v), ok, err)
	}
	red, _ := Vector(3, 1, 2, Float64)
	if _, ok, err := ContiguousView(b, 1, red); ok || err != nil {
		t.Fatalf("strided layout: ok %v err %v", ok, err)
	}
	if _, _, err := ContiguousView(b, 2, row); !errors.Is(err, ErrOutOfBounds) {
		t.Fatalf("view past the end: %v", err)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("Bytes of []*int did not panic")
		}
	}()
	Bytes([]*int{nil})
}

// TestPackerEagerPackets packs a large strided layout into 8 KiB packets,
// as the eager protocol does, and unpacks them on the other side.
func TestPackerEagerPackets(t *testing.T) {
	const n = 10002
	grid := make([]float32, 3*n)
	for i := range grid {
		grid[i] = float32(i)
	}
	red, _ := Vector(n/2, 1, 2, Float32)
	var p Packer
	if err := p.Reset(Bytes(grid[n+1:]), 1, red); err != nil {
		t.Fatal(err)
	}
	recv := make([]float32, n)
	var u Unpacker
	if err := u.Reset(Bytes(recv[1:]), 1, red); err != nil {
		t.Fatal(err)
	}
	packet := make([]byte, 8192)
	packets := 0
	for {
		k, err := p.Read(packet)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if k != len(packet) && !p.Done() {
			t.Fatalf("packet %d holds %d bytes before the end", packets, k)
		}
		if _, err := u.Write(packet[:k]); err != nil {
			t.Fatal(err)
		}
		packets++
	}
	if want := (red.Size() + 8191) / 8192; packets != want || !u.Done() {
		t.Fatalf("%d packets, want %d; done %v", packets, want, u.Done())
	}
	for j := range n {
		want := float32(0)
		if j%2 == 1 {
			want = float32(n + j)
		}
		if recv[j] != want {
			t.Fatalf("cell %d = %v, want %v", j, recv[j], want)
		}
	}
}

// TestPackerSeek resumes packing from arbitrary positions and checks each
// piece against the whole.
func TestPackerSeek(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	inner, _ := Vector(3, 2, 5, Int16)
	ty, _ := Indexed([]int{2, 1, 3}, []int{4, 0, 9}, inner)
	count := 7
	mem := make([]byte, memLenFor(count, ty))
	fill(r, mem)
	all := make([]byte, count*ty.Size())
	if _, err := Pack(all, mem, count, ty); err != nil {
		t.Fatal(err)
	}
	p, err := NewPacker(mem, count, ty)
	if err != nil {
		t.Fatal(err)
	}
	for range 200 {
		pos := r.IntN(p.Len() + 1)
		if err := p.Seek(pos); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, r.IntN(40))
		k, err := p.Read(buf)
		want := min(len(buf), p.Len()-pos)
		if (err != nil && !(err == io.EOF && want == 0)) || k != want {
			t.Fatalf("Read at %d = %d, %v; want %d", pos, k, err, want)
		}
		if !bytes.Equal(buf[:k], all[pos:pos+k]) || p.Pos() != pos+k || p.Remaining() != p.Len()-pos-k {
			t.Fatalf("Read at %d: wrong bytes or position", pos)
		}
	}
	if err := p.Seek(-1); !errors.Is(err, ErrBadArgument) {
		t.Fatalf("Seek(-1): %v", err)
	}
	if err := p.Seek(p.Len() + 1); !errors.Is(err, ErrBadArgument) {
		t.Fatalf("Seek past the end: %v", err)
	}
	u, err := NewUnpacker(make([]byte, len(mem)), count, ty)
	if err != nil {
		t.Fatal(err)
	}
	// Deliver the chunks out of order by seeking: the result is the same.
	const chunk = 11
	for _, start := range r.Perm((len(all) + chunk - 1) / chunk) {
		lo := start * chunk
		if err := u.Seek(lo); err != nil {
			t.Fatal(err)
		}
		if _, err := u.Write(all[lo:min(lo+chunk, len(all))]); err != nil {
			t.Fatal(err)
		}
	}
	back := make([]byte, len(all))
	if _, err := Pack(back, u.mem, count, ty); err != nil || !bytes.Equal(back, all) {
		t.Fatalf("out-of-order unpack lost data: %v", err)
	}
	var zero Packer
	if k, err := zero.Read(make([]byte, 4)); k != 0 || err != io.EOF {
		t.Fatalf("zero Packer Read = %d, %v", k, err)
	}
	var zu Unpacker
	if k, err := zu.Write([]byte{1}); k != 0 || !errors.Is(err, ErrOverrun) {
		t.Fatalf("zero Unpacker Write = %d, %v", k, err)
	}
}

// TestLargeCountsStaySmall checks that compiled layouts do not grow with
// their counts: a million-element vector, a vector of vectors and a 3-D
// subarray compile to a handful of items.
func TestLargeCountsStaySmall(t *testing.T) {
	v, _ := Vector(1_000_000, 1, 2, Float32)
	vv, _ := Vector(1000, 1, 3, v)
	sub, _ := Subarray([]int{500, 600, 700}, []int{400, 300, 200}, []int{1, 2, 3}, Float64)
	idx := make([]int, 100_000)
	for i := range idx {
		idx[i] = 3 * i
	}
	ib, _ := IndexedBlock(2, idx, Float64)
	for _, c := range []struct {
		t     Type
		items int
	}{{v, 1}, {vv, 2}, {sub, 2}, {ib, 1}} {
		if got := treeItems(c.t.d.items); got != c.items {
			t.Errorf("%v compiles to %d items, want %d", c.t, got, c.items)
		}
	}
	if v.Size() != 4_000_000 || v.Extent() != 8_000_000-4 {
		t.Errorf("Vector(1e6): size %d extent %d", v.Size(), v.Extent())
	}
}

// treeItems counts the items in a compiled tree.
func treeItems(items []item) int {
	n := 0
	for i := range items {
		n++
		if items[i].body != nil {
			n += treeItems(items[i].body)
		}
	}
	return n
}

func TestNoAllocations(t *testing.T) {
	red, _ := Vector(5000, 1, 2, Float32)
	nested, _ := Vector(100, 1, 3, red)
	grid := make([]float32, 20000)
	src := Bytes(grid)
	dst := make([]byte, nested.Size())
	packet := make([]byte, 8192)
	var p Packer
	var u Unpacker
	for _, ty := range []Type{red, nested} {
		memLen := memLenFor(1, ty)
		mem := make([]byte, memLen)
		if ty == red {
			mem = src[:memLen]
		}
		cases := map[string]func(){
			"Pack":   func() { _, _ = Pack(dst, mem, 1, ty) },
			"Unpack": func() { _, _ = Unpack(mem, dst, 1, ty) },
			"PackSlice": func() {
				if ty == red {
					_, _ = PackSlice(dst, grid, 1, ty)
				}
			},
			"Packer": func() {
				_ = p.Reset(mem, 1, ty)
				for !p.Done() {
					_, _ = p.Read(packet)
				}
			},
			"Unpacker": func() {
				_ = u.Reset(mem, 1, ty)
				for !u.Done() {
					_, _ = u.Write(packet[:min(len(packet), u.Remaining())])
				}
			},
			"CheckElem": func() { _ = CheckElem[float32](ty) },
		}
		for name, f := range cases {
			if a := testing.AllocsPerRun(20, f); a != 0 {
				t.Errorf("%s of %v allocates %v times", name, ty, a)
			}
		}
	}
}

func TestCount(t *testing.T) {
	red, _ := Vector(3, 1, 2, Float32)
	if c, ok := red.Count(24); c != 2 || !ok {
		t.Errorf("Count(24) = %d, %v", c, ok)
	}
	if c, ok := red.Count(25); c != 2 || ok {
		t.Errorf("Count(25) = %d, %v", c, ok)
	}
	empty, _ := Contiguous(0, Float32)
	if c, ok := empty.Count(0); c != 0 || !ok {
		t.Errorf("empty Count(0) = %d, %v", c, ok)
	}
	if n, err := PackedSize(3, red); n != 36 || err != nil {
		t.Errorf("PackedSize = %d, %v", n, err)
	}
	if lo, hi, err := MemSpan(2, red); lo != 0 || hi != 40 || err != nil {
		t.Errorf("MemSpan = %d, %d, %v", lo, hi, err)
	}
}
