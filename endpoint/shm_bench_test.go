//go:build linux

package endpoint_test

import (
	"testing"

	"github.com/fibermpi/fibermpi/endpoint"
	"github.com/fibermpi/fibermpi/internal/jobtest"
	"github.com/fibermpi/fibermpi/internal/testenv"
)

// BenchmarkShmLoopback: two processes of a job, simulated in this OS
// process and joined by shared memory (rdma/shm, as between processes of a
// node), and one goroutine that sends 8 bytes from process 0's endpoint to
// process 1's and receives them there, its Recv driving process 1's
// progress (ProgressCaller). It is the processor time of a whole one-way
// message, both ends, without waiting for another core: on a loaded
// machine the cross-core figures (fmpi-osu) measure the scheduler.
//
//	go test -run '^$' -bench ShmLoopback -count 6 ./endpoint
func BenchmarkShmLoopback(b *testing.B) {
	from, to, done := jobtest.ShmPair(b)
	defer done()
	sbuf, rbuf := []byte("8 bytes!"), make([]byte, 8)
	wf, wt := from.World(), to.World()
	// Warm the path (offers, pools) before timing.
	for range 1000 {
		if err := from.Send(wf, 0, 1, 0, sbuf); err != nil {
			b.Fatal(err)
		}
		if _, err := to.Recv(wt, 0, 0, rbuf); err != nil {
			b.Fatal(err)
		}
	}
	cpu := testenv.ProcessCPU()
	for b.Loop() {
		if err := from.Send(wf, 0, 1, 0, sbuf); err != nil {
			b.Fatal(err)
		}
		if _, err := to.Recv(wt, 0, 0, rbuf); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(testenv.ProcessCPU()-cpu)/float64(b.N), "cpu-ns/op")
	if string(rbuf) != string(sbuf) {
		b.Fatalf("received %q, want %q", rbuf, sbuf)
	}
}

// BenchmarkShmLoopbackWindow is BenchmarkShmLoopback in osu_mbw_mr's
// pattern: 64 receives posted, 64 sends, then a wait for each receive;
// one op is one message.
func BenchmarkShmLoopbackWindow(b *testing.B) {
	from, to, done := jobtest.ShmPair(b)
	defer done()
	const window = 64
	sbuf := []byte("8 bytes!")
	rbufs := make([][]byte, window)
	for i := range rbufs {
		rbufs[i] = make([]byte, 8)
	}
	reqs := make([]endpoint.Request, window)
	wf, wt := from.World(), to.World()
	round := func() {
		for i := range window {
			if err := to.IrecvInto(&reqs[i], wt, 0, 0, rbufs[i]); err != nil {
				b.Fatal(err)
			}
		}
		for range window {
			if _, err := from.Isend(wf, 0, 1, 0, sbuf); err != nil {
				b.Fatal(err)
			}
		}
		for i := range window {
			if err := to.Wait(&reqs[i]); err != nil {
				b.Fatal(err)
			}
		}
	}
	testenv.BenchWindows(b, window, round)
}
