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

	// The parser, under rmu (see Inbound).
	rmu    sync.Mutex
	rs     rstate
	waitFn func(uintptr) bool
	// fd is the socket's number, which Progress reads without the
	// runtime's fd lock (the reader goroutine holds it while it waits for
	// readability); rmu and fail's closing under it keep it valid.
	fd int

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
	c := &conn{t: t, proc: p, nc: nc, raw: raw, kick: make(chan struct{}, 1),
		resume: make(chan struct{}, 1), waits: make(map[uint64]*wait), done: make(chan struct{})}
	c.dwFn = c.directWrite
	c.waitFn = c.waitPump
	if err := raw.Control(func(fd uintptr) { c.fd = int(fd) }); err != nil {
		return nil, err
	}
	// Bytes the handshake's reader took beyond the greeting.
	c.rs.buf = make([]byte, readBuf)
	if n := br.Buffered(); n > 0 {
		b, _ := br.Peek(n)
		c.rs.w = copy(c.rs.buf, b)
	}
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
func (c *conn) fail(err error) { c.failWith(err, false) }

// failHeld is fail for a caller that holds rmu (the parser).
func (c *conn) failHeld(err error) { c.failWith(err, true) }

func (c *conn) failWith(err error, held bool) {
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
	// Progress reads the socket by its number: close it under rmu, so
	// that no parser reads a number the kernel may give to another file.
	// A holder of rmu may run inside the reader's RawConn.Read, where
	// Close would wait for itself: it shuts the socket down (which wakes
	// every waiter), and the reader goroutine closes it as it ends.
	if held {
		_ = unix.Shutdown(c.fd, unix.SHUT_RDWR)
	} else {
		c.closeSock()
	}
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

// closeSock closes the socket under rmu (see fd).
func (c *conn) closeSock() {
	c.rmu.Lock()
	_ = c.nc.Close()
	c.rmu.Unlock()
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
	// On EAGAIN, or an error (which the writer's own write then meets
	// and fails the connection with: this caller may hold locks fail
	// takes), the writer goes on.
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
	if !c.flushing && len(c.segs) == 1 && c.segs[0].own {
		c.writeNow()
	} else {
		c.kickWriter()
	}
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
//
// The stream is parsed by whoever holds rmu: Progress, which reads the
// socket without blocking (the fast path: a worker spinning on Progress
// sees an arrival as soon as the kernel has it), or the connection's
// reader goroutine, which waits for the socket to become readable and
// answers Bind, Put and Get requests when nobody calls Progress (the
// rdma contract: they never wait for the owner's calls). Either parses
// as far as the socket has bytes; a frame split across reads resumes
// where it stopped.

// pump results.
const (
	pumpAgain  = iota // the socket has no more bytes now
	pumpFull          // the inbox holds MaxQueue bytes: stop reading (back-pressure)
	pumpFailed        // the connection failed
)

// rstate is the parser's state, under rmu.
type rstate struct {
	buf  []byte // read buffer; buf[r:w] unparsed
	r, w int
	in   bool  // inside a frame's payload
	f    frame // its head
	hdr  [packet.HeaderWireSize]byte
	dst  []byte // where the rest of the payload goes; nil: discarded
	left uint64 // payload bytes still to come
	a    arrival
	wt   *wait
	st   byte
	fd   int // the socket, valid during a pump
	res  int // the last pump's result (for the functions given RawConn)
}

// readLoop is the reader goroutine.
func (c *conn) readLoop() {
	defer c.closeSock()
	for {
		err := c.raw.Read(c.waitFn)
		if err != nil {
			c.fail(readErr(err))
			return
		}
		switch c.rs.res {
		case pumpFailed:
			return
		case pumpFull:
			c.room()
		}
		if c.failed() != nil {
			return
		}
	}
}

// waitPump is the reader goroutine's function for RawConn.Read: pump, and
// ask to wait for readability when the socket is empty. When Progress
// holds the parser it waits too: Progress reads until the socket is
// empty, so the next bytes bring a new readiness event.
func (c *conn) waitPump(fd uintptr) bool {
	if !c.rmu.TryLock() {
		return false
	}
	c.rs.res = c.pumpLocked(int(fd))
	c.rmu.Unlock()
	return c.rs.res != pumpAgain
}

// poll parses what the socket holds now, if no other goroutine does.
func (c *conn) poll() {
	if c.failed() != nil || !c.rmu.TryLock() {
		return
	}
	res := c.pumpLocked(c.fd)
	c.rmu.Unlock()
	if res == pumpFailed {
		// The pump only shut the socket down (see failWith); close it,
		// which also wakes the reader goroutine.
		c.closeSock()
	}
	if res == pumpFull && c.paused.Load() {
		c.resumeReader()
	}
}

func (c *conn) resumeReader() {
	select {
	case c.resume <- struct{}{}:
	default:
	}
}

// readSome reads once into p without blocking: 0 and nil mean no bytes
// now; io.EOF the peer closed.
func (c *conn) readSome(p []byte) (int, error) {
	for {
		n, err := unix.Read(c.rs.fd, p)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return 0, nil
		case err != nil:
			return 0, err
		case n == 0 && len(p) > 0:
			return 0, io.EOF
		}
		if c.raceIn != nil {
			c.raceIn.Load()
		}
		return n, nil
	}
}

// pumpLocked parses frames from the socket fd until it has no more bytes,
// the inbox is full, or the connection fails. The caller holds rmu.
func (c *conn) pumpLocked(fd int) int {
	rs := &c.rs
	rs.fd = fd
	if rs.buf == nil {
		rs.buf = make([]byte, readBuf)
	}
	for {
		if c.failed() != nil {
			return pumpFailed
		}
		if rs.in {
			if rs.left > 0 {
				if avail := rs.w - rs.r; avail > 0 {
					n := int(min(uint64(avail), rs.left))
					if rs.dst != nil {
						copy(rs.dst, rs.buf[rs.r:rs.r+n])
						rs.dst = rs.dst[n:]
					}
					rs.r += n
					rs.left -= uint64(n)
					continue
				}
				if rs.dst != nil && rs.left >= readBuf/4 {
					// Straight into the destination.
					n, err := c.readSome(rs.dst[:rs.left])
					if err != nil {
						return c.readFailed(err)
					}
					if n == 0 {
						return pumpAgain
					}
					rs.dst = rs.dst[n:]
					rs.left -= uint64(n)
					continue
				}
				if res, ok := c.fill(); !ok {
					return res
				}
				continue
			}
			rs.in = false
			if err := c.finish(); err != nil {
				c.failHeld(err)
				return pumpFailed
			}
			c.reads.Add(1)
			continue
		}
		// A frame head.
		if rs.w-rs.r < 1 {
			if res, ok := c.fill(); !ok {
				return res
			}
			continue
		}
		kind := rs.buf[rs.r]
		if kind == fBye {
			c.failHeld(ErrPeerClosed)
			return pumpFailed
		}
		size := headSize(kind)
		if size == 0 {
			c.failHeld(fmt.Errorf("%w: unknown frame kind %#x", ErrProtocol, kind))
			return pumpFailed
		}
		if rs.w-rs.r < size {
			if res, ok := c.fill(); !ok {
				return res
			}
			continue
		}
		if kind == fPacket && c.inBytes.Load() > int64(c.t.cfg.MaxQueue) && c.t.waiting.Load() == 0 {
			return pumpFull
		}
		f, _, _, err := decodeHead(rs.buf[rs.r:rs.r+size], c.t.cfg.PayloadSize)
		if err == nil {
			if f.kind == fPacket {
				copy(rs.hdr[:], f.hdr)
				f.hdr = rs.hdr[:]
			}
			rs.r += size
			err = c.begin(&f)
		}
		if err != nil {
			c.failHeld(err)
			return pumpFailed
		}
	}
}

// fill reads more bytes into the buffer (moving the unparsed ones to its
// start). ok is false when none came: res says why.
func (c *conn) fill() (res int, ok bool) {
	rs := &c.rs
	if rs.r > 0 {
		rs.w = copy(rs.buf, rs.buf[rs.r:rs.w])
		rs.r = 0
	}
	n, err := c.readSome(rs.buf[rs.w:])
	if err != nil {
		return c.readFailed(err), false
	}
	if n == 0 {
		return pumpAgain, false
	}
	rs.w += n
	return 0, true
}

// readFailed fails the connection for a read error: a truncated frame if
// the peer ended inside one.
func (c *conn) readFailed(err error) int {
	rs := &c.rs
	if errors.Is(err, io.EOF) && (rs.in || rs.w > rs.r) {
		err = fmt.Errorf("%w: truncated frame (the connection ended inside one): %w", ErrProtocol, io.ErrUnexpectedEOF)
	}
	c.failHeld(readErr(err))
	return pumpFailed
}

func (c *conn) protocol(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrProtocol, fmt.Sprintf(format, args...))
}

// begin acts on a frame head: at once for frames without payload, else
// it sets where the payload goes and finish acts at its end.
func (c *conn) begin(f *frame) error {
	t := c.t
	rs := &c.rs
	rs.f = *f
	rs.dst, rs.left, rs.wt, rs.st = nil, f.payloadLen(), nil, stOK
	switch f.kind {
	case fPacket:
		dst := rdma.Addr(f.addr)
		if owner := t.layout.Owner(dst); owner != t.rank {
			return c.protocol("a packet for address %d, which is process %d's, not this process's (%d)", dst, owner, t.rank)
		}
		rs.a = arrival{dst: dst, size: packetHead + int(f.n)}
		// An arrival is built in a pool packet only when no raw one is
		// ahead of it: a raw one at the head needs a fresh packet, which
		// must not be held by the arrivals behind it.
		if b := t.binding(dst); b != nil && c.raws.Load() == 0 {
			if pk := b.pool.Get(packet.NoWorker); pk != nil {
				if err := pk.DecodeHeader(f.hdr); err != nil {
					b.pool.Put(packet.NoWorker, pk)
					return c.protocol("packet header: %v", err)
				}
				rs.a.pk, rs.a.pool = pk, b.pool
				rs.dst = pk.Payload()[:f.n]
			}
		}
		if rs.a.pk == nil {
			rs.a.raw = make([]byte, packet.HeaderWireSize+int(f.n))
			copy(rs.a.raw, f.hdr)
			rs.dst = rs.a.raw[packet.HeaderWireSize:]
		}
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
		rs.dst, rs.st = t.lookup(f)
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
			break
		}
		if f.n != uint64(len(w.dst)) {
			err := c.protocol("a Get answer of %d bytes for a Get of %d", f.n, len(w.dst))
			w.ch <- &PeerError{Rank: c.proc, Err: err}
			return err
		}
		rs.wt, rs.dst = w, w.dst
	}
	rs.in = true
	return nil
}

// finish acts on a frame whose payload has arrived.
func (c *conn) finish() error {
	rs := &c.rs
	switch rs.f.kind {
	case fPacket:
		if rs.a.pk == nil {
			c.raws.Add(1)
		}
		c.push(rs.a)
		rs.a = arrival{}
	case fPut:
		seq, st := rs.f.seq, rs.st
		c.reply(func(b []byte) []byte { return appendAck(b, seq, st) }, nil)
	case fGetResp:
		if rs.wt != nil {
			rs.wt.ch <- nil
		}
	}
	rs.wt, rs.dst = nil, nil
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

// room parks the reader goroutine while the inbox holds more than
// MaxQueue bytes and no caller of this process waits for a peer (a
// waiting caller might wait for a frame behind them).
func (c *conn) room() {
	t := c.t
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
