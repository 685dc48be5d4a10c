package bootwire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func samples() []Msg {
	return []Msg{
		{Type: Hello, Version: Version, Rank: 3, Size: 4, PID: 12345, JobID: "0123456789abcdef",
			Identity: "go:abc/def", Exe: "/tmp/prog", Host: "node1/boot-id"},
		{Type: Put, Key: "addr", Value: []byte("127.0.0.1:5000")},
		{Type: Put, Key: "empty"},
		{Type: Put, Key: strings.Repeat("k", MaxKey), Value: bytes.Repeat([]byte{0xfe}, MaxValue)},
		{Type: Fence},
		{Type: Barrier},
		{Type: Abort, Code: -7, Text: "bad input"},
		{Type: Close},
		{Type: OK},
		{Type: Record, Rank: 2, Key: "addr", Value: []byte{0, 1, 2}},
		{Type: Error, Kind: KindMismatch, Rank: -1, Text: "FIBERMPI_SIZE=3 but fmpirun started 2"},
		{Type: Failed, Kind: KindAborted, Rank: 1, Text: "aborted the job with code 7: bad input"},
	}
}

var msgCmp = cmpopts.EquateEmpty()

func TestRoundTrip(t *testing.T) {
	var stream []byte
	for _, m := range samples() {
		if err := Check(&m); err != nil {
			t.Fatalf("Check(%v): %v", m.Type, err)
		}
		frame := Append(nil, &m)
		if n := binary.BigEndian.Uint32(frame); int(n) != len(frame)-4 || n > MaxFrame {
			t.Fatalf("%v: length prefix %d, body %d bytes (max %d)", m.Type, n, len(frame)-4, MaxFrame)
		}
		got, err := Decode(frame[4:])
		if err != nil {
			t.Fatalf("Decode(%v): %v", m.Type, err)
		}
		if d := cmp.Diff(m, got, msgCmp); d != "" {
			t.Errorf("%v round trip (-sent +decoded):\n%s", m.Type, d)
		}
		stream = append(stream, frame...)
	}
	r := NewReader(bytes.NewReader(stream))
	for i, m := range samples() {
		got, err := r.Read()
		if err != nil {
			t.Fatalf("Read frame %d: %v", i, err)
		}
		if d := cmp.Diff(m, got, msgCmp); d != "" {
			t.Errorf("stream frame %d (-sent +read):\n%s", i, d)
		}
	}
	if _, err := r.Read(); err != io.EOF {
		t.Errorf("Read past the last frame = %v, want io.EOF", err)
	}
}

func TestDecodeRejects(t *testing.T) {
	valid := Append(nil, &Msg{Type: Record, Rank: 1, Key: "k", Value: []byte("v")})[4:]
	over := Append(nil, &Msg{Type: Put, Key: "k"})[4:]
	binary.BigEndian.PutUint32(over[len(over)-4:], MaxValue+1)
	cases := map[string][]byte{
		"empty":           {},
		"unknown type":    {0x7f},
		"type zero":       {0},
		"short":           valid[:len(valid)-1],
		"trailing byte":   append(append([]byte{}, valid...), 0),
		"bad kind":        Append(nil, &Msg{Type: Failed, Kind: 0, Rank: 1})[4:],
		"kind too large":  Append(nil, &Msg{Type: Error, Kind: numKinds, Rank: 1})[4:],
		"value too long":  over,
		"key too long":    Append(nil, &Msg{Type: Put, Key: strings.Repeat("k", MaxKey+1)})[4:],
		"fence with body": {byte(Fence), 1},
	}
	for name, body := range cases {
		if _, err := Decode(body); !errors.Is(err, ErrFrame) {
			t.Errorf("%s: Decode = %v, want ErrFrame", name, err)
		}
	}
}

func TestReaderRejects(t *testing.T) {
	frame := Append(nil, &Msg{Type: Abort, Code: 1, Text: "x"})
	for name, tc := range map[string]struct {
		in   []byte
		want error
	}{
		"cut in prefix": {frame[:2], io.ErrUnexpectedEOF},
		"cut in body":   {frame[:len(frame)-1], io.ErrUnexpectedEOF},
		"zero length":   {[]byte{0, 0, 0, 0}, ErrFrame},
		"huge length":   {[]byte{0xff, 0xff, 0xff, 0xff, 1}, ErrFrame},
	} {
		if _, err := NewReader(bytes.NewReader(tc.in)).Read(); !errors.Is(err, tc.want) {
			t.Errorf("%s: Read = %v, want %v", name, err, tc.want)
		}
	}
}

func TestCheck(t *testing.T) {
	bad := []Msg{
		{Type: 0},
		{Type: numTypes},
		{Type: Put, Key: strings.Repeat("k", MaxKey+1)},
		{Type: Put, Key: "k", Value: make([]byte, MaxValue+1)},
		{Type: Abort, Text: strings.Repeat("r", MaxString+1)},
		{Type: Failed, Kind: 0},
	}
	for _, m := range bad {
		if err := Check(&m); !errors.Is(err, ErrFrame) {
			t.Errorf("Check(%v key %d value %d text %d) = %v, want ErrFrame", m.Type, len(m.Key), len(m.Value), len(m.Text), err)
		}
	}
}

func TestTypeString(t *testing.T) {
	if Fence.String() != "Fence" || Failed.String() != "Failed" || Type(200).String() != "Type(200)" {
		t.Errorf("Type.String: %v %v %v", Fence, Failed, Type(200))
	}
}

// FuzzDecode: any bytes decode without panicking; whatever decodes is
// canonical (encoding it again gives the same bytes) and passes Check; and
// the stream reader agrees with Decode on a framed copy.
func FuzzDecode(f *testing.F) {
	for _, m := range samples() {
		if m.Type == Put && len(m.Value) > 1000 {
			continue
		}
		f.Add(Append(nil, &m)[4:])
	}
	f.Add([]byte{byte(Hello), 0, 1})
	f.Add([]byte{byte(Put), 0xff, 0xff})
	f.Fuzz(func(t *testing.T, body []byte) {
		m, err := Decode(body)
		framed := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
		framed = append(framed, body...)
		rm, rerr := NewReader(bytes.NewReader(framed)).Read()
		if err != nil {
			if !errors.Is(err, ErrFrame) {
				t.Fatalf("Decode error %v does not wrap ErrFrame", err)
			}
			if rerr == nil {
				t.Fatalf("Reader accepted what Decode refused (%v): %+v", err, rm)
			}
			return
		}
		if cerr := Check(&m); cerr != nil {
			t.Fatalf("decoded %+v fails Check: %v", m, cerr)
		}
		again := Append(nil, &m)[4:]
		if !bytes.Equal(again, body) {
			t.Fatalf("not canonical:\n in  %x\n out %x", body, again)
		}
		if rerr != nil {
			t.Fatalf("Reader refused what Decode accepted: %v", rerr)
		}
		if d := cmp.Diff(m, rm, msgCmp); d != "" {
			t.Fatalf("Reader and Decode differ:\n%s", d)
		}
	})
}
