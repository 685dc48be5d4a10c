package datatype

import "io"

// Packer packs count instances of a layout in pieces: each Read fills the
// next chunk (an eager packet's payload, say) with the next packed bytes.
// Its position is a plain byte offset into the packed stream, so packing
// can stop after any chunk and resume later, or Seek back to resend.
// Finding the position costs a walk down the compiled layout, not a replay
// of the bytes before it.
//
// The zero Packer is empty; Reset or NewPacker gives it a buffer and a
// layout. A Packer is not safe for concurrent use, and it does not copy the
// source: the memory must stay unchanged until the last Read (the usual
// send-buffer rule).
type Packer struct {
	mem   []byte
	d     *desc
	count int
	total int
	pos   int
}

// NewPacker returns a Packer for count instances of t in src; see Reset.
func NewPacker(src []byte, count int, t Type) (*Packer, error) {
	p := new(Packer)
	if err := p.Reset(src, count, t); err != nil {
		return nil, err
	}
	return p, nil
}

// Reset makes p pack count instances of t found in src (displacement 0 at
// src's first byte), from the start. It checks the bounds once, here, with
// the errors Pack gives; on error p is left empty. Reset does not allocate,
// so a Packer embedded in a request can be reused.
func (p *Packer) Reset(src []byte, count int, t Type) error {
	*p = Packer{}
	n, err := check("Packer.Reset", t, count, len(src), limit, "src", "dst")
	if err != nil {
		return err
	}
	*p = Packer{mem: src, d: t.d, count: count, total: n}
	return nil
}

// Read packs the next min(len(dst), Remaining()) bytes into dst and returns
// their number. Every chunk but the last is filled completely. At the end
// it returns 0, io.EOF (so a Packer is an io.Reader).
func (p *Packer) Read(dst []byte) (int, error) {
	if p.pos >= p.total {
		return 0, io.EOF
	}
	n := min(len(dst), p.total-p.pos)
	p.d.transfer(p.count, p.pos, dst[:n], p.mem, true)
	p.pos += n
	return n, nil
}

// Len returns the total packed bytes, count*t.Size().
func (p *Packer) Len() int { return p.total }

// Pos returns the number of packed bytes produced so far: the resumable
// position.
func (p *Packer) Pos() int { return p.pos }

// Remaining returns Len() - Pos().
func (p *Packer) Remaining() int { return p.total - p.pos }

// Done reports whether every byte has been packed.
func (p *Packer) Done() bool { return p.pos >= p.total }

// Seek sets the position to pos, 0 ≤ pos ≤ Len(); the next Read continues
// from there.
func (p *Packer) Seek(pos int) error {
	if pos < 0 || pos > p.total {
		return badArg("Packer.Seek", "pos", pos, "must be within [0, Len()] = [0, "+itoa(p.total)+"]")
	}
	p.pos = pos
	return nil
}

// Unpacker unpacks count instances of a layout from pieces: each Write
// scatters the next chunk of the packed stream (an arriving eager packet's
// payload) into memory. Its position is a byte offset into the packed
// stream, so chunks may be of any sizes and arrive over any time, in order.
//
// The zero Unpacker is empty; Reset or NewUnpacker gives it a buffer and a
// layout. An Unpacker is not safe for concurrent use; it writes into the
// destination memory as chunks arrive.
type Unpacker struct {
	mem   []byte
	d     *desc
	count int
	total int
	pos   int
}

// NewUnpacker returns an Unpacker for count instances of t in dst; see
// Reset.
func NewUnpacker(dst []byte, count int, t Type) (*Unpacker, error) {
	u := new(Unpacker)
	if err := u.Reset(dst, count, t); err != nil {
		return nil, err
	}
	return u, nil
}

// Reset makes u unpack into count instances of t in dst (displacement 0 at
// dst's first byte), from the start. It checks the bounds once, here, with
// the errors Unpack gives; on error u is left empty. Reset does not
// allocate.
func (u *Unpacker) Reset(dst []byte, count int, t Type) error {
	*u = Unpacker{}
	n, err := check("Unpacker.Reset", t, count, len(dst), limit, "dst", "src")
	if err != nil {
		return err
	}
	*u = Unpacker{mem: dst, d: t.d, count: count, total: n}
	return nil
}

// Write unpacks the chunk src, the next len(src) bytes of the packed
// stream, and returns len(src). If src holds more than Remaining() bytes,
// Write unpacks the bytes that fit and returns their number with
// ErrOverrun (so an Unpacker is an io.Writer that refuses to overflow).
func (u *Unpacker) Write(src []byte) (int, error) {
	n := min(len(src), u.total-u.pos)
	u.d.transfer(u.count, u.pos, src[:n], u.mem, false)
	u.pos += n
	if n < len(src) {
		return n, ErrOverrun
	}
	return n, nil
}

// Len returns the total packed bytes expected, count*t.Size().
func (u *Unpacker) Len() int { return u.total }

// Pos returns the number of packed bytes consumed so far: the resumable
// position.
func (u *Unpacker) Pos() int { return u.pos }

// Remaining returns Len() - Pos().
func (u *Unpacker) Remaining() int { return u.total - u.pos }

// Done reports whether every byte has been unpacked.
func (u *Unpacker) Done() bool { return u.pos >= u.total }

// Seek sets the position to pos, 0 ≤ pos ≤ Len(); the next Write continues
// from there (for a chunk resent after a loss, say).
func (u *Unpacker) Seek(pos int) error {
	if pos < 0 || pos > u.total {
		return badArg("Unpacker.Seek", "pos", pos, "must be within [0, Len()] = [0, "+itoa(u.total)+"]")
	}
	u.pos = pos
	return nil
}
