package tcp

import (
	"bufio"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fibermpi/fibermpi/packet"
	"github.com/fibermpi/fibermpi/rdma"
	"github.com/fibermpi/fibermpi/rdma/internal/addrdir"
)

// Errors of this package (besides rdma's and ErrProtocol).
var (
	// ErrPeerGone is returned (in a *PeerError) for every call that needs
	// a peer whose connection broke: reset, closed without a goodbye, or
	// silent for Config.KeepAlive.
	ErrPeerGone = errors.New("tcp: peer process lost")
	// ErrPeerClosed is returned (in a *PeerError) for calls towards a
	// peer that closed its transport (the end of the job).
	// It matches rdma.ErrNoPeer: the peer's endpoints are gone.
	ErrPeerClosed = fmt.Errorf("tcp: peer process closed its transport (%w)", rdma.ErrNoPeer)
	// ErrHandshake is returned (wrapped) by New when a connection to a
	// peer cannot be set up, and logged for a refused incoming one (a
	// process of another job, a rank that is no peer).
	ErrHandshake = errors.New("tcp: handshake refused")
	// ErrForeignPacket is returned by Send for a packet of a pool the
	// transport does not know (neither Config.Pool nor bound).
	ErrForeignPacket = errors.New("tcp: packet of a pool not given to the transport")
	// ErrTooLong is returned by Send for a packet longer than
	// Config.PayloadSize.
	ErrTooLong = errors.New("tcp: packet longer than the configured payload size")
)

// PeerError names the peer process an error is about.
type PeerError struct {
	Rank int
	Err  error
}

func (e *PeerError) Error() string { return fmt.Sprintf("tcp: process %d: %v", e.Rank, e.Err) }

// Unwrap returns Err.
func (e *PeerError) Unwrap() error { return e.Err }

type binding struct {
	r    rdma.Receiver
	pool *packet.Pool
}

// region is a registration: the buffer and the tag a Region must carry.
type region struct {
	buf []byte
	tag uint64
}

// Transport is the TCP transport of one process: one connection per peer
// process, set up by New. Make it with New. All methods may be called
// from any goroutine at once. Send never blocks; Bind, Unbind, Put and
// Get park the calling goroutine until the peers answer (they wait for
// no call of the peer's user code: each connection's reader goroutine
// answers).
type Transport struct {
	rank   int
	layout *rdma.Layout
	cfg    Config
	ln     net.Listener
	conns  []*conn // by process
	list   []*conn
	self   *conn // arrivals sent to this process's own addresses (no socket)

	mu      sync.Mutex           // Bind, Unbind, Close
	dir     addrdir.Dir[binding] // this process's bound addresses
	rdir    addrdir.Set          // the addresses peers said are bound
	pools   addrdir.Pools
	closed  atomic.Bool
	stop    chan struct{}
	wg      sync.WaitGroup
	waiting atomic.Int32 // goroutines waiting for a peer's answer

	regMu   sync.RWMutex
	regs    map[uint32]region
	nextKey uint32
	tagBase uint64
	seq     atomic.Uint64

	sleepers atomic.Int32
	wake     chan struct{}

	inbound chan *conn // New's accepted connections
}

var (
	_ rdma.Transport = (*Transport)(nil)
	_ rdma.Sleeper   = (*Transport)(nil)
)

const exchangeKey = "fibermpi/tcp"

var magic = [8]byte{'f', 'm', 'p', 'i', 't', 'c', 'p', '1'}

// New makes this process's transport. It is collective: every process of
// the job calls it, one without peers too, because it fences the Exchange
// once. It listens on Config.Listen, publishes the address, fences, and
// connects to every peer at once (connections are made at start, not
// lazily): the process of lower rank dials, the other accepts; each side
// checks the other's job id, rank and payload size in a handshake. It
// parks the calling goroutine until every connection is up or
// Config.ConnectTimeout passes.
//
// A peer's Send to an address of this process fails with rdma.ErrNoPeer
// until the address is bound; Bind returns once every peer knows.
func New(cfg Config) (*Transport, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	cfg.Peers = slices.Clone(cfg.Peers)
	ex := cfg.Exchange
	t := &Transport{
		rank: ex.Rank(), layout: cfg.Layout, cfg: cfg, conns: make([]*conn, ex.Size()),
		stop: make(chan struct{}), regs: make(map[uint32]region), wake: make(chan struct{}, 1),
		inbound: make(chan *conn, len(cfg.Peers)),
	}
	var rb [8]byte
	_, _ = rand.Read(rb[:])
	t.tagBase = binary.LittleEndian.Uint64(rb[:])
	t.pools.Add(cfg.Pool)

	ln, lerr := net.Listen("tcp", cfg.Listen)
	addr := ""
	if lerr == nil {
		t.ln = ln
		addr, lerr = published(ln.Addr().(*net.TCPAddr))
		if lerr != nil {
			_ = ln.Close()
		}
	}
	// Take part in the fence whatever happened, so the others return.
	perr := ex.Put(exchangeKey, []byte(addr))
	ferr := ex.Fence()
	switch {
	case lerr != nil:
		return nil, fmt.Errorf("tcp: listening on %s: %w", cfg.Listen, lerr)
	case perr != nil:
		_ = ln.Close()
		return nil, fmt.Errorf("tcp: publishing the address: %w", perr)
	case ferr != nil:
		_ = ln.Close()
		return nil, fmt.Errorf("tcp: fence: %w", ferr)
	}
	t.wg.Go(t.acceptLoop)
	deadline := time.Now().Add(cfg.ConnectTimeout)
	fail := func(err error) (*Transport, error) {
		_ = t.Close()
		return nil, err
	}
	expect := 0
	for _, p := range cfg.Peers {
		if p < t.rank {
			expect++
			continue
		}
		c, err := t.dial(p, deadline)
		if err != nil {
			return fail(err)
		}
		t.setConn(c)
	}
	for range expect {
		select {
		case c := <-t.inbound:
			t.setConn(c)
		case <-time.After(time.Until(deadline)):
			var missing []int
			for _, p := range cfg.Peers {
				if p < t.rank && t.connOf(p) == nil {
					missing = append(missing, p)
				}
			}
			return fail(fmt.Errorf("%w: processes %v did not connect within %v", ErrHandshake, missing, cfg.ConnectTimeout))
		}
	}
	t.mu.Lock()
	t.list = nil
	for _, c := range t.conns {
		if c != nil {
			t.list = append(t.list, c)
		}
	}
	t.mu.Unlock()
	for _, c := range t.list {
		c.start()
	}
	t.self = &conn{t: t, proc: t.rank, resume: make(chan struct{}, 1), done: make(chan struct{})}
	t.wg.Go(t.keepAlive)
	return t, nil
}

func (t *Transport) setConn(c *conn) {
	t.mu.Lock()
	t.conns[c.proc] = c
	t.mu.Unlock()
}

func (t *Transport) connOf(p int) *conn {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.conns[p]
}

// published returns the address peers dial: the listener's, or for a
// listener on every interface (an unspecified host), this host's first
// non-loopback interface address with the listener's port.
func published(a *net.TCPAddr) (string, error) {
	if !a.IP.IsUnspecified() {
		return a.String(), nil
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return "", err
	}
	for _, ia := range addrs {
		if n, ok := ia.(*net.IPNet); ok && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return (&net.TCPAddr{IP: n.IP, Port: a.Port}).String(), nil
		}
	}
	return "", fmt.Errorf("tcp: listening on every interface, but this host has no address but loopback to publish")
}

// hello is this process's handshake record.
func (t *Transport) hello() []byte {
	b := append([]byte(nil), magic[:]...)
	b = binary.LittleEndian.AppendUint32(b, uint32(t.rank))
	b = binary.LittleEndian.AppendUint32(b, uint32(t.cfg.PayloadSize))
	id := t.cfg.Exchange.JobID()
	b = append(b, byte(len(id)))
	return append(b, id...)
}

// readHello reads a peer's handshake record and checks it against this
// job; it returns the peer's rank.
func (t *Transport) readHello(r io.Reader) (int, error) {
	var fixed [17]byte
	if _, err := io.ReadFull(r, fixed[:]); err != nil {
		return -1, fmt.Errorf("%w: reading the greeting: %w", ErrHandshake, err)
	}
	if [8]byte(fixed[:8]) != magic {
		return -1, fmt.Errorf("%w: not a fibermpi tcp greeting (%q)", ErrHandshake, fixed[:8])
	}
	rank := int(binary.LittleEndian.Uint32(fixed[8:]))
	payload := int(binary.LittleEndian.Uint32(fixed[12:]))
	id := make([]byte, fixed[16])
	if _, err := io.ReadFull(r, id); err != nil {
		return -1, fmt.Errorf("%w: reading the job id: %w", ErrHandshake, err)
	}
	if string(id) != t.cfg.Exchange.JobID() {
		return -1, fmt.Errorf("%w: a process of job %q (rank %d), this is job %q", ErrHandshake, id, rank, t.cfg.Exchange.JobID())
	}
	if payload != t.cfg.PayloadSize {
		return -1, fmt.Errorf("%w: process %d has payload size %d, this one %d", ErrHandshake, rank, payload, t.cfg.PayloadSize)
	}
	return rank, nil
}

// dial connects to peer p, retrying until deadline.
func (t *Transport) dial(p int, deadline time.Time) (*conn, error) {
	raw, err := t.cfg.Exchange.Get(p, exchangeKey)
	if err != nil || len(raw) == 0 {
		return nil, &PeerError{Rank: p, Err: fmt.Errorf("%w: no address published (%v)", ErrHandshake, err)}
	}
	addr := string(raw)
	for delay := time.Millisecond; ; delay = min(2*delay, 100*time.Millisecond) {
		nc, err := net.DialTimeout("tcp", addr, time.Until(deadline))
		if err == nil {
			c, herr := t.greet(nc.(*net.TCPConn), p, deadline)
			if herr == nil {
				return c, nil
			}
			_ = nc.Close()
			return nil, &PeerError{Rank: p, Err: herr}
		}
		if time.Now().Add(delay).After(deadline) {
			return nil, &PeerError{Rank: p, Err: fmt.Errorf("%w: connecting to %s: %w", ErrHandshake, addr, err)}
		}
		time.Sleep(delay)
	}
}

// greet runs the dialing side's handshake.
func (t *Transport) greet(nc *net.TCPConn, p int, deadline time.Time) (*conn, error) {
	_ = nc.SetDeadline(deadline)
	if _, err := nc.Write(t.hello()); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrHandshake, err)
	}
	br := bufio.NewReaderSize(nc, readBuf)
	rank, err := t.readHello(br)
	if err != nil {
		return nil, err
	}
	if rank != p {
		return nil, fmt.Errorf("%w: the process at its address is rank %d", ErrHandshake, rank)
	}
	_ = nc.SetDeadline(time.Time{})
	return t.newConn(nc, br, p)
}

// acceptLoop accepts connections until Close: peers during New, and
// refuses (logging once each) every other connection.
func (t *Transport) acceptLoop() {
	for {
		nc, err := t.ln.Accept()
		if err != nil {
			return // closed
		}
		t.wg.Go(func() {
			c, err := t.answer(nc.(*net.TCPConn))
			if err != nil {
				_ = nc.Close()
				if !t.closed.Load() {
					t.cfg.Logf("tcp: process %d: refused a connection from %s: %v", t.rank, nc.RemoteAddr(), err)
				}
				return
			}
			select {
			case t.inbound <- c:
			default:
				_ = nc.Close()
			}
		})
	}
}

// answer runs the accepting side's handshake.
func (t *Transport) answer(nc *net.TCPConn) (*conn, error) {
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReaderSize(nc, readBuf)
	rank, err := t.readHello(br)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	ok := rank < t.rank && slices.Contains(t.cfg.Peers, rank) && t.conns[rank] == nil && t.list == nil
	t.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("%w: rank %d is not a peer expected to connect to process %d", ErrHandshake, rank, t.rank)
	}
	if _, err := nc.Write(t.hello()); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrHandshake, err)
	}
	_ = nc.SetDeadline(time.Time{})
	return t.newConn(nc, br, rank)
}

// Name returns "tcp".
func (t *Transport) Name() string { return "tcp" }

// Addr returns the address this transport listens on.
func (t *Transport) Addr() string { return t.ln.Addr().String() }

// Bind attaches the local endpoint a and tells every peer, parking the
// calling goroutine until each has answered.
func (t *Transport) Bind(a rdma.Addr, r rdma.Receiver, pool *packet.Pool) error {
	if r == nil || pool == nil {
		return fmt.Errorf("%w: Bind(%d) with a nil Receiver or pool", rdma.ErrNoPeer, a)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed.Load() {
		return rdma.ErrClosed
	}
	if owner := t.layout.Owner(a); owner != t.rank {
		return fmt.Errorf("%w: address %d belongs to process %d, this is %d", rdma.ErrNoPeer, a, owner, t.rank)
	}
	if pool.PayloadSize() < t.cfg.PayloadSize {
		return fmt.Errorf("%w: a pool of %d-byte payloads, PayloadSize %d", ErrInvalidConfig, pool.PayloadSize(), t.cfg.PayloadSize)
	}
	if t.dir.Load(a) != nil {
		return rdma.ErrBound
	}
	t.pools.Add(pool)
	t.dir.Store(a, &binding{r: r, pool: pool})
	return t.announce(fBind, a)
}

// Unbind detaches a and tells every peer, parking the calling goroutine
// until each has answered. Arrivals for a that are not delivered yet
// wait, holding back the later arrivals of their connection, until a is
// bound again.
func (t *Transport) Unbind(a rdma.Addr) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed.Load() {
		return rdma.ErrClosed
	}
	if t.dir.Swap(a, nil) == nil {
		return rdma.ErrNoPeer
	}
	return t.announce(fUnbind, a)
}

// announce sends a bind or unbind of a to every peer and waits for their
// answers.
func (t *Transport) announce(kind byte, a rdma.Addr) error {
	ws := make([]*wait, len(t.list))
	for i, c := range t.list {
		w, err := c.call(func(b []byte, seq uint64) []byte { return appendBind(b, kind, seq, uint32(a)) }, nil, nil)
		if err != nil {
			ws[i] = &wait{ch: make(chan error, 1)}
			ws[i].ch <- err
			continue
		}
		ws[i] = w
	}
	var errs []error
	for i, w := range ws {
		if err := t.await(t.list[i], w); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (t *Transport) binding(a rdma.Addr) *binding { return t.dir.Load(a) }

// remoteBound reports whether a peer told this process that a is bound.
func (t *Transport) remoteBound(a rdma.Addr) bool { return t.rdir.Has(a) }

func (t *Transport) setRemote(a rdma.Addr, on bool) { t.rdir.Put(a, on) }

// route returns the connection to the process that owns a, checking that
// a is bound there.
func (t *Transport) route(a rdma.Addr) (*conn, error) {
	p := t.layout.Owner(a)
	if p < 0 || p >= len(t.conns) {
		return nil, rdma.ErrNoPeer
	}
	if p == t.rank {
		if t.binding(a) == nil {
			return nil, rdma.ErrNoPeer
		}
		return t.self, nil
	}
	c := t.conns[p]
	if c == nil {
		return nil, fmt.Errorf("%w: address %d belongs to process %d, which this transport does not reach", rdma.ErrNoPeer, a, p)
	}
	if err := c.failed(); err != nil {
		return nil, err
	}
	if !t.remoteBound(a) {
		return nil, rdma.ErrNoPeer
	}
	return c, nil
}

// Send frames pk into the connection to the process that owns to and
// returns pk to its pool. It never waits: when the bytes queued for that
// peer exceed Config.MaxQueue it returns rdma.ErrAgain and the caller
// keeps pk. When nothing is queued it writes to the socket itself (one
// non-blocking write system call); otherwise the connection's writer
// goroutine writes.
func (t *Transport) Send(w int, to rdma.Addr, pk *packet.Packet) error {
	if t.closed.Load() {
		return rdma.ErrClosed
	}
	c, err := t.route(to)
	if err != nil {
		return err
	}
	if pk.Len() > t.cfg.PayloadSize {
		return fmt.Errorf("%w: %d bytes, PayloadSize %d", ErrTooLong, pk.Len(), t.cfg.PayloadSize)
	}
	pool := t.pools.Of(pk)
	if pool == nil {
		return ErrForeignPacket
	}
	if c == t.self {
		return t.sendSelf(to, pk, pool)
	}
	if err := c.sendPacket(uint32(to), pk); err != nil {
		return err
	}
	pool.Put(w, pk)
	return nil
}

// Register exposes buf to peers' Put and Get.
func (t *Transport) Register(buf []byte) (rdma.Region, error) {
	t.regMu.Lock()
	defer t.regMu.Unlock()
	if t.closed.Load() {
		return rdma.Region{}, rdma.ErrClosed
	}
	for {
		t.nextKey++
		if _, used := t.regs[t.nextKey]; !used && t.nextKey != 0 {
			break
		}
	}
	k := t.nextKey
	tag := t.tagBase ^ (uint64(k) * 0x9e3779b97f4a7c15)
	t.regs[k] = region{buf: buf, tag: tag}
	return rdma.Region{Key: k, Addr: tag, Len: uint64(len(buf))}, nil
}

// AdoptRegion makes a registration of another backend of this process
// (the one whose Region travels to peers, see rdma/route) reachable by
// this transport's peers too.
func (t *Transport) AdoptRegion(r rdma.Region, buf []byte) error {
	t.regMu.Lock()
	defer t.regMu.Unlock()
	if t.closed.Load() {
		return rdma.ErrClosed
	}
	t.regs[r.Key] = region{buf: buf, tag: r.Addr}
	return nil
}

// Deregister withdraws a registration (own or adopted).
func (t *Transport) Deregister(r rdma.Region) error {
	t.regMu.Lock()
	defer t.regMu.Unlock()
	if t.closed.Load() {
		return rdma.ErrClosed
	}
	g, ok := t.regs[r.Key]
	if !ok || g.tag != r.Addr || uint64(len(g.buf)) != r.Len {
		return rdma.ErrNoRegion
	}
	delete(t.regs, r.Key)
	return nil
}

// lookup returns the bytes of an access of n bytes at off into the
// registration the peer named, or a status.
func (t *Transport) lookup(f *frame) ([]byte, byte) {
	if b := t.binding(rdma.Addr(f.addr)); b == nil {
		return nil, stNoPeer
	}
	t.regMu.RLock()
	g, ok := t.regs[f.key]
	t.regMu.RUnlock()
	if !ok || g.tag != f.tag || uint64(len(g.buf)) != f.rlen {
		return nil, stNoRegion
	}
	if f.off > f.rlen || f.n > f.rlen-f.off {
		return nil, stBounds
	}
	return g.buf[f.off : f.off+f.n], stOK
}

// sendSelf queues pk itself as an arrival for an address of this
// process (copied into the destination's pool if it is another).
func (t *Transport) sendSelf(to rdma.Addr, pk *packet.Packet, pool *packet.Pool) error {
	c := t.self
	size := packetHead + pk.Len()
	if c.inBytes.Load()+int64(size) > int64(t.cfg.MaxQueue) && c.pending.Load() > 0 {
		return rdma.ErrAgain
	}
	c.push(arrival{pk: pk, pool: pool, dst: to, size: size})
	return nil
}

// selfAccess is a Put or Get on a registration of this process.
func (t *Transport) selfAccess(owner rdma.Addr, r rdma.Region, off uint64, n int) ([]byte, error) {
	f := frame{addr: uint32(owner), key: r.Key, tag: r.Addr, rlen: r.Len, off: off, n: uint64(n)}
	b, st := t.lookup(&f)
	return b, statusErr(st, r, off, n)
}

func statusErr(st byte, r rdma.Region, off uint64, n int) error {
	switch st {
	case stOK:
		return nil
	case stNoPeer:
		return rdma.ErrNoPeer
	case stNoRegion:
		return rdma.ErrNoRegion
	case stBounds:
		return &rdma.BoundsError{Region: r, Off: off, Len: n}
	}
	return fmt.Errorf("%w: status %d", ErrProtocol, st)
}

// access starts a Put or Get at the owner's connection.
func (t *Transport) access(owner rdma.Addr, r rdma.Region, off uint64, n int) (*conn, error) {
	if t.closed.Load() {
		return nil, rdma.ErrClosed
	}
	if err := rdma.CheckBounds(r, off, n); err != nil {
		return nil, err
	}
	return t.route(owner)
}

// Put streams src to the owner, which reads it from its socket straight
// into the registration. It parks the calling goroutine until the owner
// has answered (the bytes are in place, or the error); the owner's
// reader goroutine answers, not its user code.
func (t *Transport) Put(owner rdma.Addr, r rdma.Region, off uint64, src []byte) error {
	c, err := t.access(owner, r, off, len(src))
	if err != nil {
		return err
	}
	if c == t.self {
		dst, err := t.selfAccess(owner, r, off, len(src))
		if err == nil {
			copy(dst, src)
		}
		return err
	}
	w, err := c.call(func(b []byte, seq uint64) []byte {
		return appendAccess(b, fPut, seq, uint32(owner), r.Key, r.Addr, r.Len, off, uint64(len(src)))
	}, src, nil)
	if err != nil {
		return err
	}
	return t.awaitAccess(c, w, r, off, len(src))
}

// Get asks the owner for the bytes and reads them from the socket
// straight into dst. It parks the calling goroutine until they arrived.
func (t *Transport) Get(owner rdma.Addr, r rdma.Region, off uint64, dst []byte) error {
	c, err := t.access(owner, r, off, len(dst))
	if err != nil {
		return err
	}
	if c == t.self {
		src, err := t.selfAccess(owner, r, off, len(dst))
		if err == nil {
			copy(dst, src)
		}
		return err
	}
	w, err := c.call(func(b []byte, seq uint64) []byte {
		return appendAccess(b, fGetReq, seq, uint32(owner), r.Key, r.Addr, r.Len, off, uint64(len(dst)))
	}, nil, dst)
	if err != nil {
		return err
	}
	return t.awaitAccess(c, w, r, off, len(dst))
}

func (t *Transport) awaitAccess(c *conn, w *wait, r rdma.Region, off uint64, n int) error {
	err := t.await(c, w)
	var st statusError
	if errors.As(err, &st) {
		return statusErr(byte(st), r, off, n)
	}
	return err
}

// statusError carries a peer's status code to the waiter.
type statusError byte

func (s statusError) Error() string { return fmt.Sprintf("tcp: status %d", byte(s)) }

// await parks until w is answered. While it waits, this process's
// readers keep reading past Config.MaxQueue (see conn.room), so that two
// processes waiting on each other cannot deadlock.
func (t *Transport) await(c *conn, w *wait) error {
	t.waiting.Add(1)
	t.resumeReaders()
	defer t.waiting.Add(-1)
	return <-w.ch
}

func (t *Transport) resumeReaders() {
	for _, c := range t.list {
		select {
		case c.resume <- struct{}{}:
		default:
		}
	}
}

// Progress reads what the sockets hold without blocking (unless a
// connection's reader goroutine is reading it) and delivers the arrivals,
// in order per connection, to their Receivers. Arrivals for
// an unbound address, or whose destination pool is dry, wait (holding back
// their connection's later ones). It returns how many it delivered.
func (t *Transport) Progress(w int) int {
	if t.closed.Load() {
		return 0
	}
	n := 0
	for _, c := range t.list {
		c.poll()
		if c.pending.Load() > 0 {
			n += c.deliver(w)
		}
	}
	if t.self.pending.Load() > 0 {
		n += t.self.deliver(w)
	}
	return n
}

// Sleep parks the calling goroutine until a reader has an arrival, or for
// at most max.
func (t *Transport) Sleep(max time.Duration) {
	t.sleepers.Add(1)
	defer t.sleepers.Add(-1)
	for _, c := range t.list {
		if c.pending.Load() > 0 {
			return
		}
	}
	if t.self.pending.Load() > 0 {
		return
	}
	tm := time.NewTimer(max)
	defer tm.Stop()
	select {
	case <-t.wake:
	case <-tm.C:
	case <-t.stop:
	}
}

func (t *Transport) wakeSleeper() {
	if t.sleepers.Load() > 0 {
		select {
		case t.wake <- struct{}{}:
		default:
		}
	}
}

// CheckPeers returns the error of the first connection that failed (a
// *PeerError naming the process), or nil.
func (t *Transport) CheckPeers() error {
	if t.closed.Load() {
		return rdma.ErrClosed
	}
	for _, c := range t.list {
		if err := c.failed(); err != nil && !errors.Is(err, ErrPeerClosed) {
			return err
		}
	}
	return nil
}

// keepAlive pings idle connections and fails silent ones.
func (t *Transport) keepAlive() {
	tick := time.NewTicker(t.cfg.KeepAlive / 4)
	defer tick.Stop()
	for {
		select {
		case <-t.stop:
			return
		case <-tick.C:
		}
		for _, c := range t.list {
			c.tick(t.cfg.KeepAlive)
		}
	}
}

// Close says goodbye to every peer, closes the connections and the
// listener, waits for the transport's goroutines, and returns the
// arrivals not delivered to their pools. Every later call fails with
// rdma.ErrClosed.
func (t *Transport) Close() error {
	t.mu.Lock()
	if t.closed.Load() {
		t.mu.Unlock()
		return rdma.ErrClosed
	}
	t.closed.Store(true)
	close(t.stop)
	conns := slices.Clone(t.conns)
	t.mu.Unlock()
	if t.ln != nil {
		_ = t.ln.Close()
	}
	for _, c := range conns {
		if c != nil {
			c.bye()
		}
	}
	// Wait a little for the peers to read the goodbyes and close their
	// sides, then close whatever is left.
	expired := make(chan struct{})
	grace := time.AfterFunc(200*time.Millisecond, func() { close(expired) })
	for _, c := range conns {
		if c != nil && c.started {
			select {
			case <-c.done:
			case <-expired:
			}
		}
	}
	grace.Stop()
	for _, c := range conns {
		if c != nil {
			c.fail(rdma.ErrClosed)
		}
	}
	t.wg.Wait()
	for _, c := range conns {
		if c != nil {
			c.closeSock()
		}
	}
	for _, c := range append(conns, t.self) {
		if c != nil {
			c.drop()
		}
	}
	// Connections accepted after New gave up.
	for {
		select {
		case c := <-t.inbound:
			_ = c.nc.Close()
			continue
		default:
		}
		break
	}
	t.regMu.Lock()
	clear(t.regs)
	t.regMu.Unlock()
	return nil
}
