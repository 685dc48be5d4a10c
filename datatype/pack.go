package datatype

// span returns the byte range [lo, hi) of a memory buffer that count
// instances of d touch, and the packed bytes they make. It reports an
// ArgError for a negative count or an overflowing total.
func (d *desc) span(op string, count int) (lo, hi, packed int, err error) {
	if count < 0 {
		return 0, 0, 0, badArg(op, "count", count, "must not be negative")
	}
	if count > limit {
		return 0, 0, 0, overflow(op, "count", count)
	}
	packed, ok := mul(count, d.size)
	if !ok {
		return 0, 0, 0, overflow(op, "count", count)
	}
	if packed == 0 {
		return 0, 0, 0, nil
	}
	last, ok := mul(count-1, d.ub-d.lb)
	if !ok {
		return 0, 0, 0, overflow(op, "count", count)
	}
	hi, ok = add(d.tub, last)
	if !ok {
		return 0, 0, 0, overflow(op, "count", count)
	}
	return d.tlb, hi, packed, nil
}

// check validates a transfer of count instances of t between memory mem
// and a packed buffer of length bufLen, and returns the packed bytes.
// memName and bufName name the buffers in errors.
func check(op string, t Type, count, memLen, bufLen int, memName, bufName string) (int, error) {
	if t.d == nil {
		return 0, &ArgError{Op: op, Arg: "t", Reason: "zero Type", Err: ErrInvalidType}
	}
	lo, hi, packed, err := t.d.span(op, count)
	if err != nil {
		return 0, err
	}
	if packed == 0 {
		return 0, nil
	}
	if lo < 0 || hi > memLen {
		return 0, &BoundsError{Op: op, Buf: memName, Lo: lo, Hi: hi, Len: memLen, Err: ErrOutOfBounds}
	}
	if packed > bufLen {
		return 0, &BoundsError{Op: op, Buf: bufName, Lo: 0, Hi: packed, Len: bufLen, Err: ErrShortBuffer}
	}
	return packed, nil
}

// transfer moves the packed bytes [skip, skip+len(buf)) of count instances
// of d between mem and buf. The caller has checked the bounds and that
// skip+len(buf) does not exceed the packed total.
func (d *desc) transfer(count, skip int, buf, mem []byte, pack bool) {
	if len(buf) == 0 {
		return
	}
	if d.contiguous && d.ub-d.lb == d.size {
		// count instances are one run.
		moveBytes(buf, mem, d.lb+skip, len(buf), pack)
		return
	}
	ext := d.ub - d.lb
	inst := skip / d.size
	within := skip - inst*d.size
	done := 0
	for ; inst < count; inst++ {
		done += xfer(d.items, inst*ext, within, buf[done:], mem, pack)
		if done == len(buf) {
			return
		}
		within = 0
	}
}

// Pack gathers count instances of t from src, a buffer whose first byte is
// displacement 0 of the layout, into dst, back to back in layout order, and
// returns the number of bytes written, count*t.Size(). It checks everything
// before writing any byte: a negative count, a layout that would read
// outside src (*BoundsError, ErrOutOfBounds) or a dst shorter than the
// packed bytes (*BoundsError, ErrShortBuffer). dst and src must not overlap.
// Pack does not allocate.
func Pack(dst, src []byte, count int, t Type) (int, error) {
	n, err := check("Pack", t, count, len(src), len(dst), "src", "dst")
	if err != nil {
		return 0, err
	}
	t.d.transfer(count, 0, dst[:n], src, true)
	return n, nil
}

// Unpack scatters count*t.Size() packed bytes from src into count instances
// of t in dst, a buffer whose first byte is displacement 0 of the layout,
// and returns the number of bytes read. Bytes of dst outside the layout are
// left alone. It checks everything before writing any byte: a negative
// count, a layout that would write outside dst (*BoundsError,
// ErrOutOfBounds) or a src shorter than the packed bytes (*BoundsError,
// ErrShortBuffer). dst and src must not overlap. If the layout names some
// byte twice, the later write wins. Unpack does not allocate.
func Unpack(dst, src []byte, count int, t Type) (int, error) {
	n, err := check("Unpack", t, count, len(dst), len(src), "dst", "src")
	if err != nil {
		return 0, err
	}
	t.d.transfer(count, 0, src[:n], dst, false)
	return n, nil
}

// PackedSize returns the bytes count instances of t pack into,
// count*t.Size(), or an error for a negative count or an overflow.
func PackedSize(count int, t Type) (int, error) {
	if t.d == nil {
		return 0, &ArgError{Op: "PackedSize", Arg: "t", Reason: "zero Type", Err: ErrInvalidType}
	}
	_, _, n, err := t.d.span("PackedSize", count)
	return n, err
}

// MemSpan returns the byte range [lo, hi) of a memory buffer that count
// instances of t touch, relative to displacement 0; a buffer holds them
// when lo ≥ 0 and hi ≤ its length. The range is empty (0, 0) when nothing
// is touched.
func MemSpan(count int, t Type) (lo, hi int, err error) {
	if t.d == nil {
		return 0, 0, &ArgError{Op: "MemSpan", Arg: "t", Reason: "zero Type", Err: ErrInvalidType}
	}
	lo, hi, _, err = t.d.span("MemSpan", count)
	return lo, hi, err
}
