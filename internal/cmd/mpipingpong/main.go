//go:build mpi

// Command mpipingpong measures the bare rdma/mpi transport, without the
// endpoint stack: under an MPI launcher with two processes, process 0
// sends a packet of -size payload bytes to process 1, whose Receiver sends
// it straight back, and polls Progress on a locked OS thread until it is
// back; it prints the one-way latency (half a round trip) in
// microseconds, the OSU way, to set beside fmpi-osu latency over the same
// transport (FIBERMPI_TRANSPORT=mpi) and raw MPI's osu_latency:
//
//	mpiexec.mpich -n 2 mpipingpong -size 8
//
// With -eager, the messages take the path of fmpi-osu's eager messages:
// sent with SendEager from the caller's buffer and taken by ReceiveEager
// straight from the transport's memory, no packet on either side; process
// 1 answers from its loop, as a receive that completes and a send that
// follows do.
//
// Build with -tags mpi (MPICH) or -tags mpi,ompi (Open MPI).
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/fibermpi/fibermpi/bootstrap"
	"github.com/fibermpi/fibermpi/packet"
	"github.com/fibermpi/fibermpi/rdma"
	"github.com/fibermpi/fibermpi/rdma/mpi"
)

func main() {
	size := flag.Int("size", 8, "payload bytes")
	iters := flag.Int("i", 100000, "timed round trips")
	warm := flag.Int("x", 10000, "warm-up round trips")
	eager := flag.Bool("eager", false, "SendEager and ReceiveEager instead of packets")
	flag.Parse()
	if err := run(*size, *iters, *warm, *eager); err != nil {
		fmt.Fprintln(os.Stderr, "mpipingpong:", err)
		os.Exit(1)
	}
}

// echo sends every arrival back to where it came from (the peer's
// address), from inside Receive, as the endpoint layer's protocol does.
type echo struct {
	tr   rdma.Transport
	pool *packet.Pool
	peer rdma.Addr
	got  atomic.Int64
	err  atomic.Pointer[error]
}

func (e *echo) Receive(w int, pk *packet.Packet) {
	e.got.Add(1)
	if e.peer == 0 { // process 1: answer
		if err := e.tr.Send(w, e.peer, pk); err != nil {
			e.err.Store(&err)
		}
		return
	}
	e.pool.Put(w, pk)
}

// eagerEcho takes every eager arrival straight into buf; the loop answers.
// An arrival the transport delivers as a packet after all (when it cannot
// take the direct path) is counted the same way, not answered here.
type eagerEcho struct {
	echo
	buf []byte
}

func (e *eagerEcho) Receive(w int, pk *packet.Packet) {
	copy(e.buf, pk.Data())
	e.pool.Put(w, pk)
	e.got.Add(1)
}

func (e *eagerEcho) ReceiveEager(w int, h rdma.EagerHeader, data []byte) bool {
	copy(e.buf, data)
	e.got.Add(1)
	return true
}

func run(size, iters, warm int, eager bool) error {
	runtime.LockOSThread()
	boot, err := bootstrap.Detect()
	if err != nil {
		return err
	}
	defer boot.Close()
	if boot.Size() != 2 {
		return fmt.Errorf("run with 2 processes, not %d", boot.Size())
	}
	me := boot.Rank()
	pool, err := packet.New(packet.Config{Workers: 1, PerWorker: 64, Shared: 256})
	if err != nil {
		return err
	}
	tr, err := mpi.New(mpi.Config{Exchange: boot, Layout: rdma.NewLayout(2), Peers: []int{1 - me}, Pool: pool})
	if err != nil {
		return err
	}
	defer tr.Close()
	ee := &eagerEcho{echo: echo{tr: tr, pool: pool, peer: rdma.Addr(1 - me)}, buf: make([]byte, size)}
	var recv rdma.Receiver = &ee.echo
	if eager {
		recv = ee
	}
	if err := tr.Bind(rdma.Addr(me), recv, pool); err != nil {
		return err
	}
	if err := boot.Barrier(); err != nil { // both bound
		return err
	}
	if eager {
		err = pingPongEager(tr, me, ee, size, iters, warm)
	} else {
		err = pingPong(tr, pool, me, &ee.echo, size, iters, warm)
	}
	if err != nil {
		return err
	}
	if err := boot.Barrier(); err != nil { // both done with the transport
		return err
	}
	if err := tr.Close(); err != nil {
		return err
	}
	// Close's messages to the peer are in before MPI_Finalize (boot.Close)
	// cancels the ring's receives: none arrives unmatched.
	return boot.Barrier()
}

// w is the worker index of the program's one caller in the pool.
const w = 0

// pingPong sends packets; process 1's Receiver answers from Receive.
func pingPong(tr *mpi.Transport, pool *packet.Pool, me int, e *echo, size, iters, warm int) error {
	if me == 1 {
		for want := int64(warm + iters); e.got.Load() < want; {
			tr.Progress(w)
			if p := e.err.Load(); p != nil {
				return *p
			}
		}
		return nil
	}
	data := make([]byte, size)
	var t0 time.Time
	for i := range warm + iters {
		if i == warm {
			t0 = time.Now()
		}
		pk, err := eagerPacket(pool, data)
		if err != nil {
			return err
		}
		if err := tr.Send(w, 1, pk); err != nil {
			return err
		}
		for e.got.Load() <= int64(i) {
			tr.Progress(w)
		}
	}
	report(size, time.Since(t0), iters)
	return nil
}

// pingPongEager sends with SendEager; both processes wait for each
// arrival in their loop, process 1 answering each.
func pingPongEager(tr *mpi.Transport, me int, e *eagerEcho, size, iters, warm int) error {
	data := make([]byte, size)
	send := func() error {
		if !tr.SendEager(w, e.peer, rdma.EagerHeader{From: rdma.Addr(me)}, data) {
			// SendEager does not say why; Send does, with a packet.
			pk, err := eagerPacket(e.pool, data)
			if err != nil {
				return fmt.Errorf("SendEager failed: %w", err)
			}
			if err := tr.Send(w, e.peer, pk); err != nil {
				return fmt.Errorf("SendEager failed: %w", err)
			}
			return fmt.Errorf("SendEager failed where Send did not")
		}
		return nil
	}
	var t0 time.Time
	for i := range int64(warm + iters) {
		if i == int64(warm) {
			t0 = time.Now()
		}
		if me == 0 {
			if err := send(); err != nil {
				return err
			}
		}
		for e.got.Load() <= i {
			tr.Progress(w)
		}
		if me == 1 {
			if err := send(); err != nil {
				return err
			}
		}
	}
	if me == 0 {
		report(size, time.Since(t0), iters)
	}
	return nil
}

// eagerPacket returns a packet of pool holding data as an eager message.
func eagerPacket(pool *packet.Pool, data []byte) (*packet.Packet, error) {
	pk := pool.Get(w)
	if pk == nil {
		return nil, fmt.Errorf("the pool is dry")
	}
	pk.Kind = packet.KindEager
	if err := pk.SetData(data); err != nil {
		pool.Put(w, pk)
		return nil, err
	}
	return pk, nil
}

// report prints the one-way latency, OSU's way: half a round trip.
func report(size int, d time.Duration, iters int) {
	fmt.Printf("%-10d%18.2f\n", size, float64(d)/float64(time.Microsecond)/float64(2*iters))
}
