//go:build linux

package shm_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fibermpi/fibermpi/packet"
	"github.com/fibermpi/fibermpi/rdma"
	"github.com/fibermpi/fibermpi/rdma/shm"
)

// The multi-process tests: the test binary runs itself again as rank 1 of
// a two-process job (TestMain sees childEnv), rank 0 being the test. The
// two find each other through a fileExchange in a temporary directory.

const (
	childEnv  = "FIBERMPI_SHM_TEST_CHILD" // the child's role
	dirEnv    = "FIBERMPI_SHM_TEST_DIR"   // the exchange directory
	jobEnv    = "FIBERMPI_SHM_TEST_JOB"   // the job id
	copyEnv   = "FIBERMPI_SHM_TEST_COPY"  // "1": ForceCopy
	procLimit = 60 * time.Second          // bounds every wait of these tests
)

// Stream numbers (packet Context) of the multi-process protocols.
const (
	streamPing    = 1 // echoed by the peer
	streamRequest = 2 // answered by the peer with streamAnswer
	streamAnswer  = 3
	streamDone    = 4 // "I have everything": Tag is the count
	streamRegion  = 5 // payload: a Region to Get from and Put into
	streamPut     = 6 // the Put into your region is complete
	streamVerdict = 7 // Tag 1: the region holds what was Put
	streamReady   = 8
)

// node is one process of a two-process test job: its transport, pool and
// endpoint (address = rank), driven by one goroutine.
type node struct {
	tr       *shm.Transport
	pool     *packet.Pool
	me, peer rdma.Addr
	recv     func(pk *packet.Packet) // handles every arrival; owns pk
	backlog  []*packet.Packet        // sends to peer refused with ErrAgain, in order
	err      error                   // the first failure found in recv
}

func (n *node) Receive(w int, pk *packet.Packet) { n.recv(pk) }

func (n *node) fail(format string, args ...any) {
	if n.err == nil {
		n.err = fmt.Errorf(format, args...)
	}
}

// newNode joins the job as rank of two through dir and binds its
// endpoint.
func newNode(dir, job string, rank int, forceCopy bool) (*node, error) {
	pool, err := packet.New(packet.Config{Workers: 1, PerWorker: 16, Shared: 512, PayloadSize: 1024})
	if err != nil {
		return nil, err
	}
	ex := &fileExchange{dir: dir, job: job, rank: rank, size: 2}
	tr, err := shm.New(shm.Config{
		Exchange: ex, Layout: rdma.NewLayout(2), Peers: []int{1 - rank},
		Pool: pool, RingSize: 64 << 10, ForceCopy: forceCopy,
	})
	if err != nil {
		return nil, err
	}
	n := &node{tr: tr, pool: pool, me: rdma.Addr(rank), peer: rdma.Addr(1 - rank)}
	if err := tr.Bind(n.me, n, pool); err != nil {
		tr.Close()
		return nil, err
	}
	// Sends to the peer's endpoint fail until the peer has bound it.
	if err := ex.Fence(); err != nil {
		tr.Close()
		return nil, err
	}
	return n, nil
}

// fillData writes the payload of (stream, seq) into b.
func fillData(b []byte, stream, seq uint32) {
	x := uint64(stream)<<32 | uint64(seq) | 1
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x)
	}
}

// dataLen is the payload length of (stream, seq).
func dataLen(stream, seq uint32, capacity int) int {
	switch seq % 4 {
	case 0:
		return 0
	case 1:
		return 8
	case 2:
		return capacity
	}
	return int((seq*2654435761 + stream) % uint32(capacity+1))
}

// stamp makes pk the packet (stream, seq).
func stampPacket(pk *packet.Packet, from rdma.Addr, stream, seq uint32) {
	pk.Context, pk.Tag, pk.From, pk.SendID, pk.Kind = stream, int32(seq), uint32(from), uint64(seq)<<20|uint64(stream), packet.KindEager
	n := dataLen(stream, seq, pk.Cap())
	fillData(pk.Payload()[:n], stream, seq)
	pk.SetLen(n)
}

// check returns what is wrong with the packet (stream, seq) as it arrived.
func checkPacket(pk *packet.Packet, from rdma.Addr, stream, seq uint32) error {
	if pk.Context != stream || pk.Tag != int32(seq) || pk.From != uint32(from) || pk.SendID != uint64(seq)<<20|uint64(stream) || pk.Kind != packet.KindEager {
		return fmt.Errorf("packet %d of stream %d from %d: header %v", seq, stream, from, pk)
	}
	want := make([]byte, dataLen(stream, seq, pk.Cap()))
	fillData(want, stream, seq)
	if !bytes.Equal(pk.Data(), want) {
		return fmt.Errorf("packet %d of stream %d: payload of %d bytes differs (want %d bytes)", seq, stream, pk.Len(), len(want))
	}
	return nil
}

// send sends pk to the peer from inside or outside Receive: behind the
// backlog, or into it when the ring is full.
func (n *node) send(pk *packet.Packet) {
	if len(n.backlog) == 0 {
		err := n.tr.Send(packet.NoWorker, n.peer, pk)
		if err == nil {
			return
		}
		if !errors.Is(err, rdma.ErrAgain) {
			n.fail("Send: %v", err)
			n.pool.Put(packet.NoWorker, pk)
			return
		}
	}
	n.backlog = append(n.backlog, pk)
}

// progress delivers arrivals and sends the backlog; it returns how much
// it did.
func (n *node) progress() int {
	k := n.tr.Progress(packet.NoWorker)
	for len(n.backlog) > 0 {
		err := n.tr.Send(packet.NoWorker, n.peer, n.backlog[0])
		if errors.Is(err, rdma.ErrAgain) {
			break
		}
		if err != nil {
			n.fail("Send from the backlog: %v", err)
			n.pool.Put(packet.NoWorker, n.backlog[0])
		}
		n.backlog = n.backlog[1:]
		k++
	}
	return k
}

// until drives progress until cond holds, sleeping when idle, for at most
// procLimit.
func (n *node) until(what string, cond func() bool) error {
	deadline := time.Now().Add(procLimit)
	for idle := 0; !cond(); {
		if n.err != nil {
			return n.err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("rank %d: timed out waiting for %s", n.me, what)
		}
		if n.progress() > 0 {
			idle = 0
			continue
		}
		if idle++; idle > 100 {
			if err := n.tr.CheckPeers(); err != nil {
				return err
			}
			n.tr.Sleep(10 * time.Millisecond)
		}
	}
	return n.err
}

// get takes a packet, driving progress while the pool is dry, and keeps
// new messages behind the backlog (see rdmatest's sendRetry for why).
func (n *node) get() (*packet.Packet, error) {
	var pk *packet.Packet
	err := n.until("a free packet and an empty backlog", func() bool {
		if len(n.backlog) > 0 {
			return false
		}
		if pk == nil {
			pk = n.pool.Get(packet.NoWorker)
		}
		return pk != nil
	})
	return pk, err
}

// sendNew sends a fresh packet (stream, seq) to the peer.
func (n *node) sendNew(stream, seq uint32) error {
	pk, err := n.get()
	if err != nil {
		return err
	}
	stampPacket(pk, n.me, stream, seq)
	n.send(pk)
	return n.err
}

// floodWindow is the packets each side sends before it waits, in the
// flood phase.
const floodWindow = 10000

// pingPongAndFlood is the protocol both processes of TestProcesses run:
// rank 0 pings, rank 1 echoes; then both flood each other with requests
// that the other answers, and say when they have every answer.
func (n *node) pingPongAndFlood(pings int) error {
	var next [8]uint32 // next expected seq per stream
	peerDone := false
	n.recv = func(pk *packet.Packet) {
		stream, seq := pk.Context, uint32(pk.Tag)
		if stream < uint32(len(next)) && stream != streamDone {
			if err := checkPacket(pk, n.peer, stream, seq); err != nil {
				n.fail("rank %d: %v", n.me, err)
			} else if seq != next[stream] {
				n.fail("rank %d: stream %d: seq %d, want %d", n.me, stream, seq, next[stream])
			}
			next[stream] = seq + 1
		}
		switch stream {
		case streamPing:
			if n.me == 1 { // echo it, as it came
				stampPacket(pk, n.me, streamPing, seq)
				n.send(pk)
				return
			}
		case streamRequest:
			stampPacket(pk, n.me, streamAnswer, seq)
			n.send(pk)
			return
		case streamDone:
			peerDone = true
		}
		n.pool.Put(packet.NoWorker, pk)
	}
	if n.me == 0 {
		for i := range uint32(pings) {
			if err := n.sendNew(streamPing, i); err != nil {
				return err
			}
			if err := n.until("an echo", func() bool { return next[streamPing] > i }); err != nil {
				return err
			}
		}
	} else if err := n.until("the pings", func() bool { return next[streamPing] == uint32(pings) }); err != nil {
		return err
	}
	for i := range uint32(floodWindow) {
		if err := n.sendNew(streamRequest, i); err != nil {
			return err
		}
	}
	if err := n.until("every answer", func() bool { return next[streamAnswer] == floodWindow }); err != nil {
		return err
	}
	if err := n.sendNew(streamDone, 0); err != nil {
		return err
	}
	if err := n.until("the peer to finish", func() bool { return peerDone && len(n.backlog) == 0 }); err != nil {
		return err
	}
	if next[streamRequest] != floodWindow {
		return fmt.Errorf("rank %d: %d requests arrived, want %d", n.me, next[streamRequest], floodWindow)
	}
	return nil
}

// rendezvous is the protocol of TestProcessesMemory: rank 1 registers a
// buffer and sends its Region; rank 0 Gets it, checks it, Puts a new
// pattern and says so; rank 1 checks its buffer and answers.
func (n *node) rendezvous(size int) error {
	var region *rdma.Region
	verdict, put := -1, false
	n.recv = func(pk *packet.Packet) {
		switch pk.Context {
		case streamRegion:
			r, err := rdma.ParseRegion(pk.Data())
			if err != nil {
				n.fail("region: %v", err)
			}
			region = &r
		case streamPut:
			put = true
		case streamVerdict:
			verdict = int(pk.Tag)
		}
		n.pool.Put(packet.NoWorker, pk)
	}
	control := func(stream uint32, tag int32, data []byte) error {
		pk, err := n.get()
		if err != nil {
			return err
		}
		pk.Context, pk.Tag, pk.Kind = stream, tag, packet.KindControl
		if err := pk.SetData(data); err != nil {
			return err
		}
		n.send(pk)
		return n.err
	}
	if n.me == 1 {
		buf := make([]byte, size)
		fillData(buf, 1, uint32(size))
		r, err := n.tr.Register(buf)
		if err != nil {
			return err
		}
		if err := control(streamRegion, 0, rdma.AppendRegion(nil, r)); err != nil {
			return err
		}
		if err := n.until("the Put", func() bool { return put }); err != nil {
			return err
		}
		want := make([]byte, size)
		fillData(want, 2, uint32(size))
		want[0] = buf[0] // the Put skips the first byte
		ok := int32(0)
		if bytes.Equal(buf, want) {
			ok = 1
		}
		if err := n.tr.Deregister(r); err != nil {
			return err
		}
		if err := control(streamVerdict, ok, nil); err != nil {
			return err
		}
		// Stay until rank 0 has the verdict: it says so by closing
		// the job (the test waits for this process's exit).
		return n.until("the verdict to leave", func() bool { return len(n.backlog) == 0 })
	}
	if err := n.until("the region", func() bool { return region != nil }); err != nil {
		return err
	}
	got := make([]byte, size)
	if err := n.tr.Get(n.peer, *region, 0, got); err != nil {
		return fmt.Errorf("Get: %w", err)
	}
	want := make([]byte, size)
	fillData(want, 1, uint32(size))
	if !bytes.Equal(got, want) {
		return fmt.Errorf("Get of %d bytes read other bytes than the owner has", size)
	}
	src := make([]byte, size)
	fillData(src, 2, uint32(size))
	if err := n.tr.Put(n.peer, *region, 1, src[1:]); err != nil {
		return fmt.Errorf("Put: %w", err)
	}
	if err := control(streamPut, 0, nil); err != nil {
		return err
	}
	if err := n.until("the verdict", func() bool { return verdict >= 0 }); err != nil {
		return err
	}
	if verdict != 1 {
		return fmt.Errorf("the owner's buffer does not hold what was Put")
	}
	return nil
}

// runChild is rank 1: it runs role and returns the exit code.
func runChild(role string) int {
	n, err := newNode(os.Getenv(dirEnv), os.Getenv(jobEnv), 1, os.Getenv(copyEnv) == "1")
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	switch role {
	case "flood":
		err = n.pingPongAndFlood(pingCount)
	case "memory":
		err = n.rendezvous(memorySize)
	case "echo":
		err = runEcho(n)
	case "wait":
		// Say so, then deliver until killed (or the time runs out).
		n.recv = func(pk *packet.Packet) { n.pool.Put(packet.NoWorker, pk) }
		if err = n.sendNew(streamReady, 0); err == nil {
			err = n.until("SIGKILL", func() bool { return false })
		}
	default:
		err = fmt.Errorf("unknown role %q", role)
	}
	n.tr.Close()
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	return 0
}

const (
	pingCount  = 2000
	memorySize = 3<<20 + 123
)

// child is a running rank 1.
type child struct {
	cmd  *exec.Cmd
	out  lockedBuffer
	done chan error
}

// startChild starts rank 1 in role; the job's clean-up kills it if it is
// still running and removes what it may have left in /dev/shm.
func startChild(t testing.TB, role, dir, job string, forceCopy bool) *child {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*procLimit)
	c := &child{done: make(chan error, 1)}
	c.cmd = exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cp := "0"
	if forceCopy {
		cp = "1"
	}
	c.cmd.Env = append(os.Environ(), childEnv+"="+role, dirEnv+"="+dir, jobEnv+"="+job, copyEnv+"="+cp)
	c.cmd.Stdout, c.cmd.Stderr = &c.out, &c.out
	if err := c.cmd.Start(); err != nil {
		cancel()
		t.Fatalf("starting the child: %v", err)
	}
	go func() { c.done <- c.cmd.Wait(); cancel() }()
	t.Cleanup(func() {
		select {
		case <-c.done:
		default:
			_ = c.cmd.Process.Kill()
			<-c.done
		}
		if left := segments(job); len(left) > 0 {
			t.Errorf("segments left behind: %v", left)
			for _, f := range left {
				_ = os.Remove(f)
			}
		}
	})
	return c
}

// wait waits for the child's exit, at most procLimit.
func (c *child) wait(t testing.TB) {
	t.Helper()
	select {
	case err := <-c.done:
		c.done <- err // for the clean-up
		if err != nil {
			t.Fatalf("the child failed: %v\n%s", err, c.out.String())
		}
	case <-time.After(procLimit):
		t.Fatalf("the child did not finish in %v\n%s", procLimit, c.out.String())
	}
}

// segments lists the files of job in /dev/shm.
func segments(job string) []string {
	left, _ := filepath.Glob(filepath.Join(shm.DefaultDir, "fibermpi-"+job+"-*"))
	return left
}

var procJobs sync.Mutex

// newProcJob returns a fresh exchange directory and job id.
func newProcJob(t *testing.T) (dir, job string) {
	procJobs.Lock()
	defer procJobs.Unlock()
	return t.TempDir(), "proc" + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(jobCounter.Add(1), 10)
}

func modes(t *testing.T, run func(t *testing.T, forceCopy bool)) {
	for _, forceCopy := range []bool{false, true} {
		name := "cma"
		if forceCopy {
			name = "copy"
		}
		t.Run(name, func(t *testing.T) { run(t, forceCopy) })
	}
}

// TestProcesses: two real processes ping-pong 2000 packets, then flood
// each other with windows of 10^4 requests that the other answers, with
// 64 KiB rings; every packet is checked.
func TestProcesses(t *testing.T) {
	modes(t, func(t *testing.T, forceCopy bool) {
		dir, job := newProcJob(t)
		c := startChild(t, "flood", dir, job, forceCopy)
		n, err := newNode(dir, job, 0, forceCopy)
		if err != nil {
			t.Fatalf("New: %v\nchild: %s", err, c.out.String())
		}
		defer n.tr.Close()
		if want := map[bool]string{false: "shm+cma", true: "shm+copy"}[forceCopy]; n.tr.Name() != want {
			t.Errorf("Name() = %q, want %q", n.tr.Name(), want)
		}
		if err := n.pingPongAndFlood(pingCount); err != nil {
			t.Fatalf("%v\nchild: %s", err, c.out.String())
		}
		c.wait(t)
	})
}

// TestProcessesMemory: a Get and a Put of 3 MiB between two processes, by
// cross-memory attach and copied through the rings.
func TestProcessesMemory(t *testing.T) {
	modes(t, func(t *testing.T, forceCopy bool) {
		dir, job := newProcJob(t)
		c := startChild(t, "memory", dir, job, forceCopy)
		n, err := newNode(dir, job, 0, forceCopy)
		if err != nil {
			t.Fatalf("New: %v\nchild: %s", err, c.out.String())
		}
		defer n.tr.Close()
		if err := n.rendezvous(memorySize); err != nil {
			t.Fatalf("%v\nchild: %s", err, c.out.String())
		}
		c.wait(t)
	})
}

// TestKilledLeavesNothing: once New has returned in both processes, their
// segments exist only as mappings; a process killed with SIGKILL leaves no
// file in /dev/shm, and the survivor's CheckPeers names it.
func TestKilledLeavesNothing(t *testing.T) {
	dir, job := newProcJob(t)
	c := startChild(t, "wait", dir, job, false)
	n, err := newNode(dir, job, 0, false)
	if err != nil {
		t.Fatalf("New: %v\nchild: %s", err, c.out.String())
	}
	defer n.tr.Close()
	ready := false
	n.recv = func(pk *packet.Packet) {
		ready = ready || pk.Context == streamReady
		n.pool.Put(packet.NoWorker, pk)
	}
	if err := n.until("the child to be ready", func() bool { return ready }); err != nil {
		t.Fatalf("%v\nchild: %s", err, c.out.String())
	}
	if left := segments(job); len(left) > 0 {
		t.Errorf("after set-up, files are left in %s: %v", shm.DefaultDir, left)
	}
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("kill: %v", err)
	}
	select {
	case err := <-c.done:
		c.done <- err
		if ws, ok := c.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
			t.Fatalf("the child ended otherwise than by SIGKILL: %v\n%s", err, c.out.String())
		}
	case <-time.After(procLimit):
		t.Fatal("the killed child did not exit")
	}
	if left := segments(job); len(left) > 0 {
		t.Errorf("after SIGKILL, files are left in %s: %v", shm.DefaultDir, left)
	}
	if err := n.tr.CheckPeers(); !errors.Is(err, shm.ErrPeerGone) {
		t.Errorf("CheckPeers after the peer died: %v, want ErrPeerGone", err)
	} else if pe, ok := errors.AsType[*shm.PeerError](err); !ok || pe.Rank != 1 {
		t.Errorf("CheckPeers: %v, want a PeerError naming rank 1", err)
	}
}

// lockedBuffer is the child's output: the child writes it (through the
// command's copying goroutine) while the test may read it to report a
// failure.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
