package rdma_test

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strings"
	"testing"

	"github.com/fibermpi/fibermpi/rdma"
)

// fitsReference is the bounds rule in exact arithmetic: n bytes at off fit
// in a region of length l when n >= 0 and off+n <= l.
func fitsReference(l, off uint64, n int) bool {
	if n < 0 {
		return false
	}
	end := new(big.Int).Add(new(big.Int).SetUint64(off), big.NewInt(int64(n)))
	return end.Cmp(new(big.Int).SetUint64(l)) <= 0
}

// checkOne compares CheckBounds with the reference for one access and
// checks the error it returns.
func checkOne(t *testing.T, r rdma.Region, off uint64, n int) {
	t.Helper()
	err := rdma.CheckBounds(r, off, n)
	want := fitsReference(r.Len, off, n)
	if (err == nil) != want {
		t.Fatalf("CheckBounds(%v, off=%d, n=%d) = %v; the access fits: %v", r, off, n, err, want)
	}
	if err == nil {
		return
	}
	if !errors.Is(err, rdma.ErrOutOfBounds) {
		t.Fatalf("CheckBounds error %v does not match ErrOutOfBounds", err)
	}
	var be *rdma.BoundsError
	if !errors.As(err, &be) {
		t.Fatalf("CheckBounds error %T is not a *BoundsError", err)
	}
	if be.Region != r || be.Off != off || be.Len != n {
		t.Fatalf("BoundsError %+v; want region %v, off %d, len %d", *be, r, off, n)
	}
}

func TestCheckBounds(t *testing.T) {
	const max = math.MaxUint64
	lens := []uint64{0, 1, 2, 255, 256, 1 << 32, 1<<63 - 1, 1 << 63, max - 1, max}
	for _, l := range lens {
		r := rdma.Region{Key: 7, Addr: 0x1000, Len: l}
		offs := []uint64{0, 1, l / 2, l - 1, l, l + 1, max - 1, max, 1 << 63, 1<<63 - 1}
		ns := []int{0, 1, 2, 255, math.MaxInt32, math.MaxInt, -1, math.MinInt}
		for _, off := range offs {
			for _, n := range ns {
				checkOne(t, r, off, n)
			}
			// The lengths that exactly fill the region from off, and
			// one more.
			if off <= l && l-off <= math.MaxInt-1 {
				checkOne(t, r, off, int(l-off))
				checkOne(t, r, off, int(l-off)+1)
			}
		}
	}
}

// TestCheckBoundsEdges names the cases the rule exists for.
func TestCheckBoundsEdges(t *testing.T) {
	r := rdma.Region{Key: 1, Len: 100}
	for _, c := range []struct {
		off  uint64
		n    int
		fits bool
	}{
		{0, 100, true},
		{100, 0, true}, // an empty access at the end
		{99, 1, true},
		{99, 2, false},
		{101, 0, false}, // an empty access past the end
		{0, 101, false},
		{math.MaxUint64, 1, false}, // off+n wraps to 0
		{math.MaxUint64 - 50, 100, false},
		{0, -1, false}, // a negative length is never valid
		{50, math.MinInt, false},
	} {
		if got := rdma.CheckBounds(r, c.off, c.n) == nil; got != c.fits {
			t.Errorf("CheckBounds(len 100, off %d, n %d) fits = %v; want %v", c.off, c.n, got, c.fits)
		}
	}
}

func TestBoundsError(t *testing.T) {
	r := rdma.Region{Key: 3, Addr: 0x40, Len: 16}
	err := error(&rdma.BoundsError{Region: r, Off: 10, Len: 8})
	msg := err.Error()
	for _, want := range []string{"8 bytes", "offset 10", r.String()} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not mention %q", msg, want)
		}
	}
	wrapped := fmt.Errorf("put: %w", err)
	if !errors.Is(wrapped, rdma.ErrOutOfBounds) {
		t.Errorf("a wrapped BoundsError does not match ErrOutOfBounds")
	}
	for _, other := range []error{rdma.ErrClosed, rdma.ErrNoPeer, rdma.ErrBound, rdma.ErrNoRegion} {
		if errors.Is(err, other) {
			t.Errorf("a BoundsError matches %v", other)
		}
	}
	if be, ok := errors.AsType[*rdma.BoundsError](wrapped); !ok || be.Off != 10 || be.Len != 8 || be.Region != r {
		t.Errorf("errors.AsType of a wrapped BoundsError = %v, %v", be, ok)
	}
}

func TestRegionString(t *testing.T) {
	got := rdma.Region{Key: 5, Addr: 0xff, Len: 42}.String()
	if want := "region{key=5 addr=0xff len=42}"; got != want {
		t.Errorf("String() = %q; want %q", got, want)
	}
}

// TestErrorsDistinct: every sentinel is its own error with its own text.
func TestErrorsDistinct(t *testing.T) {
	errs := []error{rdma.ErrClosed, rdma.ErrNoPeer, rdma.ErrBound, rdma.ErrNoRegion, rdma.ErrOutOfBounds}
	for i, a := range errs {
		if !strings.HasPrefix(a.Error(), "rdma: ") {
			t.Errorf("%q does not start with the package name", a)
		}
		for _, b := range errs[i+1:] {
			if errors.Is(a, b) || a.Error() == b.Error() {
				t.Errorf("%q and %q are not distinct", a, b)
			}
		}
	}
}

// FuzzCheckBounds compares CheckBounds with exact arithmetic on any
// region length, offset and access length, the overflowing ones included.
func FuzzCheckBounds(f *testing.F) {
	f.Add(uint64(100), uint64(100), int64(0))
	f.Add(uint64(100), uint64(math.MaxUint64), int64(1))
	f.Add(uint64(math.MaxUint64), uint64(math.MaxUint64), int64(0))
	f.Add(uint64(math.MaxUint64), uint64(1), int64(math.MaxInt64))
	f.Add(uint64(0), uint64(0), int64(-1))
	f.Add(uint64(1<<63), uint64(1<<63), int64(1))
	f.Fuzz(func(t *testing.T, l, off uint64, n int64) {
		if int64(int(n)) != n {
			t.Skip("length does not fit in int on this platform")
		}
		checkOne(t, rdma.Region{Key: 1, Addr: 0x1000, Len: l}, off, int(n))
	})
}

// A transport checks each Put and Get against the region before it copies.
func ExampleCheckBounds() {
	r := rdma.Region{Key: 1, Len: 64}
	fmt.Println(rdma.CheckBounds(r, 0, 64))
	fmt.Println(rdma.CheckBounds(r, 64, 0))
	err := rdma.CheckBounds(r, 60, 8)
	fmt.Println(err)
	fmt.Println(errors.Is(err, rdma.ErrOutOfBounds))
	// Output:
	// <nil>
	// <nil>
	// rdma: access of 8 bytes at offset 60 outside region{key=1 addr=0x0 len=64}
	// true
}
