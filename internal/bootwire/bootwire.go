// Package bootwire is the wire protocol between fmpirun and the processes it
// starts: the frames both sides read and write on the bootstrap's unix socket
// (or TCP connection, for the processes of other hosts),
// and the names of the environment variables that hand the socket over. Only
// package bootstrap (the process side) and internal/launch (fmpirun's side)
// use it; it imports nothing from fibermpi.
//
// # Frames
//
// Every frame is a 4-byte big-endian body length, then the body: one type
// byte and the fields of that type, in the order listed on Type's constants.
// Integers are big-endian; a string is a 2-byte length and its bytes; a value
// is a 4-byte length and its bytes. A body is at most MaxFrame bytes and a
// decoder reads all of it exactly: a short field, a trailing byte or an
// unknown type is an error, never a panic or a larger allocation.
//
// # Conversation
//
// A process connects and sends Hello. fmpirun answers OK once every process
// of the job has said Hello and they agree (the join), or Error. Then, in any
// order, the process sends Put frames (no answer), Fence or Barrier (answered,
// when every process has sent the same collective, by OK; a Fence's OK is
// preceded by one Record frame per Put made by any process since the previous
// Fence), Abort (answered by OK) and finally Close. One request waits for its
// answer at a time. At any time fmpirun may send Failed: the job is ending.
package bootwire

import (
	"bufio"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
)

// Version is the protocol version carried by Hello; both sides must agree.
const Version = 1

// The environment fmpirun gives each process it starts.
const (
	EnvBoot      = "FIBERMPI_BOOT"      // path of fmpirun's unix socket
	EnvRank      = "FIBERMPI_RANK"      // this process's rank, 0..size-1
	EnvSize      = "FIBERMPI_SIZE"      // number of processes in the job
	EnvJobID     = "FIBERMPI_JOBID"     // the job's id: 16 hex digits
	EnvBootstrap = "FIBERMPI_BOOTSTRAP" // forces a bootstrap by name; fmpirun removes it
)

// TCPPrefix begins an EnvBoot value that is fmpirun's TCP address rather
// than its socket's path: "tcp:10.0.0.1:40123", given to the processes
// fmpirun starts on other hosts.
const TCPPrefix = "tcp:"

// Limits of the protocol.
const (
	MaxKey    = 1024      // bytes in a record's key
	MaxValue  = 64 << 10  // bytes in a record's value
	MaxString = 4096      // bytes in any other string field
	MaxFrame  = 128 << 10 // bytes in a frame body; holds the largest Record
)

// Type is a frame's first body byte.
type Type byte

// Frame types, with their fields in wire order. C→S: the process sends it;
// S→C: fmpirun sends it.
const (
	_       Type = iota
	Hello        // C→S: Version u16, Rank i32, Size i32, PID i32, JobID, Identity, Exe, Host strings
	Put          // C→S: Key string, Value value
	Fence        // C→S: no fields
	Barrier      // C→S: no fields
	Abort        // C→S: Code i32, Text string (the reason)
	Close        // C→S: no fields
	OK           // S→C: no fields
	Record       // S→C: Rank i32 (who put it), Key string, Value value
	Error        // S→C: Kind u8, Rank i32 (the peer concerned, or -1), Text string
	Failed       // S→C: Kind u8, Rank i32 (who failed, or -1 for fmpirun), Text string (the cause)
	numTypes
)

var typeNames = [...]string{"invalid", "Hello", "Put", "Fence", "Barrier", "Abort", "Close", "OK", "Record", "Error", "Failed"}

func (t Type) String() string {
	if t < numTypes {
		return typeNames[t]
	}
	return fmt.Sprintf("Type(%d)", byte(t))
}

// Kind classifies an Error or a Failed frame.
type Kind byte

// Kinds of Error and Failed frames.
const (
	KindEnvironment Kind = iota + 1 // the process's environment is wrong (Error)
	KindMismatch                    // the processes disagree: job, size, binary, collective (Error)
	KindPeerLost                    // a peer left or failed (Error: a collective cannot complete; Failed)
	KindAborted                     // a peer called Abort (Failed)
	KindProtocol                    // a malformed or unexpected frame (Error)
	numKinds
)

// Msg is one frame, decoded. Only the fields of its Type are meaningful; the
// others are zero.
type Msg struct {
	Type     Type
	Kind     Kind
	Version  uint16
	Rank     int32
	Size     int32
	PID      int32
	Code     int32
	JobID    string
	Identity string
	Exe      string
	Host     string
	Key      string
	Text     string
	Value    []byte
}

// AbortCause is how an Abort is described to the other processes and in
// fmpirun's message: "aborted the job with code 7: bad input".
func AbortCause(code int32, reason string) string {
	return fmt.Sprintf("aborted the job with code %d: %s", code, reason)
}

// NewJobID returns a fresh job id: 16 random hex digits. Ids of one length
// are never prefixes of one another, so "fibermpi-<id>*" globs only that
// job's files.
func NewJobID() string {
	var b [8]byte
	rand.Read(b[:]) // never fails: crypto/rand panics rather than return an error
	return hex.EncodeToString(b[:])
}

// ErrFrame is wrapped by every decoding error.
var ErrFrame = errors.New("bootwire: malformed frame")

// Append appends m's frame (length prefix included) to dst. It does not
// check limits: Check does.
func Append(dst []byte, m *Msg) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0, byte(m.Type))
	switch m.Type {
	case Hello:
		dst = binary.BigEndian.AppendUint16(dst, m.Version)
		dst = appendI32(dst, m.Rank)
		dst = appendI32(dst, m.Size)
		dst = appendI32(dst, m.PID)
		dst = appendStr(dst, m.JobID)
		dst = appendStr(dst, m.Identity)
		dst = appendStr(dst, m.Exe)
		dst = appendStr(dst, m.Host)
	case Put:
		dst = appendStr(dst, m.Key)
		dst = appendVal(dst, m.Value)
	case Abort:
		dst = appendI32(dst, m.Code)
		dst = appendStr(dst, m.Text)
	case Record:
		dst = appendI32(dst, m.Rank)
		dst = appendStr(dst, m.Key)
		dst = appendVal(dst, m.Value)
	case Error, Failed:
		dst = append(dst, byte(m.Kind))
		dst = appendI32(dst, m.Rank)
		dst = appendStr(dst, m.Text)
	}
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}

// Check reports whether m can be sent: a known type and fields within the
// limits.
func Check(m *Msg) error {
	if m.Type == 0 || m.Type >= numTypes {
		return fmt.Errorf("%w: unknown type %d", ErrFrame, m.Type)
	}
	if len(m.Key) > MaxKey {
		return fmt.Errorf("%w: key of %d bytes (at most %d)", ErrFrame, len(m.Key), MaxKey)
	}
	if len(m.Value) > MaxValue {
		return fmt.Errorf("%w: value of %d bytes (at most %d)", ErrFrame, len(m.Value), MaxValue)
	}
	for _, s := range [...]string{m.JobID, m.Identity, m.Exe, m.Host, m.Text} {
		if len(s) > MaxString {
			return fmt.Errorf("%w: string field of %d bytes (at most %d)", ErrFrame, len(s), MaxString)
		}
	}
	if (m.Type == Error || m.Type == Failed) && (m.Kind == 0 || m.Kind >= numKinds) {
		return fmt.Errorf("%w: unknown kind %d", ErrFrame, m.Kind)
	}
	return nil
}

// Decode decodes one frame body (without its length prefix). Value is a
// copy: the result does not alias body.
func Decode(body []byte) (Msg, error) {
	d := decoder{b: body}
	var m Msg
	m.Type = Type(d.u8())
	switch m.Type {
	case Hello:
		m.Version = d.u16()
		m.Rank = d.i32()
		m.Size = d.i32()
		m.PID = d.i32()
		m.JobID = d.str(MaxString)
		m.Identity = d.str(MaxString)
		m.Exe = d.str(MaxString)
		m.Host = d.str(MaxString)
	case Put:
		m.Key = d.str(MaxKey)
		m.Value = d.val()
	case Fence, Barrier, Close, OK:
	case Abort:
		m.Code = d.i32()
		m.Text = d.str(MaxString)
	case Record:
		m.Rank = d.i32()
		m.Key = d.str(MaxKey)
		m.Value = d.val()
	case Error, Failed:
		m.Kind = Kind(d.u8())
		m.Rank = d.i32()
		m.Text = d.str(MaxString)
		if d.err == nil && (m.Kind == 0 || m.Kind >= numKinds) {
			d.fail("unknown kind %d", m.Kind)
		}
	default:
		if d.err == nil {
			d.fail("unknown type %d", byte(m.Type))
		}
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail("%d bytes after a %v frame", len(d.b), m.Type)
	}
	if d.err != nil {
		return Msg{}, d.err
	}
	return m, nil
}

// Reader reads frames from a stream.
type Reader struct {
	r   *bufio.Reader
	buf []byte
}

// NewReader returns a Reader of r.
func NewReader(r io.Reader) *Reader {
	return &Reader{r: bufio.NewReaderSize(r, 16<<10)}
}

// Read reads the next frame. At the end of the stream between frames it
// returns io.EOF; a stream cut inside a frame gives io.ErrUnexpectedEOF; a
// length over MaxFrame or a malformed body gives an error wrapping ErrFrame.
func (r *Reader) Read() (Msg, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r.r, hdr[:]); err != nil {
		return Msg{}, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n == 0 || n > MaxFrame {
		return Msg{}, fmt.Errorf("%w: body length %d (1..%d)", ErrFrame, n, MaxFrame)
	}
	if cap(r.buf) < int(n) {
		r.buf = make([]byte, n)
	}
	body := r.buf[:n]
	if _, err := io.ReadFull(r.r, body); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return Msg{}, err
	}
	return Decode(body)
}

func appendI32(dst []byte, v int32) []byte { return binary.BigEndian.AppendUint32(dst, uint32(v)) }

func appendStr(dst []byte, s string) []byte {
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(s)))
	return append(dst, s...)
}

func appendVal(dst []byte, v []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(v)))
	return append(dst, v...)
}

// decoder consumes a body; after the first error every read returns zero.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(format string, args ...any) {
	d.err = fmt.Errorf("%w: %s", ErrFrame, fmt.Sprintf(format, args...))
	d.b = nil
}

func (d *decoder) take(n int, what string) []byte {
	if d.err != nil {
		return nil
	}
	if len(d.b) < n {
		d.fail("%s needs %d bytes, %d left", what, n, len(d.b))
		return nil
	}
	p := d.b[:n]
	d.b = d.b[n:]
	return p
}

func (d *decoder) u8() byte {
	if p := d.take(1, "byte"); p != nil {
		return p[0]
	}
	return 0
}

func (d *decoder) u16() uint16 {
	if p := d.take(2, "u16"); p != nil {
		return binary.BigEndian.Uint16(p)
	}
	return 0
}

func (d *decoder) i32() int32 {
	if p := d.take(4, "i32"); p != nil {
		return int32(binary.BigEndian.Uint32(p))
	}
	return 0
}

func (d *decoder) str(limit int) string {
	n := int(d.u16())
	if d.err == nil && n > limit {
		d.fail("string of %d bytes (at most %d)", n, limit)
	}
	return string(d.take(n, "string"))
}

func (d *decoder) val() []byte {
	p := d.take(4, "value length")
	if p == nil {
		return nil
	}
	n := binary.BigEndian.Uint32(p)
	if n > MaxValue {
		d.fail("value of %d bytes (at most %d)", n, MaxValue)
		return nil
	}
	v := d.take(int(n), "value")
	if v == nil {
		return nil
	}
	return append([]byte{}, v...)
}
