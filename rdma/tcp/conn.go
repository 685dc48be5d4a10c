package tcp

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fibermpi/fibermpi/packet"
	"github.com/fibermpi/fibermpi/rdma"
)

// fBye tells the peer this side closes its transport on purpose.
const fBye = fPing + 1

// readBuf is the size of a connection's read buffer: small frames are
// read many at once; a payload larger than what is buffered is read
// straight into its destination.
const readBuf = 64 << 10

// maxPerCall bounds the arrivals one Progress call delivers from one
// connection.
const maxPerCall = 64

// seg is a piece of the outbound stream: bytes of the connection's own
// buffer, or a caller's (a Put's source, a Get's answer) written in place.
type seg struct {
	b   []byte
	own bool
}

// arrival is a packet taken off the socket, not delivered yet: built in
// the destination's pool (pk) or, when that was not possible (unbound
// address, dry pool), kept as its wire bytes (raw).
type arrival struct {
	pk   *packet.Packet
	pool *packet.Pool
	raw  []byte
	dst  rdma.Addr
	size int
}

// wait is a caller parked for a peer's answer.
type wait struct {
	dst []byte // a Get's destination
	ch  chan error
}

// conn is the connection to one peer process.
type conn struct {
	t    *Transport
	proc int
	nc   *net.TCPConn
	raw  syscall.RawConn
	br   *bufio.Reader

	// Outbound, under wmu.
	wmu      sync.Mutex
	segs     []seg
	spare    []seg // the writer's batch, swapped with segs
	free     [][]byte
	queued   int
	flushing bool
	kick     chan struct{}
	// Direct write's arguments and results (under wmu), so that the
	// function given to RawConn.Write is made once.
	dwBuf   []byte
	dwN     int
	dwErr   error
	dwFn    func(fd uintptr) bool
	writes  atomic.Uint64 // frames written, for the keep-alive
	reads   atomic.Uint64 // frames read, for the keep-alive
	lastR   uint64        // keep-alive goroutine's view
	lastW   uint64
	silent  int
	paused  atomic.Bool
	started bool
	closing bool // under wmu: a goodbye is queued; nothing more is

	// Inbound: arrivals in order, under imu; delivered under dmu.
	imu     sync.Mutex
	inbox   []arrival
	ihead   int
	inBytes atomic.Int64
	pending atomic.Int32
	raws    atomic.Int32 // arrivals kept as wire bytes in the inbox
	dmu     sync.Mutex
	resume  chan struct{}

	// Callers waiting for answers, by sequence number.
	cmu   sync.Mutex
	waits map[uint64]*wait

	// raceOut, raceIn are nil except in race builds (race.go).
	raceOut, raceIn *atomic.Uint64

	err    atomic.Pointer[error]
	done   chan struct{}
	failMu sync.Mutex
}

func (t *Transport) newConn(nc *net.TCPConn, br *bufio.Reader, p int) (*conn, error) {
	_ = nc.SetNoDelay(true)
	_ = nc.SetKeepAlive(false) // the transport's own keep-alive measures silence
	raw, err := nc.SyscallConn()
	if err != nil {
		return nil, err
	}
	c := &conn{t: t, proc: p, nc: nc, raw: raw, br: br, kick: make(chan struct{}, 1),
		resume: make(chan struct{}, 1), waits: make(map[uint64]*wait), done: make(chan struct{})}
	c.dwFn = c.directWrite
	l, r := nc.LocalAddr().String(), nc.RemoteAddr().String()
	c.raceOut, c.raceIn = raceWordFor(l, r), raceWordFor(r, l)
	return c, nil
}

func (c *conn) start() {
	c.started = true
	c.t.wg.Go(c.readLoop)
	c.t.wg.Go(c.writeLoop)
}

// failed returns the connection's error, or nil while it works.
func (c *conn) failed() error {
	if e := c.err.Load(); e != nil {
		return *e
	}
	return nil
}

// fail records why the connection ended (the first reason wins), closes
// it, answers every waiting caller with the error and logs it once.
func (c *conn) fail(err error) {
	c.failMu.Lock()
	if c.err.Load() != nil {
		c.failMu.Unlock()
		return
	}
	var pe *PeerError
	if !errors.As(err, &pe) {
		err = &PeerError{Rank: c.proc, Err: err}
	}
	c.err.Store(&err)
	close(c.done)
	c.failMu.Unlock()
	_ = c.nc.Close()
	c.cmu.Lock()
	ws := c.waits
	c.waits = map[uint64]*wait{}
	c.cmu.Unlock()
	for _, w := range ws {
		w.ch <- err
	}
	if !c.t.closed.Load() && !errors.Is(err, ErrPeerClosed) {
		c.t.cfg.Logf("tcp: process %d: connection to process %d failed: %v", c.t.rank, c.proc, err)
	}
	c.t.wakeSleeper()
}

// readErr turns a read error into the error of the peer's loss.
func readErr(err error) error {
	switch {
	case errors.Is(err, ErrProtocol):
		return err
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%w: connection closed without a goodbye", ErrPeerGone)
	}
	return fmt.Errorf("%w: %w", ErrPeerGone, err)
}

// --- Outbound ---

// appendOwn appends n bytes made by fill to the stream, in the last own
// segment. The caller holds wmu.
func (c *conn) appendOwn(fill func([]byte) []byte) {
	if k := len(c.segs); k > 0 && c.segs[k-1].own {
		before := len(c.segs[k-1].b)
		c.segs[k-1].b = fill(c.segs[k-1].b)
		c.queued += len(c.segs[k-1].b) - before
		return
	}
	var b []byte
	if k := len(c.free); k > 0 {
		b, c.free = c.free[k-1][:0], c.free[:k-1]
	}
	b = fill(b)
	c.queued += len(b)
	c.segs = append(c.segs, seg{b: b, own: true})
}

// sendPacket frames pk (which the caller keeps) into the stream: written
// at once when nothing waits before it, else queued for the writer.
func (c *conn) sendPacket(dst uint32, pk *packet.Packet) error {
	n := pk.Len()
	c.wmu.Lock()
	if err := c.failed(); err != nil {
		c.wmu.Unlock()
		return err
	}
	if c.closing {
		c.wmu.Unlock()
		return rdma.ErrClosed
	}
	if c.queued+packetHead+n > c.t.cfg.MaxQueue && c.queued > 0 {
		c.wmu.Unlock()
		return rdma.ErrAgain
	}
	c.appendOwn(func(b []byte) []byte {
		b = appendPacketHead(b, dst, pk)
		return append(b, pk.Data()...)
	})
	if !c.flushing && len(c.segs) == 1 {
		c.writeNow()
	} else {
		c.kickWriter()
	}
	c.wmu.Unlock()
	return nil
}

// writeNow writes the only segment with one non-blocking write; what the
// socket does not take is left for the writer. The caller holds wmu.
func (c *conn) writeNow() {
	c.dwBuf, c.dwN, c.dwErr = c.segs[0].b, 0, nil
	if c.raceOut != nil {
		c.raceOut.Add(1)
	}
	if err := c.raw.Write(c.dwFn); err != nil {
		c.dwErr = err
	}
	n := c.dwN
	c.dwBuf = nil
	switch {
	case n == len(c.segs[0].b):
		c.free = append(c.free, c.segs[0].b[:0])
		c.segs = c.segs[:0]
		c.queued = 0
		c.writes.Add(1)
		return
	case n > 0:
		c.segs[0].b = c.segs[0].b[n:]
		c.queued -= n
	}
	if c.dwErr != nil && !errors.Is(c.dwErr, unix.EAGAIN) {
		c.fail(fmt.Errorf("%w: writing: %w", ErrPeerGone, c.dwErr))
		return
	}
	c.kickWriter()
}

// directWrite is the function RawConn.Write calls: one write, never
// waiting for room.
func (c *conn) directWrite(fd uintptr) bool {
	n, err := unix.Write(int(fd), c.dwBuf)
	if n > 0 {
		c.dwN = n
	}
	c.dwErr = err
	return true
}

func (c *conn) kickWriter() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// call registers a wait and queues a request made by head (given the
// sequence number), followed by ext written in place, ignoring
// MaxQueue (the caller waits anyway). dst is a Get's destination.
func (c *conn) call(head func([]byte, uint64) []byte, ext, dst []byte) (*wait, error) {
	seq := c.t.seq.Add(1)
	w := &wait{dst: dst, ch: make(chan error, 1)}
	c.cmu.Lock()
	if err := c.failed(); err != nil {
		c.cmu.Unlock()
		return nil, err
	}
	c.waits[seq] = w
	c.cmu.Unlock()
	c.wmu.Lock()
	if c.closing {
		c.wmu.Unlock()
		c.take(seq)
		return nil, rdma.ErrClosed
	}
	c.appendOwn(func(b []byte) []byte { return head(b, seq) })
	if len(ext) > 0 {
		c.segs = append(c.segs, seg{b: ext})
		c.queued += len(ext)
	}
	c.kickWriter()
	c.wmu.Unlock()
	return w, nil
}

// reply queues an answer of the reader, ignoring MaxQueue.
func (c *conn) reply(head func([]byte) []byte, ext []byte) {
	c.wmu.Lock()
	if c.closing {
		c.wmu.Unlock()
		return
	}
	c.appendOwn(head)
	if len(ext) > 0 {
		c.segs = append(c.segs, seg{b: ext})
		c.queued += len(ext)
	}
	c.kickWriter()
	c.wmu.Unlock()
}

// writeLoop writes what the senders queued, in batches (writev).
func (c *conn) writeLoop() {
	var bufs net.Buffers
	for {
		select {
		case <-c.kick:
		case <-c.done:
			return
		}
		for {
			c.wmu.Lock()
			if len(c.segs) == 0 {
				c.flushing = false
				closing := c.closing
				c.wmu.Unlock()
				if closing {
					_ = c.nc.CloseWrite()
					return
				}
				break
			}
			batch := c.segs
			c.segs, c.spare = c.spare[:0], nil
			c.flushing = true
			c.wmu.Unlock()
			total := 0
			bufs = bufs[:0]
			for _, s := range batch {
				bufs = append(bufs, s.b)
				total += len(s.b)
			}
			wb := bufs
			if c.raceOut != nil {
				c.raceOut.Add(1)
			}
			_, err := wb.WriteTo(c.nc)
			c.writes.Add(1)
			c.wmu.Lock()
			c.queued -= total
			for i, s := range batch {
				if s.own && len(c.free) < 8 {
					c.free = append(c.free, s.b[:0])
				}
				batch[i] = seg{}
			}
			c.spare = batch[:0]
			c.wmu.Unlock()
			clear(bufs)
			if err != nil {
				c.fail(fmt.Errorf("%w: writing: %w", ErrPeerGone, err))
				return
			}
		}
	}
}

// bye queues a goodbye after everything queued; the writer then shuts
// the sending side (FIN). The caller waits for the peer to close its side
// (the reader sees the end) before it closes the socket, so that the
// peer reads the goodbye before any reset.
func (c *conn) bye() {
	c.wmu.Lock()
	if c.started && !c.closing && c.failed() == nil {
		c.appendOwn(func(b []byte) []byte { return append(b, fBye) })
		c.closing = true
		c.kickWriter()
	}
	c.wmu.Unlock()
}

// drop returns the undelivered arrivals to their pools.
func (c *conn) drop() {
	c.dmu.Lock()
	defer c.dmu.Unlock()
	c.imu.Lock()
	defer c.imu.Unlock()
	for i := c.ihead; i < len(c.inbox); i++ {
		if a := c.inbox[i]; a.pk != nil {
			a.pool.Put(packet.NoWorker, a.pk)
		}
	}
	c.inbox, c.ihead = nil, 0
	c.pending.Store(0)
}

// tick runs the keep-alive: ping when nothing was written for a quarter
// period, fail after a whole period without a byte read (unless the
// reader is paused by this side's back-pressure).
func (c *conn) tick(period time.Duration) {
	if c.failed() != nil {
		return
	}
	if w := c.writes.Load(); w == c.lastW {
		c.reply(func(b []byte) []byte { return append(b, fPing) }, nil)
	} else {
		c.lastW = w
	}
	if r := c.reads.Load(); r != c.lastR || c.paused.Load() {
		c.lastR, c.silent = r, 0
		return
	}
	c.silent++
	if c.silent >= 4 {
		c.fail(fmt.Errorf("%w: no bytes for %v (keep-alive)", ErrPeerGone, period))
	}
}

// --- Inbound ---

// readLoop reads frames until the connection ends: packets into the
// inbox, answers to waiting callers, requests answered at once.
func (c *conn) readLoop() {
	var head [maxHead]byte
	t := c.t
	for {
		if _, err := io.ReadFull(c.br, head[:1]); err != nil {
			c.fail(readErr(err))
			return
		}
		if c.raceIn != nil {
			c.raceIn.Load()
		}
		if head[0] == fBye {
			c.fail(ErrPeerClosed)
			return
		}
		size := headSize(head[0])
		if size == 0 {
			c.fail(fmt.Errorf("%w: unknown frame kind %#x", ErrProtocol, head[0]))
			return
		}
		if _, err := io.ReadFull(c.br, head[1:size]); err != nil {
			c.fail(readErr(fmt.Errorf("%w: truncated frame: %w", ErrProtocol, err)))
			return
		}
		f, _, _, err := decodeHead(head[:size], t.cfg.PayloadSize)
		if err == nil {
			err = c.handle(&f)
		}
		if err != nil {
			if !errors.Is(err, ErrProtocol) {
				err = readErr(err)
			}
			c.fail(err)
			return
		}
		c.reads.Add(1)
	}
}

func (c *conn) protocol(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrProtocol, fmt.Sprintf(format, args...))
}

// readFull reads a payload; a short read is a truncated frame.
func (c *conn) readFull(b []byte) error {
	if _, err := io.ReadFull(c.br, b); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return fmt.Errorf("%w: truncated frame (%d payload bytes announced): %w", ErrProtocol, len(b), err)
		}
		return err
	}
	return nil
}

func (c *conn) handle(f *frame) error {
	t := c.t
	switch f.kind {
	case fPacket:
		dst := rdma.Addr(f.addr)
		if owner := t.layout.Owner(dst); owner != t.rank {
			return c.protocol("a packet for address %d, which is process %d's, not this process's (%d)", dst, owner, t.rank)
		}
		c.room()
		a := arrival{dst: dst, size: packetHead + int(f.n)}
		// An arrival is built in a pool packet only when no raw one is
		// ahead of it: a raw one at the head needs a fresh packet, which
		// must not be held by the arrivals behind it.
		if b := t.binding(dst); b != nil && c.raws.Load() == 0 {
			if pk := b.pool.Get(packet.NoWorker); pk != nil {
				if err := pk.DecodeHeader(f.hdr); err != nil {
					b.pool.Put(packet.NoWorker, pk)
					return c.protocol("packet header: %v", err)
				}
				if err := c.readFull(pk.Payload()[:f.n]); err != nil {
					b.pool.Put(packet.NoWorker, pk)
					return err
				}
				a.pk, a.pool = pk, b.pool
			}
		}
		if a.pk == nil {
			a.raw = make([]byte, packet.HeaderWireSize+int(f.n))
			copy(a.raw, f.hdr)
			if err := c.readFull(a.raw[packet.HeaderWireSize:]); err != nil {
				return err
			}
			c.raws.Add(1)
		}
		c.push(a)
	case fBind, fUnbind:
		a := rdma.Addr(f.addr)
		if owner := t.layout.Owner(a); owner != c.proc && owner >= 0 {
			return c.protocol("process %d announced address %d, which is process %d's", c.proc, a, owner)
		}
		t.setRemote(a, f.kind == fBind)
		seq := f.seq
		c.reply(func(b []byte) []byte { return appendAck(b, seq, stOK) }, nil)
	case fAck:
		w := c.take(f.seq)
		if w == nil {
			return c.protocol("an answer to request %d, which is not waiting", f.seq)
		}
		if f.status != stOK {
			w.ch <- statusError(f.status)
		} else {
			w.ch <- nil
		}
	case fPut:
		if owner := t.layout.Owner(rdma.Addr(f.addr)); owner != t.rank {
			return c.protocol("a Put for address %d, which is process %d's", f.addr, owner)
		}
		dst, st := t.lookup(f)
		if st == stOK {
			if err := c.readFull(dst); err != nil {
				return err
			}
		} else if _, err := io.CopyN(io.Discard, c.br, int64(f.n)); err != nil {
			return fmt.Errorf("%w: truncated frame: %w", ErrProtocol, err)
		}
		seq := f.seq
		c.reply(func(b []byte) []byte { return appendAck(b, seq, st) }, nil)
	case fGetReq:
		if owner := t.layout.Owner(rdma.Addr(f.addr)); owner != t.rank {
			return c.protocol("a Get from address %d, which is process %d's", f.addr, owner)
		}
		src, st := t.lookup(f)
		seq, n := f.seq, uint64(len(src))
		c.reply(func(b []byte) []byte { return appendGetResp(b, seq, st, n) }, src)
	case fGetResp:
		w := c.take(f.seq)
		if w == nil {
			return c.protocol("a Get answer to request %d, which is not waiting", f.seq)
		}
		if f.status != stOK {
			w.ch <- statusError(f.status)
			return nil
		}
		if f.n != uint64(len(w.dst)) {
			err := c.protocol("a Get answer of %d bytes for a Get of %d", f.n, len(w.dst))
			w.ch <- &PeerError{Rank: c.proc, Err: err}
			return err
		}
		if err := c.readFull(w.dst); err != nil {
			w.ch <- &PeerError{Rank: c.proc, Err: err}
			return err
		}
		w.ch <- nil
	case fPing:
	}
	return nil
}

// take removes and returns the wait of seq.
func (c *conn) take(seq uint64) *wait {
	c.cmu.Lock()
	defer c.cmu.Unlock()
	w := c.waits[seq]
	delete(c.waits, seq)
	return w
}

// room pauses the reader while the inbox holds more than MaxQueue bytes
// and no caller of this process waits for a peer (a waiting caller
// might wait for a frame behind them).
func (c *conn) room() {
	t := c.t
	if c.inBytes.Load() <= int64(t.cfg.MaxQueue) {
		return
	}
	c.paused.Store(true)
	defer c.paused.Store(false)
	tm := time.NewTimer(10 * time.Millisecond)
	defer tm.Stop()
	for c.inBytes.Load() > int64(t.cfg.MaxQueue) && t.waiting.Load() == 0 && c.failed() == nil {
		t.wakeSleeper()
		select {
		case <-c.resume:
		case <-tm.C:
			tm.Reset(10 * time.Millisecond)
		case <-c.done:
			return
		}
	}
}

func (c *conn) push(a arrival) {
	c.imu.Lock()
	if c.ihead > 0 && c.ihead == len(c.inbox) {
		clear(c.inbox)
		c.inbox, c.ihead = c.inbox[:0], 0
	}
	c.inbox = append(c.inbox, a)
	c.imu.Unlock()
	c.inBytes.Add(int64(a.size))
	c.pending.Add(1)
	c.t.wakeSleeper()
}

// deliver hands the arrivals of the inbox, in order, to their Receivers.
func (c *conn) deliver(w int) int {
	if !c.dmu.TryLock() {
		return 0
	}
	defer c.dmu.Unlock()
	t := c.t
	n := 0
	for n < maxPerCall {
		c.imu.Lock()
		if c.ihead == len(c.inbox) {
			c.imu.Unlock()
			break
		}
		a := c.inbox[c.ihead]
		c.imu.Unlock()
		b := t.binding(a.dst)
		if b == nil {
			break
		}
		pk := a.pk
		if pk == nil || a.pool != b.pool {
			pk = b.pool.Get(w)
			if pk == nil {
				break
			}
			if a.pk != nil {
				pk.CopyHeader(a.pk)
				copy(pk.Payload(), a.pk.Data())
				a.pool.Put(w, a.pk)
			} else {
				if err := pk.DecodeHeader(a.raw[:packet.HeaderWireSize]); err != nil {
					panic(fmt.Sprintf("tcp: an arrival checked on reading does not fit: %v", err))
				}
				copy(pk.Payload(), a.raw[packet.HeaderWireSize:])
			}
		}
		if a.pk == nil {
			c.raws.Add(-1)
		}
		c.imu.Lock()
		c.inbox[c.ihead] = arrival{}
		c.ihead++
		c.imu.Unlock()
		c.pending.Add(-1)
		if c.inBytes.Add(-int64(a.size)) <= int64(t.cfg.MaxQueue) && c.paused.Load() {
			select {
			case c.resume <- struct{}{}:
			default:
			}
		}
		b.r.Receive(w, pk)
		n++
	}
	return n
}
