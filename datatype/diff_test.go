package datatype

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// guard is the byte written around destination buffers; a stray write
// changes it.
const (
	guard    = 0xA5
	guardLen = 32
)

// guarded returns a buffer of n usable bytes with guardLen guard bytes on
// each side, and the usable part.
func guarded(n int) (whole, inner []byte) {
	whole = make([]byte, n+2*guardLen)
	for i := range whole {
		whole[i] = guard
	}
	return whole, whole[guardLen : guardLen+n : guardLen+n]
}

func checkGuards(t testing.TB, whole []byte, what string) {
	t.Helper()
	n := len(whole) - 2*guardLen
	for i := range guardLen {
		if whole[i] != guard || whole[guardLen+n+i] != guard {
			t.Fatalf("%s: guard bytes overwritten", what)
		}
	}
}

func fill(r *rand.Rand, b []byte) {
	for i := range b {
		b[i] = byte(r.Uint32())
	}
}

// chunker returns chunk sizes: 1..max at random.
type chunker func() int

// checkLayout checks t against the reference for count instances: bounds,
// size, runs, Pack, Unpack, Packer and Unpacker with chunk sizes from next.
func checkLayout(t testing.TB, r *rand.Rand, ty Type, count int, next chunker) {
	t.Helper()
	ref := refOf(ty)
	name := ty.String()
	if got, want := ty.Size(), ref.size(); got != want {
		t.Fatalf("%s: Size %d, reference %d", name, got, want)
	}
	if ty.LowerBound() != ref.lb || ty.UpperBound() != ref.ub {
		t.Fatalf("%s: bounds [%d, %d), reference [%d, %d)", name, ty.LowerBound(), ty.UpperBound(), ref.lb, ref.ub)
	}
	if ty.Align() != ref.align {
		t.Fatalf("%s: Align %d, reference %d", name, ty.Align(), ref.align)
	}
	lo, hi := ref.trueBounds()
	if ty.TrueLowerBound() != lo || ty.TrueLowerBound()+ty.TrueExtent() != hi {
		t.Fatalf("%s: true bounds [%d, %d), reference [%d, %d)", name,
			ty.TrueLowerBound(), ty.TrueLowerBound()+ty.TrueExtent(), lo, hi)
	}
	// Runs: the reference's element runs, merged, for count instances.
	var want []refRun
	for i := range count {
		for _, x := range ref.runs {
			o := i*ref.extent() + x.off
			if k := len(want) - 1; k >= 0 && want[k].off+want[k].n == o {
				want[k].n += x.n
			} else {
				want = append(want, refRun{o, x.n})
			}
		}
	}
	var got []refRun
	for off, n := range Runs(count, ty) {
		got = append(got, refRun{off, n})
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(refRun{})); diff != "" {
		t.Fatalf("%s: Runs(%d) differ from the reference (-want +got):\n%s", name, count, diff)
	}
	if count >= 1 {
		one := len(want) == 1 && want[0].off == ty.LowerBound() && ty.Size() == ty.Extent()
		if ty.IsContiguous() != one {
			t.Fatalf("%s: IsContiguous %v disagrees with the runs %v", name, ty.IsContiguous(), want)
		}
	}

	// Memory that just holds count instances.
	memLen := 0
	if len(want) > 0 {
		_, memLen, _ = MemSpan(count, ty)
	}
	memLen += r.IntN(8)
	mem := make([]byte, memLen)
	fill(r, mem)
	packed := ty.Size() * count

	// Pack.
	wantPacked := make([]byte, packed)
	refPack(wantPacked, mem, count, ref)
	whole, dst := guarded(packed)
	n, err := Pack(dst, mem, count, ty)
	if err != nil || n != packed {
		t.Fatalf("%s: Pack(count %d) = %d, %v; want %d, nil", name, count, n, err, packed)
	}
	checkGuards(t, whole, name+": Pack")
	if !bytes.Equal(dst, wantPacked) {
		t.Fatalf("%s: Pack(count %d) differs from the reference", name, count)
	}

	// Packer in chunks.
	whole, dst = guarded(packed)
	var p Packer
	if err := p.Reset(mem, count, ty); err != nil {
		t.Fatalf("%s: Packer.Reset: %v", name, err)
	}
	for off := 0; !p.Done(); {
		k := min(next(), packed-off)
		n, err := p.Read(dst[off : off+k])
		if err != nil || n != k {
			t.Fatalf("%s: Packer.Read(%d bytes at %d) = %d, %v", name, k, off, n, err)
		}
		off += n
	}
	checkGuards(t, whole, name+": Packer")
	if !bytes.Equal(dst, wantPacked) {
		t.Fatalf("%s: Packer differs from the reference", name)
	}

	// Unpack random bytes into memory with random contents.
	src := make([]byte, packed)
	fill(r, src)
	wantMem := bytes.Clone(mem)
	refUnpack(wantMem, src, count, ref)
	whole, dstMem := guarded(memLen)
	copy(dstMem, mem)
	n, err = Unpack(dstMem, src, count, ty)
	if err != nil || n != packed {
		t.Fatalf("%s: Unpack(count %d) = %d, %v; want %d, nil", name, count, n, err, packed)
	}
	checkGuards(t, whole, name+": Unpack")
	if !bytes.Equal(dstMem, wantMem) {
		t.Fatalf("%s: Unpack(count %d) differs from the reference", name, count)
	}

	// Unpacker in chunks.
	whole, dstMem = guarded(memLen)
	copy(dstMem, mem)
	var u Unpacker
	if err := u.Reset(dstMem, count, ty); err != nil {
		t.Fatalf("%s: Unpacker.Reset: %v", name, err)
	}
	for off := 0; !u.Done(); {
		k := min(next(), packed-off)
		n, err := u.Write(src[off : off+k])
		if err != nil || n != k {
			t.Fatalf("%s: Unpacker.Write(%d bytes at %d) = %d, %v", name, k, off, n, err)
		}
		off += n
	}
	if n, err := u.Write([]byte{1}); n != 0 || !errors.Is(err, ErrOverrun) {
		t.Fatalf("%s: Unpacker.Write past the end = %d, %v; want 0, ErrOverrun", name, n, err)
	}
	checkGuards(t, whole, name+": Unpacker")
	if !bytes.Equal(dstMem, wantMem) {
		t.Fatalf("%s: Unpacker differs from the reference", name)
	}

	// One byte too little memory, or packed room, is refused untouched.
	if packed > 0 {
		short := bytes.Clone(mem[:memLenFor(count, ty)-1])
		if _, err := Pack(make([]byte, packed), short, count, ty); !errors.Is(err, ErrOutOfBounds) {
			t.Fatalf("%s: Pack from short src: %v, want ErrOutOfBounds", name, err)
		}
		before := bytes.Clone(short)
		if _, err := Unpack(short, src, count, ty); !errors.Is(err, ErrOutOfBounds) {
			t.Fatalf("%s: Unpack into short dst: %v, want ErrOutOfBounds", name, err)
		}
		if !bytes.Equal(before, short) {
			t.Fatalf("%s: refused Unpack wrote into dst", name)
		}
		if _, err := Pack(make([]byte, packed-1), mem, count, ty); !errors.Is(err, ErrShortBuffer) {
			t.Fatalf("%s: Pack into short dst: %v, want ErrShortBuffer", name, err)
		}
		before = bytes.Clone(mem)
		if _, err := Unpack(mem, src[:packed-1], count, ty); !errors.Is(err, ErrShortBuffer) {
			t.Fatalf("%s: Unpack from short src: %v, want ErrShortBuffer", name, err)
		}
		if !bytes.Equal(before, mem) {
			t.Fatalf("%s: refused Unpack wrote into dst", name)
		}
	}
}

// memLenFor returns the bytes a buffer needs to hold count instances.
func memLenFor(count int, ty Type) int {
	_, hi, err := MemSpan(count, ty)
	if err != nil {
		panic(err)
	}
	return hi
}

func randomChunks(r *rand.Rand, maxChunk int) chunker {
	return func() int { return 1 + r.IntN(maxChunk) }
}

func TestConstructorsAgainstReference(t *testing.T) {
	f32, f64, p := Float32, Float64, MustOf[pair]()
	must := func(ty Type, err error) Type {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return ty
	}
	col := must(Vector(4, 1, 5, f32))
	cases := []Type{
		f32, p, MustOf[[3]uint16](),
		must(Contiguous(7, f64)),
		must(Contiguous(0, f64)),
		must(Contiguous(3, must(Vector(2, 1, 2, f32)))),
		must(Vector(5000, 1, 2, f32)),
		must(Vector(3, 2, 4, p)),
		must(Vector(4, 3, 3, f64)), // stride == blocklen: contiguous
		must(Vector(4, 1, -2, f32)),
		must(Vector(5, 2, 1, f32)), // overlapping blocks
		must(Vector(1000, 1, 3, must(Vector(3, 1, 2, f32)))),
		must(Hvector(6, 1, 12, f64)),
		must(Hvector(3, 2, 5, f32)), // unaligned runs
		must(Indexed([]int{1, 0, 3, 2}, []int{5, 9, 0, 12}, f64)),
		must(Indexed([]int{1, 1, 1, 1}, []int{0, 2, 4, 6}, f32)),
		must(IndexedBlock(2, []int{4, 0, 8}, p)),
		must(Subarray([]int{6, 7}, []int{3, 2}, []int{1, 4}, f32)),
		must(Subarray([]int{4, 5, 6}, []int{2, 5, 3}, []int{1, 0, 2}, f64)),
		must(Subarray([]int{4, 5}, []int{4, 5}, []int{0, 0}, f64)), // the whole array
		must(Subarray([]int{4, 5}, []int{0, 5}, []int{0, 0}, f64)),
		must(Struct([]int{1, 1}, []int{0, 8}, []Type{f64, Int32})),
		must(Struct([]int{2, 1, 3}, []int{0, 10, 20}, []Type{Int16, f64, Byte})),
		must(Struct(nil, nil, nil)),
		must(Resized(col, 0, 4)),
		must(Resized(f32, -4, 12)),
		must(Contiguous(5, must(Resized(col, 0, 4)))),
	}
	forKernels(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(1, 2))
		for _, ty := range cases {
			for _, count := range []int{0, 1, 2, 5} {
				for _, chunk := range []int{1, 3, 8, 64, 1 << 20} {
					checkLayout(t, r, anchor(ty), count, randomChunks(r, chunk))
				}
			}
		}
	})
}

func TestRandomNestings(t *testing.T) {
	n := 3000
	if testing.Short() {
		n = 300
	}
	forKernels(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(3, 4))
		for i := range n {
			ty := anchor(genType(r, 1+i%4))
			if ty.Size()*4 > 1<<20 {
				continue // keep the reference cheap
			}
			checkLayout(t, r, ty, r.IntN(4), randomChunks(r, 1+r.IntN(100)))
		}
	})
}
