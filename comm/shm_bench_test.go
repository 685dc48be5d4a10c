//go:build linux

package comm_test

import (
	"testing"

	"github.com/fibermpi/fibermpi/comm"
	"github.com/fibermpi/fibermpi/internal/jobtest"
	"github.com/fibermpi/fibermpi/internal/testenv"
)

// BenchmarkShmLoopbackWindow is osu_mbw_mr's loop through every layer
// (Comm[T], the endpoint, shared memory), both ends in one goroutine: two
// processes of a job simulated in this OS process (jobtest.ShmPair), 64
// receives posted with IrecvInto, 64 sends with IsendInto and WaitAll over
// them, then WaitAll over the receives, whose first poll delivers the
// window. One op is one message; cpu-ns/op is the processor time of both
// ends, without the cross-core traffic of two processes.
//
//	go test -run '^$' -bench ShmLoopbackWindow -count 6 ./comm
func BenchmarkShmLoopbackWindow(b *testing.B) {
	cf, ct, done := shmWorlds(b)
	defer done()
	const window = 64
	sbuf, rbuf := []byte("8 bytes!"), make([]byte, 8)
	var sreqs, rreqs [window]comm.Request[byte]
	swait, rwait := make([]comm.Waitable, window), make([]comm.Waitable, window)
	for i := range window {
		swait[i], rwait[i] = &sreqs[i], &rreqs[i]
	}
	round := func() {
		for i := range window {
			if err := ct.IrecvInto(&rreqs[i], rbuf, 0, 1); err != nil {
				b.Fatal(err)
			}
		}
		for i := range window {
			if err := cf.IsendInto(&sreqs[i], sbuf, 1, 1); err != nil {
				b.Fatal(err)
			}
		}
		if err := comm.WaitAll(swait...); err != nil {
			b.Fatal(err)
		}
		if err := comm.WaitAll(rwait...); err != nil {
			b.Fatal(err)
		}
	}
	testenv.BenchWindows(b, window, round)
	if string(rbuf) != string(sbuf) {
		b.Fatalf("received %q, want %q", rbuf, sbuf)
	}
}

// BenchmarkShmLoopbackPingPong is osu_latency's path through every layer,
// both ends in one goroutine (jobtest.ShmPair): one op is a blocking Send
// of 8 bytes from one process and the blocking Recv that takes it in the
// other (posted when the message is already in its ring, where a waiting
// receiver of osu_latency posts first: the path differs in the matching
// table's order only).
//
//	go test -run '^$' -bench ShmLoopbackPingPong -count 6 ./comm
func BenchmarkShmLoopbackPingPong(b *testing.B) {
	cf, ct, done := shmWorlds(b)
	defer done()
	sbuf, rbuf := []byte("8 bytes!"), make([]byte, 8)
	for b.Loop() {
		if err := cf.Send(sbuf, 1, 1); err != nil {
			b.Fatal(err)
		}
		if _, err := ct.Recv(rbuf, 0, 1); err != nil {
			b.Fatal(err)
		}
	}
	if string(rbuf) != string(sbuf) {
		b.Fatalf("received %q, want %q", rbuf, sbuf)
	}
}

// shmWorlds returns the world communicators of the two processes of a
// jobtest.ShmPair, from and to, and the cleanup that finalizes them.
func shmWorlds(b *testing.B) (from, to *comm.Comm[byte], done func()) {
	ef, et, done := jobtest.ShmPair(b)
	from, err := comm.World[byte](ef)
	if err == nil {
		to, err = comm.World[byte](et)
	}
	if err != nil {
		done()
		b.Fatal(err)
	}
	return from, to, done
}
