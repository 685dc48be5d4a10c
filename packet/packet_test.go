package packet

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func newTestPool(t testing.TB, cfg Config) *Pool {
	t.Helper()
	p, err := New(cfg)
	if err != nil {
		t.Fatalf("New(%v): %v", cfg, err)
	}
	return p
}

func TestHeaderZeroedOnGet(t *testing.T) {
	p := newTestPool(t, Config{Workers: 1, PerWorker: 1, Shared: 1, PayloadSize: 64})
	pk := p.Get(0)
	pk.Context, pk.Source, pk.Tag, pk.From = 1, 2, 3, 4
	pk.SendID, pk.RecvID, pk.Size, pk.Count = 5, 6, 7, 8
	pk.Kind, pk.Flags = KindRTR, 9
	pk.SetLen(10)
	p.Put(0, pk)
	pk2 := p.Get(0)
	if pk2 != pk {
		t.Fatalf("Get after Put returned another packet (not LIFO)")
	}
	if pk2.Context != 0 || pk2.Source != 0 || pk2.Tag != 0 || pk2.From != 0 || pk2.SendID != 0 ||
		pk2.RecvID != 0 || pk2.Size != 0 || pk2.Count != 0 || pk2.Kind != KindNone ||
		pk2.Flags != 0 || pk2.Len() != 0 {
		t.Fatalf("header not cleared by Get: %v", pk2)
	}
	p.Put(0, pk2)
}

func TestPayloadAndData(t *testing.T) {
	p := newTestPool(t, Config{Workers: 1, PerWorker: 2, Shared: 1, PayloadSize: 128})
	a, b := p.Get(0), p.Get(0)
	if len(a.Payload()) != 128 || cap(a.Payload()) != 128 {
		t.Fatalf("Payload len/cap = %d/%d, want 128", len(a.Payload()), cap(a.Payload()))
	}
	for i := range a.Payload() {
		a.Payload()[i] = 0xAA
	}
	for i := range b.Payload() {
		b.Payload()[i] = 0xBB
	}
	// Neighbouring packets do not overlap, and the headers survive.
	if a.index == b.index || a.Cap() != 128 || b.Cap() != 128 {
		t.Fatalf("headers damaged by payload writes: %v %v", a, b)
	}
	if !bytes.Equal(a.Payload(), bytes.Repeat([]byte{0xAA}, 128)) {
		t.Fatal("payload of a overwritten by b")
	}
	if err := a.SetData([]byte("abc")); err != nil {
		t.Fatal(err)
	}
	if string(a.Data()) != "abc" || a.Len() != 3 {
		t.Fatalf("Data = %q, Len = %d", a.Data(), a.Len())
	}
	err := a.SetData(make([]byte, 129))
	var le *LengthError
	if !errors.Is(err, ErrTooLong) || !errors.As(err, &le) || le.Len != 129 || le.Cap != 128 {
		t.Fatalf("SetData(129 bytes) = %v, want LengthError{129,128}", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "129") || !strings.Contains(msg, "128") {
		t.Fatalf("LengthError message %q lacks the sizes", msg)
	}
	if string(a.Data()) != "abc" {
		t.Fatal("failed SetData changed the data")
	}
	for _, n := range []int{-1, 129} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(r.(string), "SetLen") {
					t.Errorf("SetLen(%d): recovered %v, want a SetLen panic", n, r)
				}
			}()
			a.SetLen(n)
		}()
	}
	a.SetLen(128)
	if len(a.Data()) != 128 {
		t.Fatal("SetLen(Cap) not honoured")
	}
	p.Put(0, a)
	p.Put(0, b)
}

func TestEncodeDecodeHeader(t *testing.T) {
	p := newTestPool(t, Config{Workers: 1, PerWorker: 2, Shared: 1, PayloadSize: 256})
	a, b := p.Get(0), p.Get(0)
	defer p.Put(0, a)
	defer p.Put(0, b)
	a.Context, a.Source, a.Tag, a.From = 0xC0DE, -3, -1, 0xFEED0000
	a.SendID, a.RecvID, a.Size, a.Count = 1<<40+7, 11, 1<<33, 0xBEEF
	a.Kind, a.Flags = KindUser+3, 0x81
	a.SetLen(200)
	var buf [HeaderWireSize]byte
	if n := a.EncodeHeader(buf[:]); n != HeaderWireSize {
		t.Fatalf("EncodeHeader = %d", n)
	}
	if err := b.DecodeHeader(buf[:]); err != nil {
		t.Fatal(err)
	}
	if a.String()[strings.Index(a.String(), "{"):] != b.String()[strings.Index(b.String(), "{"):] {
		t.Fatalf("round trip:\n%v\n%v", a, b)
	}
	if err := b.DecodeHeader(buf[:HeaderWireSize-1]); !errors.Is(err, ErrShortHeader) {
		t.Fatalf("short header: %v", err)
	}
	c := newTestPool(t, Config{Workers: 1, PerWorker: 1, Shared: 1, PayloadSize: 64}).Get(0)
	var le *LengthError
	if err := c.DecodeHeader(buf[:]); !errors.As(err, &le) || le.Len != 200 || le.Cap != 64 {
		t.Fatalf("decode of a 200-byte header into a 64-byte packet: %v", err)
	}
	if c.Tag != 0 || c.Len() != 0 {
		t.Fatal("failed DecodeHeader changed the header")
	}
	func() {
		defer func() {
			if r := recover(); !errors.As(asError(r), &le) {
				t.Errorf("CopyHeader of a too-long header: recovered %v, want *LengthError", r)
			}
		}()
		c.CopyHeader(b)
	}()
	if c.Tag != 0 {
		t.Fatal("failed CopyHeader changed the header")
	}
}

func TestCopyHeader(t *testing.T) {
	p := newTestPool(t, Config{Workers: 1, PerWorker: 2, Shared: 1, PayloadSize: 64})
	a, b := p.Get(0), p.Get(0)
	a.Context, a.Source, a.Tag, a.From, a.Kind = 1, 2, 3, 4, KindEager
	a.SetLen(5)
	b.CopyHeader(a)
	if b.Context != 1 || b.Source != 2 || b.Tag != 3 || b.From != 4 || b.Kind != KindEager || b.Len() != 5 {
		t.Fatalf("CopyHeader: %v", b)
	}
	if b.index == a.index {
		t.Fatal("CopyHeader copied the pool's bookkeeping")
	}
	p.Put(0, a)
	p.Put(0, b)
}

func TestKindString(t *testing.T) {
	for k, want := range map[Kind]string{
		KindNone: "none", KindEager: "eager", KindRTS: "rts", KindRTR: "rtr",
		KindDone: "done", KindControl: "control", KindUser: "user+0", KindUser + 5: "user+5", 20: "kind(20)",
	} {
		if k.String() != want {
			t.Errorf("Kind(%d).String() = %q, want %q", k, k.String(), want)
		}
	}
}

func asError(r any) error {
	err, _ := r.(error)
	return err
}

// TestEncodeEager checks EncodeEager against EncodeHeader of the same eager
// packet (byte for byte, over stale bytes in the buffer), and PeekEager
// against both.
func TestEncodeEager(t *testing.T) {
	p := newTestPool(t, Config{Workers: 1, PerWorker: 1, Shared: 1, PayloadSize: 256})
	pk := p.Get(0)
	defer p.Put(0, pk)
	for _, c := range []struct {
		ctx      uint32
		src, tag int32
		from     uint32
		n        int
	}{{0, 0, 0, 0, 0}, {0xC0DE, -3, -1, 0xFEED0000, 200}, {1, 1 << 30, 7, 3, 256}} {
		pk.Context, pk.Source, pk.Tag, pk.From, pk.Kind = c.ctx, c.src, c.tag, c.from, KindEager
		pk.SetLen(c.n)
		var want, got [HeaderWireSize]byte
		pk.EncodeHeader(want[:])
		for i := range got {
			got[i] = 0xA5 // stale bytes must be overwritten
		}
		EncodeEager(got[:], c.ctx, c.src, c.tag, c.from, c.n)
		if got != want {
			t.Fatalf("%+v: EncodeEager\n%x\nEncodeHeader\n%x", c, got, want)
		}
		ctx, src, tag, from, n, ok := PeekEager(got[:])
		if !ok || ctx != c.ctx || src != c.src || tag != c.tag || from != c.from || n != c.n {
			t.Fatalf("%+v: PeekEager = %d %d %d %d %d %v", c, ctx, src, tag, from, n, ok)
		}
	}
	var b [HeaderWireSize]byte
	pk.Kind = KindRTS
	pk.EncodeHeader(b[:])
	if _, _, _, _, _, ok := PeekEager(b[:]); ok {
		t.Fatal("PeekEager accepted an RTS")
	}
	if _, _, _, _, _, ok := PeekEager(b[:HeaderWireSize-1]); ok {
		t.Fatal("PeekEager accepted a short header")
	}
}

// SameEager compares the envelope and sender of two eager headers, not
// their lengths, and is false for anything that is not an eager header.
func TestSameEager(t *testing.T) {
	enc := func(ctx uint32, src, tag int32, from uint32, n int) *[HeaderWireSize]byte {
		var b [HeaderWireSize]byte
		EncodeEager(b[:], ctx, src, tag, from, n)
		return &b
	}
	a := enc(7, 1, 2, 3, 8)
	if !SameEager(a, enc(7, 1, 2, 3, 100)) {
		t.Error("SameEager is false for two lengths of one envelope")
	}
	for i, b := range []*[HeaderWireSize]byte{enc(8, 1, 2, 3, 8), enc(7, 9, 2, 3, 8), enc(7, 1, -2, 3, 8), enc(7, 1, 2, 4, 8)} {
		if SameEager(a, b) || SameEager(b, a) {
			t.Errorf("case %d: SameEager is true for another envelope or sender", i)
		}
	}
	rts := enc(7, 1, 2, 3, 8)
	rts[48] = byte(KindRTS)
	if SameEager(a, rts) || SameEager(rts, rts) {
		t.Error("SameEager is true for an RTS header")
	}
}
