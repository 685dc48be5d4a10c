//go:build mpi

package mpi_test

import (
	"bytes"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fibermpi/fibermpi/packet"
	"github.com/fibermpi/fibermpi/rdma"
	"github.com/fibermpi/fibermpi/rdma/mpi"
)

// rtsCatcher keeps the RTS packets (moved messages' heads) that reach its
// endpoint, for the test to take their bytes with TakeMoved.
type rtsCatcher struct {
	got chan *packet.Packet
}

func (c *rtsCatcher) Receive(w int, pk *packet.Packet) { c.got <- pk }

// putEnd counts the ends of moved sends and receives and keeps their
// first error.
type putEnd struct {
	n   atomic.Int32
	err atomic.Pointer[error]
}

func (e *putEnd) PutDone(w int, err error) {
	if err != nil {
		e.err.CompareAndSwap(nil, &err)
	}
	e.n.Add(1)
}

// TestMovedPieces moves messages between two transports of this process
// (one MPI rank talking to itself) with Whole 128 and different
// MovedPieces: transport 0 moves a message of at most 4×128 bytes in
// pieces of 128 and a longer one whole, transport 1 moves every message
// whole. Messages go both ways, so each receiver posts what the RTS's
// token says, against its own Config: a receiver that followed its own
// would lose or scramble bytes, or post a receive that never completes.
// Sizes cover one piece, ragged ends, the bound and one byte over it;
// some receive buffers are short (truncation into a scratch buffer).
func TestMovedPieces(t *testing.T) {
	pool, err := packet.New(packet.Config{Workers: 1, PerWorker: 64, Shared: 256})
	if err != nil {
		t.Fatal(err)
	}
	trs := mpi.NewJob(t, 2, 2, func(r int) mpi.Config {
		c := mpi.Config{Pool: pool, Whole: 128, Logf: t.Logf}
		if r == 0 {
			c.MovedPieces = 4
		} else {
			c.MovedPieces = -1
		}
		return c
	})
	if !trs[0].Moves() {
		t.Skip("this MPI's MPI_TAG_UB leaves no room for moved messages")
	}
	catch := [2]*rtsCatcher{{got: make(chan *packet.Packet, 16)}, {got: make(chan *packet.Packet, 16)}}
	for a := range 2 {
		if err := trs[a].Bind(rdma.Addr(a), catch[a], pool); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []int{1, 127, 128, 129, 300, 511, 512, 513, 5000} {
		for _, short := range []bool{false, true} {
			for from := range 2 {
				t.Run(fmt.Sprintf("n=%d/short=%t/from=%d", n, short, from), func(t *testing.T) {
					moveOne(t, trs, pool, catch[1-from], from, n, short)
				})
			}
		}
	}
}

// moveOne moves n bytes from endpoint `from` to the other and checks
// them, polling both transports until both ends are done (10 s at most).
func moveOne(t *testing.T, trs []*mpi.Transport, pool *packet.Pool, catch *rtsCatcher, from, n int, short bool) {
	to := 1 - from
	data := make([]byte, n)
	for i := range data {
		data[i] = byte(i*13 + n + from)
	}
	pk := pool.Get(0)
	pk.Kind, pk.Size = packet.KindRTS, uint64(n)
	var ends putEnd
	if err := trs[from].SendMoved(0, rdma.Addr(to), pk, data, &ends); err != nil {
		t.Fatalf("SendMoved: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	poll := func() {
		trs[0].Progress(0)
		trs[1].Progress(0)
		if time.Now().After(deadline) {
			t.Fatalf("not done after 10 s: %d of 2 ends", ends.n.Load())
		}
	}
	var rts *packet.Packet
	for rts == nil {
		select {
		case rts = <-catch.got:
		default:
			poll()
		}
	}
	size, token := int(rts.Size), rts.RecvID
	pool.Put(0, rts)
	if size != n {
		t.Fatalf("the RTS says %d bytes, want %d", size, n)
	}
	buf := make([]byte, n)
	if short {
		buf = make([]byte, n/2)
	}
	if err := trs[to].TakeMoved(0, rdma.Addr(from), token, buf, size, &ends); err != nil {
		t.Fatalf("TakeMoved: %v", err)
	}
	for ends.n.Load() < 2 {
		poll()
	}
	if p := ends.err.Load(); p != nil {
		t.Fatalf("a moved message's end: %v", *p)
	}
	if !bytes.Equal(buf, data[:len(buf)]) {
		t.Errorf("the %d bytes received differ from the first %d sent", len(buf), len(buf))
	}
}

// TestMovedBadTokens checks that TakeMoved refuses tokens that no
// SendMoved makes (a receive for them would never complete, or post
// without bound) with ErrBadToken, posting nothing.
func TestMovedBadTokens(t *testing.T) {
	pool, err := packet.New(packet.Config{Workers: 1, PerWorker: 16, Shared: 64})
	if err != nil {
		t.Fatal(err)
	}
	trs := mpi.NewJob(t, 2, 2, func(int) mpi.Config { return mpi.Config{Pool: pool, Whole: 128, MovedPieces: 4, Logf: t.Logf} })
	if !trs[0].Moves() {
		t.Skip("this MPI's MPI_TAG_UB leaves no room for moved messages")
	}
	// A real token, to take its tag from.
	pk := pool.Get(0)
	pk.Kind, pk.Size = packet.KindRTS, 200
	var ends putEnd
	catch := &rtsCatcher{got: make(chan *packet.Packet, 1)}
	if err := trs[1].Bind(1, catch, pool); err != nil {
		t.Fatal(err)
	}
	if err := trs[0].Bind(0, &rtsCatcher{got: make(chan *packet.Packet, 1)}, pool); err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 200)
	if err := trs[0].SendMoved(0, 1, pk, data, &ends); err != nil {
		t.Fatal(err)
	}
	var rts *packet.Packet
	for deadline := time.Now().Add(10 * time.Second); rts == nil; {
		select {
		case rts = <-catch.got:
		default:
			trs[0].Progress(0)
			trs[1].Progress(0)
			if time.Now().After(deadline) {
				t.Fatal("no RTS after 10 s")
			}
		}
	}
	good := rts.RecvID
	pool.Put(0, rts)
	if good>>32 != 128 {
		t.Fatalf("token %#x of a 200-byte message under Whole 128: pieces of %d bytes, want 128", good, good>>32)
	}
	tag := good & (1<<32 - 1)
	for _, tc := range []struct {
		name  string
		token uint64
		size  int
	}{
		{"tag below the moved tags", 5, 200},
		{"tag above the moved tags", 1<<31 + 5, 200},
		{"pieces of 127 bytes", tag | 127<<32, 200},
		{"65 pieces", tag | 128<<32, 65 * 128},
		{"pieces over MPI's largest message", tag | (1<<30+1)<<32, 200},
		{"negative size", tag, -1},
	} {
		err := trs[1].TakeMoved(0, 0, tc.token, make([]byte, 16), tc.size, &ends)
		if !errors.Is(err, mpi.ErrBadToken) {
			t.Errorf("%s: TakeMoved = %v, want ErrBadToken", tc.name, err)
		}
	}
	// The real one still completes, both ends.
	buf := make([]byte, 200)
	if err := trs[1].TakeMoved(0, 0, good, buf, 200, &ends); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ends.n.Load() < 2; {
		trs[0].Progress(0)
		trs[1].Progress(0)
		if time.Now().After(deadline) {
			t.Fatalf("not done after 10 s: %d of 2 ends", ends.n.Load())
		}
	}
	if p := ends.err.Load(); p != nil {
		t.Fatal(*p)
	}
}
