//go:build mpi

package mpi

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	cmpi "github.com/fibermpi/fibermpi/internal/mpi"
	"github.com/fibermpi/fibermpi/packet"
	"github.com/fibermpi/fibermpi/rdma"
	"github.com/fibermpi/fibermpi/rdma/internal/addrdir"
)

// Errors of this package (besides rdma's and ErrInvalidConfig). A failed
// MPI call returns an error matching ErrMPI, with MPI's error string.
var (
	// ErrMPI is matched by every error an MPI call returned.
	ErrMPI = cmpi.ErrMPI
	// ErrPeerClosed is returned (in a *PeerError) for calls towards a
	// peer that closed its transport. It matches rdma.ErrNoPeer.
	ErrPeerClosed = fmt.Errorf("mpi: peer process closed its transport (%w)", rdma.ErrNoPeer)
	// ErrForeignPacket is returned by Send for a packet of a pool the
	// transport does not know (neither Config.Pool nor bound).
	ErrForeignPacket = errors.New("mpi: packet of a pool not given to the transport")
	// ErrTooLong is returned by Send for a packet longer than
	// Config.PayloadSize.
	ErrTooLong = errors.New("mpi: packet longer than the configured payload size")
	// ErrWorld is returned (wrapped) by New when the job's processes are
	// not the processes of one MPI_COMM_WORLD (a launcher other than the
	// MPI's own, or a job larger than the world).
	ErrWorld = errors.New("mpi: the job is not this MPI_COMM_WORLD")
	// ErrBadToken is returned (wrapped) by TakeMoved for a token no
	// SendMoved makes.
	ErrBadToken = errors.New("mpi: not a moved message's token")
)

// PeerError names the peer process an error is about.
type PeerError struct {
	Rank int
	Err  error
}

func (e *PeerError) Error() string { return fmt.Sprintf("mpi: process %d: %v", e.Rank, e.Err) }

// Unwrap returns Err.
func (e *PeerError) Unwrap() error { return e.Err }

// place is where a process's transport receives: its rank in fibermpi's
// communicator, its lane (control tag 2·lane, data tag 2·lane+1) and its
// generation, which every message to it carries: a lane's ring passes to
// the next transport made in the process when one closes, and messages
// meant for an earlier generation are dropped.
type place struct {
	rank, lane int
	gen        uint32
}

func (p place) ctrlTag() int { return 2 * p.lane }

// dataTag is per generation, not per lane: a Put's bytes that a closed
// transport never received must not match a receive of the next
// transport on its lane. It carries the bytes of Put and of Get's
// answers, sent with (or right after) the message that makes the
// receiver post their receive, so each sender's bytes are posted for in
// the order it sends them.
func (p place) dataTag() int { return 4*int(p.gen) + 1 }

// putTag carries the bytes of started Puts (kPutAsk), sent only once the
// owner has posted their receive (kPutGo): in the order of the answers,
// not of the requests, so apart from dataTag's.
func (p place) putTag() int { return 4*int(p.gen) + 3 }

// Lanes and generations of this process's transports. A closed
// transport's ring (its receives stay posted: internal/mpi's fmpi.h says
// why none is cancelled) waits in spare for the next transport with the
// same shape, which takes its lane with a new generation.
var (
	laneMu sync.Mutex
	lanes  int
	gens   uint32
	spare  []spareRing
)

type spareRing struct {
	ring       *cmpi.Ring
	lane, n, s int
}

// takeLane returns a spare ring of n slots of s bytes and its lane, or a
// new lane (ring nil), with a fresh generation (24 bits, never 0; its put
// tag 4·gen+3 at most tagUB).
func takeLane(n, s, tagUB int) (*cmpi.Ring, int, uint32) {
	laneMu.Lock()
	defer laneMu.Unlock()
	gens = gens%uint32(min(1<<24-1, max((tagUB-3)/4, 1))) + 1
	for i, sp := range spare {
		if sp.n == n && sp.s == s {
			spare = slices.Delete(spare, i, i+1)
			return sp.ring, sp.lane, gens
		}
	}
	lanes++
	return nil, lanes - 1, gens
}

func giveLane(r *cmpi.Ring, lane, n, s int) {
	laneMu.Lock()
	spare = append(spare, spareRing{ring: r, lane: lane, n: n, s: s})
	laneMu.Unlock()
}

// calls counts the calls of this process waiting for a peer's answer
// (Bind, Unbind, Put, Get): while there are any, every transport's poller
// polls at its shortest period, since the answer may be another
// transport's of this process to give (several transports in one
// process: the tests).
var calls atomic.Int32

type binding struct {
	r    rdma.Receiver
	er   rdma.EagerReceiver // r, if it takes eager messages without a packet; else nil
	pool *packet.Pool
}

// region is a registration.
type region struct {
	buf  []byte
	tag  uint64
	pin  *runtime.Pinner // nil for an adopted region (its owner pins it)
	busy int             // transfers in flight into or out of it, under regMu
	gone bool            // deregistered while busy: unpin when busy drops to 0 (under regMu)
}

// waiter is a call of this process waiting for a peer's answer: a Bind,
// Unbind, Put or Get, or a Put that StartPut started (async set), which
// nobody waits for: its end goes to the putDone queue (settle) and from
// there to async, from Progress.
type waiter struct {
	proc  int
	code  uint32
	acked bool // the answer came (under the MPI lock)
	left  int  // data transfers of the call still in flight (under the MPI lock)
	dst   []byte
	err   error
	done  atomic.Bool // acked and left == 0, or failed

	// A started Put's.
	async   rdma.PutDone
	src     []byte          // its bytes, until kPutGo says to send them (under the MPI lock)
	pin     *runtime.Pinner // pins its source; nil when empty (or kept pinned by Close)
	region  rdma.Region     // for its bounds error
	off     uint64
	n       int
	settled bool // queued for PutDone (under the MPI lock)

	// A moved message received into scratch because into (the caller's
	// buffer) is shorter: the first len(into) bytes are copied at the end.
	scratch, into []byte
}

// result is the call's outcome once it is done.
func (w *waiter) result() error {
	if w.err != nil {
		return w.err
	}
	switch w.code {
	case stOK:
		return nil
	case stNoPeer:
		return rdma.ErrNoPeer
	case stNoRegion:
		return rdma.ErrNoRegion
	default:
		return rdma.ErrOutOfBounds
	}
}

// op is one MPI request of a data transfer in flight.
type op struct {
	w    *waiter  // the local call it belongs to, or nil
	reg  *region  // the registration it reads or writes, or nil
	ack  *lateAck // the answer to send once every request of the transfer completes
	last bool     // the transfer's last request
	junk *discard // where a refused Put's bytes go
	from int      // for a Put's bytes: the sender's MPI rank + 1 (0: not a Put's)
}

// lateAck is the answer to a started Put (kPutAsk), sent once the last of
// its receives completes.
type lateAck struct {
	c    *ctl
	to   place
	left int // receives still in flight
}

// discard is a pinned buffer that takes the bytes of a refused Put.
type discard struct {
	buf  []byte
	pin  runtime.Pinner
	left int // receives into it still in flight
}

func newDiscard(n, receives int) *discard {
	d := &discard{buf: make([]byte, n), left: receives}
	d.pin.Pin(&d.buf[0])
	return d
}

func (d *discard) done() {
	if d.left--; d.left == 0 {
		d.pin.Unpin()
	}
}

// arrival is a packet built from a message, waiting for delivery; raw
// holds the message instead when no packet was free for it then.
type arrival struct {
	to  rdma.Addr
	pk  *packet.Packet
	raw []byte
}

// Transport is the MPI transport of one process. Make it with New. All
// methods may be called from any goroutine at once. Send never blocks;
// Bind, Unbind, Put and Get park the calling goroutine (between polls of
// MPI) until the peers answer, which they do from their progress or their
// transport's poller, with no call of their user code.
type Transport struct {
	rank    int
	layout  *rdma.Layout
	cfg     Config
	comm    cmpi.Comm
	me      place
	places  []place // by process, for this one and its peers
	isPeer  []bool  // by process
	closedP []atomic.Bool
	list    []int // the peers

	// Under the MPI lock (cmpi.Lock).
	ring  *cmpi.Ring
	sendq *cmpi.SendQ
	// direct is set while Progress polls: an eager arrival for a receive
	// already posted may then go straight from the ring to its
	// EagerReceiver (arrive), once dheld says this poll holds dmu.
	direct, dheld bool
	waits         map[uint64]*waiter
	nextID        uint64
	ops           []op
	reqs          []cmpi.Request
	idx           []int32
	inPut         map[int]int // by MPI rank: receives of that rank's Put bytes in flight
	// take is the receiver a TakeEager call offers this poll's direct
	// eager arrivals for take.to to first (nil outside TakeEager), and
	// whether it took one. Under the MPI lock.
	take struct {
		to   rdma.Addr
		tk   rdma.EagerTake
		took bool
	}
	// asm joins the parts of packets longer than Config.Whole, by the
	// MPI rank that sends them (kPacketFirst, kPacketMore). Under the
	// MPI lock, as the ring.
	asm map[int][]byte
	// idle counts Progress's polls in a row that found nothing: from the
	// third on, a poll spins in C (Config.Spin).
	idle int

	mu     sync.Mutex           // Bind, Unbind, Close
	dir    addrdir.Dir[binding] // this process's bound addresses
	rdir   addrdir.Set          // the addresses peers said are bound
	pools  addrdir.Pools
	closed atomic.Bool

	// dmu orders deliveries: it is held while arrivals are taken from the
	// inbox and delivered.
	dmu     sync.Mutex
	imu     sync.Mutex   // inbox, held
	waiting atomic.Int32 // the arrivals in inbox, release and putDone, read without imu
	inbox   []arrival    // inbox[ihead:] waits; the array is reused once empty
	ihead   int
	held    map[rdma.Addr][]*packet.Packet // arrivals for an unbound address, in order
	release []arrival                      // held arrivals of an address bound again
	putDone []*waiter                      // started Puts that ended, for their PutDone

	regMu   sync.Mutex
	regs    map[uint32]*region
	nextKey uint32
	tagBase uint64

	// polled is set by Progress (a load, and a store only when it was
	// clear: no locked instruction per poll) and cleared by the poller,
	// which backs off while it finds it set.
	polled atomic.Bool
	stop   chan struct{}
	wg     sync.WaitGroup
}

var (
	_ rdma.Transport   = (*Transport)(nil)
	_ rdma.Sleeper     = (*Transport)(nil)
	_ rdma.PutStarter  = (*Transport)(nil)
	_ rdma.EagerSender = (*Transport)(nil)
	_ rdma.EagerTaker  = (*Transport)(nil)
)

const exchangeKey = "fibermpi/mpi"

// New makes this process's transport. It is collective: every process of
// the job calls it (one without peers too), since it fences the Exchange
// once. It initializes MPI if nothing did (cmpi.Init: MPI_Init_thread at
// MPI_THREAD_SERIALIZED, collective over MPI_COMM_WORLD), posts Config.Ring
// receives, publishes this transport's place and reads its peers'. It
// parks the calling goroutine until then.
func New(cfg Config) (*Transport, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	cfg.Peers = slices.Clone(cfg.Peers)
	ex := cfg.Exchange
	world, ierr := cmpi.Init()
	cfg.Whole = wholeFor(cfg.Whole, world.Library)
	cfg.MovedPieces = movedPiecesFor(cfg.MovedPieces, world.Library)
	slot := headSize + cfg.PayloadSize
	ring, lane, gen := takeLane(cfg.Ring, slot, world.TagUB)
	setMovedTags(world.TagUB)
	rec := make([]byte, 20)
	if ierr == nil {
		binary.LittleEndian.PutUint32(rec[0:], uint32(world.Rank))
		binary.LittleEndian.PutUint32(rec[4:], uint32(lane))
		binary.LittleEndian.PutUint32(rec[8:], uint32(world.Size))
		binary.LittleEndian.PutUint32(rec[12:], uint32(cfg.PayloadSize))
		binary.LittleEndian.PutUint32(rec[16:], gen)
	}
	// Take part in the fence whatever happened, so the others return.
	perr := ex.Put(exchangeKey, rec)
	ferr := ex.Fence()
	switch {
	case ierr != nil:
		return nil, fmt.Errorf("mpi: initializing MPI: %w", ierr)
	case perr != nil:
		return nil, fmt.Errorf("mpi: publishing this transport's place: %w", perr)
	case ferr != nil:
		return nil, fmt.Errorf("mpi: fence: %w", ferr)
	}
	if 2*lane > world.TagUB {
		return nil, fmt.Errorf("mpi: %d transports made in this process exceed MPI_TAG_UB %d", lane+1, world.TagUB)
	}
	t := &Transport{
		rank: ex.Rank(), layout: cfg.Layout, cfg: cfg, comm: world.Comm,
		me:     place{rank: world.Rank, lane: lane, gen: gen},
		places: make([]place, ex.Size()), isPeer: make([]bool, ex.Size()), closedP: make([]atomic.Bool, ex.Size()),
		list: cfg.Peers, waits: make(map[uint64]*waiter), inPut: make(map[int]int), asm: make(map[int][]byte), held: make(map[rdma.Addr][]*packet.Packet),
		regs: make(map[uint32]*region), stop: make(chan struct{}),
	}
	t.tagBase = uint64(time.Now().UnixNano())*0x9e3779b97f4a7c15 ^ uint64(lane)<<32
	t.places[t.rank] = t.me
	for _, p := range cfg.Peers {
		b, err := ex.Get(p, exchangeKey)
		if err != nil || len(b) != 20 {
			return nil, &PeerError{Rank: p, Err: fmt.Errorf("%w: no place published (%v)", ErrWorld, err)}
		}
		le := binary.LittleEndian
		pl := place{rank: int(le.Uint32(b[0:])), lane: int(le.Uint32(b[4:])), gen: le.Uint32(b[16:])}
		if size := int(le.Uint32(b[8:])); size != world.Size || pl.rank >= size {
			return nil, &PeerError{Rank: p, Err: fmt.Errorf("%w: its MPI_COMM_WORLD has %d processes, this one's %d", ErrWorld, size, world.Size)}
		}
		if ps := int(le.Uint32(b[12:])); ps != cfg.PayloadSize {
			return nil, &PeerError{Rank: p, Err: fmt.Errorf("%w: payload size %d, this process's %d", ErrInvalidConfig, ps, cfg.PayloadSize)}
		}
		t.places[p] = pl
		t.isPeer[p] = true
	}
	t.pools.Add(cfg.Pool)
	cmpi.Lock()
	cmpi.Reap()
	var err error
	if ring == nil {
		ring, err = cmpi.NewRing(t.comm, t.me.ctrlTag(), cfg.Ring, slot)
	}
	if err == nil {
		t.ring = ring
		t.sendq, err = cmpi.NewSendQ(t.comm, slot)
		if err != nil {
			giveLane(ring, lane, cfg.Ring, slot)
		}
	}
	cmpi.Unlock()
	if err != nil {
		return nil, fmt.Errorf("mpi: %w", err)
	}
	t.wg.Go(t.poller)
	return t, nil
}

// Name returns "mpi".
func (t *Transport) Name() string { return "mpi" }

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
	er, _ := r.(rdma.EagerReceiver)
	t.dir.Store(a, &binding{r: r, er: er, pool: pool})
	// Arrivals held while a was unbound go first: before every other
	// arrival, those left in the release list included. A deliverer that
	// found a unbound took a's arrivals off the head of the release list,
	// oldest first, and held them; a's arrivals still in the list came
	// after them.
	t.imu.Lock()
	if h := t.held[a]; len(h) > 0 {
		rel := make([]arrival, 0, len(h)+len(t.release))
		for _, pk := range h {
			rel = append(rel, arrival{to: a, pk: pk})
		}
		t.release = append(rel, t.release...)
		t.waiting.Add(int32(len(h)))
		delete(t.held, a)
	}
	t.imu.Unlock()
	return t.announce(kBind, a)
}

// Unbind detaches a and tells every peer, parking the calling goroutine
// until each has answered. Arrivals for a not delivered yet are held, in
// order, until a is bound again.
func (t *Transport) Unbind(a rdma.Addr) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed.Load() {
		return rdma.ErrClosed
	}
	if t.dir.Swap(a, nil) == nil {
		return rdma.ErrNoPeer
	}
	return t.announce(kUnbind, a)
}

// announce sends a bind or unbind of a to every peer and waits for their
// answers.
func (t *Transport) announce(kind byte, a rdma.Addr) error {
	ws := make([]*waiter, 0, len(t.list))
	var errs []error
	for _, p := range t.list {
		w := &waiter{proc: p}
		if err := t.call(p, &ctl{kind: kind, addr: uint32(a)}, nil, w); err != nil {
			if !errors.Is(err, rdma.ErrNoPeer) { // a closed peer needs no news
				errs = append(errs, err)
			}
			continue
		}
		ws = append(ws, w)
	}
	for _, w := range ws {
		if err := t.await(w); err != nil && !errors.Is(err, rdma.ErrNoPeer) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (t *Transport) binding(a rdma.Addr) *binding { return t.dir.Load(a) }

// remoteBound reports whether a peer told this transport that a is bound.
func (t *Transport) remoteBound(a rdma.Addr) bool { return t.rdir.Has(a) }

func (t *Transport) setRemote(a rdma.Addr, on bool) { t.rdir.Put(a, on) }

// dest returns the process that owns a, checking that a is bound there
// as far as this transport knows.
func (t *Transport) dest(a rdma.Addr) (int, error) {
	p := t.layout.Owner(a)
	if p < 0 || p >= len(t.places) {
		return -1, rdma.ErrNoPeer
	}
	if p == t.rank {
		if t.binding(a) == nil {
			return -1, rdma.ErrNoPeer
		}
		return p, nil
	}
	if !t.isPeer[p] {
		return -1, fmt.Errorf("%w: address %d belongs to process %d, which this transport does not reach", rdma.ErrNoPeer, a, p)
	}
	if t.closedP[p].Load() {
		return -1, &PeerError{Rank: p, Err: ErrPeerClosed}
	}
	if !t.remoteBound(a) {
		return -1, rdma.ErrNoPeer
	}
	return p, nil
}

// Send copies pk into a message to the endpoint to (MPI_Isend from a
// buffer of the transport) and returns pk to its pool. It never blocks:
// with Config.MaxQueue sends in flight it returns rdma.ErrAgain.
func (t *Transport) Send(w int, to rdma.Addr, pk *packet.Packet) error {
	p, pool, head, err := t.packetHead(to, pk)
	if err != nil {
		return err
	}
	cmpi.Lock()
	if t.closed.Load() {
		err = rdma.ErrClosed
	} else {
		err = t.sendPacket(p, &head, pk)
	}
	cmpi.Unlock()
	if err != nil {
		return err
	}
	pool.Put(w, pk)
	return nil
}

// packetHead checks pk for a send to `to` and encodes its message head:
// it returns to's process and pk's pool. Errors: rdma.ErrClosed, to's
// (dest), ErrTooLong, ErrForeignPacket.
func (t *Transport) packetHead(to rdma.Addr, pk *packet.Packet) (int, *packet.Pool, [headSize]byte, error) {
	var head [headSize]byte
	if t.closed.Load() {
		return 0, nil, head, rdma.ErrClosed
	}
	p, err := t.dest(to)
	if err != nil {
		return 0, nil, head, err
	}
	if pk.Len() > t.cfg.PayloadSize {
		return 0, nil, head, fmt.Errorf("%w: %d bytes, PayloadSize %d", ErrTooLong, pk.Len(), t.cfg.PayloadSize)
	}
	pool := t.pools.Of(pk)
	if pool == nil {
		return 0, nil, head, ErrForeignPacket
	}
	encodePacketHead(&head, t.places[p].gen, uint32(to), pk)
	return p, pool, head, nil
}

// sendPacket sends the packet message head, pk's payload, to process p,
// or returns rdma.ErrAgain when the send queue is full. The caller holds
// the MPI lock.
func (t *Transport) sendPacket(p int, head *[headSize]byte, pk *packet.Packet) error {
	if err := t.room(); err != nil {
		return err
	}
	pl := t.places[p]
	if err := t.sendMsg(head, pk.Data(), pl.rank, pl.ctrlTag()); err != nil {
		return &PeerError{Rank: p, Err: err}
	}
	return nil
}

// sendMsg sends a packet message, head then body, to MPI rank rank on
// tag: as one message, or, when it is longer than Config.Whole, as a
// kPacketFirst and kPacketMore messages of at most Whole bytes each, back
// to back (the caller holds the MPI lock, so no other message of this
// process comes between them on tag). head[0] is kPacket; a split head
// keeps its kind for the caller.
func (t *Transport) sendMsg(head *[headSize]byte, body []byte, rank, tag int) error {
	if t.oneMessage(headSize + len(body)) {
		return t.sendq.Send(head[:], body, rank, tag)
	}
	part := t.cfg.Whole - headSize
	first := *head
	first[0] = kPacketFirst
	if err := t.sendq.Send(first[:], body[:part], rank, tag); err != nil {
		return err
	}
	var more [headSize]byte
	more[0] = kPacketMore
	copy(more[1:4], head[1:4]) // the generation
	for rest := body[part:]; len(rest) > 0; {
		k := min(len(rest), part)
		if err := t.sendq.Send(more[:], rest[:k], rank, tag); err != nil {
			return err
		}
		rest = rest[k:]
	}
	return nil
}

// oneMessage reports whether a packet message of n bytes, head included,
// goes as one MPI message (Config.Whole: -1 never splits).
func (t *Transport) oneMessage(n int) bool {
	return t.cfg.Whole < 0 || n <= t.cfg.Whole
}

// SendEager sends an eager message straight from data, as Send would a
// packet holding it (one copy, by the same cgo call), without the packet.
// It reports false, having done nothing, whenever Send would not succeed
// at once (closed, unbound, too long, a full queue): the caller then sends
// a packet, and Send says why.
func (t *Transport) SendEager(w int, to rdma.Addr, h rdma.EagerHeader, data []byte) bool {
	if t.closed.Load() || len(data) > t.cfg.PayloadSize {
		return false
	}
	p, err := t.dest(to)
	if err != nil {
		return false
	}
	pl := &t.places[p]
	cmpi.Lock()
	defer cmpi.Unlock()
	if t.closed.Load() {
		return false
	}
	if t.sendq.Active() >= t.cfg.MaxQueue {
		if n, err := t.sendq.Test(); err != nil || n >= t.cfg.MaxQueue {
			return false
		}
	}
	if n := headSize + len(data); t.oneMessage(n) {
		// The message built in place, in the C buffer it is sent from.
		if b := t.sendq.Top(n); b != nil {
			eagerHead((*[headSize]byte)(b), pl.gen, to, h, len(data))
			copy(b[headSize:], data)
			return t.sendq.SendTop(n, pl.rank, pl.ctrlTag()) == nil
		}
	}
	var head [headSize]byte
	eagerHead(&head, pl.gen, to, h, len(data))
	return t.sendMsg(&head, data, pl.rank, pl.ctrlTag()) == nil
}

// eagerHead writes every byte of the head of a packet for to holding an
// eager message of n bytes with header h, for a transport of generation
// gen: the head's 8 bytes, then the packet's wire header.
func eagerHead(b *[headSize]byte, gen uint32, to rdma.Addr, h rdma.EagerHeader, n int) {
	b[0] = kPacket
	putGen(b, gen)
	binary.LittleEndian.PutUint32(b[4:], uint32(to))
	packet.EncodeEager(b[pktHead:], h.Context, h.Source, h.Tag, uint32(h.From), n)
}

// sendCtl sends a control message to pl; the caller holds the MPI lock.
func (t *Transport) sendCtl(pl place, c *ctl) error {
	var head [headSize]byte
	c.from = uint32(t.rank)
	c.encode(&head, pl.gen)
	return t.sendq.Send(head[:], nil, pl.rank, pl.ctrlTag())
}

// call sends c to process p as a request with a fresh id, to be answered
// to w. body, if not nil, is sent after it on p's data tag (a Put's
// bytes, pinned by the caller); w.dst is where a Get's bytes go (pinned by
// the caller). On error nothing was sent and w is not used.
func (t *Transport) call(p int, c *ctl, body []byte, w *waiter) error {
	w.left = chunks(len(body), cmpi.MaxMessage)
	cmpi.Lock()
	defer cmpi.Unlock()
	if err := t.usable(p); err != nil {
		return err
	}
	t.nextID++
	c.id = t.nextID
	pl := t.places[p]
	if err := t.sendCtl(pl, c); err != nil {
		return &PeerError{Rank: p, Err: err}
	}
	t.waits[c.id] = w
	t.sendChunks(w, c.id, p, body, pl.rank, pl.dataTag(), cmpi.MaxMessage)
	return nil
}

// usable reports why nothing may be sent to process p now: this
// transport or p's is closed. The caller holds the MPI lock.
func (t *Transport) usable(p int) error {
	if t.closed.Load() {
		return rdma.ErrClosed
	}
	if t.closedP[p].Load() {
		return &PeerError{Rank: p, Err: ErrPeerClosed}
	}
	return nil
}

// room returns rdma.ErrAgain when Config.MaxQueue sends are in flight
// still after the completed ones are retired (or the error of testing
// them). The caller holds the MPI lock.
func (t *Transport) room() error {
	if t.sendq.Active() < t.cfg.MaxQueue {
		return nil
	}
	n, err := t.sendq.Test()
	if err != nil {
		return err
	}
	if n >= t.cfg.MaxQueue {
		return rdma.ErrAgain
	}
	return nil
}

// sendChunks posts b to MPI rank rank on tag as chunks of at most piece
// bytes (cmpi.MaxMessage, or a moved message's pieces), each an op of w
// (the last one marked), which counts them in w.left already. When MPI
// refuses a chunk the peer would wait for bytes that never come, so the
// transport cannot go on with it: w ends with a *PeerError naming process
// p and leaves t.waits (as id), and the rest is not sent. The caller holds
// the MPI lock.
func (t *Transport) sendChunks(w *waiter, id uint64, p int, b []byte, rank, tag, piece int) {
	for off := 0; off < len(b); off += piece {
		end := min(off+piece, len(b))
		r, err := t.comm.Isend(b[off:end], rank, tag)
		if err != nil {
			w.err = &PeerError{Rank: p, Err: err}
			w.left = 0
			delete(t.waits, id)
			t.settle(w)
			return
		}
		t.addOp(r, op{w: w, last: end == len(b)})
	}
}

// recvChunks posts receives of b from MPI rank rank on tag, as the chunks
// sendChunks sends, each an op of w counted in w.left. When MPI refuses
// one, w fails with a *PeerError naming process p; the chunks posted
// before it still complete. The caller holds the MPI lock.
func (t *Transport) recvChunks(w *waiter, p int, b []byte, rank, tag, piece int) {
	for off := 0; off < len(b); off += piece {
		end := min(off+piece, len(b))
		r, err := t.comm.Irecv(b[off:end], rank, tag)
		if err != nil {
			w.err = &PeerError{Rank: p, Err: err}
			return
		}
		w.left++
		t.addOp(r, op{w: w, last: end == len(b)})
	}
}

// settle marks w done and queues a started Put's end for its PutDone,
// once (Progress delivers it); the caller holds the MPI lock.
func (t *Transport) settle(w *waiter) {
	w.done.Store(true)
	if w.async == nil || w.settled {
		return
	}
	w.settled = true
	t.imu.Lock()
	t.putDone = append(t.putDone, w)
	t.waiting.Add(1)
	t.imu.Unlock()
}

// endPut tells a started Put's PutDone its result, after unpinning its
// source (MPI is done with it).
func (t *Transport) endPut(wk int, w *waiter) {
	unpin(&w.pin)
	if w.into != nil && w.err == nil {
		copy(w.into, w.scratch)
	}
	w.scratch, w.into = nil, nil
	err := t.boundsErr(w.result(), w.region, w.off, w.n)
	w.async.PutDone(wk, err)
}

// chunks returns the number of messages of at most piece bytes a
// transfer of n bytes takes.
func chunks(n, piece int) int { return (n + piece - 1) / piece }

func (t *Transport) addOp(r cmpi.Request, o op) {
	t.ops = append(t.ops, o)
	t.reqs = append(t.reqs, r)
	if len(t.idx) < len(t.reqs) {
		t.idx = make([]int32, 2*len(t.reqs))
	}
}

// await polls until w is done, parking the calling goroutine between
// polls (it yields the processor; called from a fiber, it blocks the
// fiber's worker). Arrivals it polls wait in the inbox for Progress.
func (t *Transport) await(w *waiter) error {
	calls.Add(1)
	defer calls.Add(-1)
	for spin := 0; !w.done.Load(); spin++ {
		if cmpi.TryLock() {
			if !t.closed.Load() {
				t.pollLocked(packet.NoWorker, 0)
			}
			cmpi.Unlock()
		}
		if w.done.Load() {
			break
		}
		// After Close started, Close ends every wait (it must first
		// stop the transfers that use the caller's buffers). The caller
		// is often a fiber worker, an OS-thread-locked goroutine: there
		// runtime.Gosched hands the thread's P away and back through two
		// futex wake-ups, so the wait yields the OS thread instead.
		if spin > 16 {
			osYield()
		}
		if spin > 1<<16 {
			time.Sleep(20 * time.Microsecond)
		}
	}
	return w.result()
}

// Register exposes buf for Put and Get by peers until Deregister; it pins
// buf (runtime.Pinner), since MPI writes and reads it from C.
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
	g := &region{buf: buf, tag: t.tagBase ^ uint64(k)*0x9e3779b97f4a7c15, pin: pinBytes(buf)}
	t.regs[k] = g
	return rdma.Region{Key: k, Addr: g.tag, Len: uint64(len(buf))}, nil
}

// AdoptRegion makes a registration of another backend of this process
// (the one whose Region travels to peers, see rdma/route) reachable by
// this transport's peers too. That backend keeps buf pinned.
func (t *Transport) AdoptRegion(r rdma.Region, buf []byte) error {
	t.regMu.Lock()
	defer t.regMu.Unlock()
	if t.closed.Load() {
		return rdma.ErrClosed
	}
	t.regs[r.Key] = &region{buf: buf, tag: r.Addr}
	return nil
}

// Deregister withdraws a registration (own or adopted). A transfer in
// flight into or out of it finishes first; then the buffer is unpinned.
func (t *Transport) Deregister(r rdma.Region) error {
	t.regMu.Lock()
	if t.closed.Load() {
		t.regMu.Unlock()
		return rdma.ErrClosed
	}
	g, ok := t.regs[r.Key]
	if !ok || g.tag != r.Addr || uint64(len(g.buf)) != r.Len {
		t.regMu.Unlock()
		return rdma.ErrNoRegion
	}
	delete(t.regs, r.Key)
	// A lookup that found g before the delete counted it busy (under
	// regMu): its transfer's end unpins it. Deregister takes no MPI lock,
	// so a Receiver may call it from a delivery made under that lock
	// (ReceiveEager).
	if g.busy > 0 {
		g.gone = true
	} else {
		unpin(&g.pin)
	}
	t.regMu.Unlock()
	return nil
}

// lookup returns the registration and the bytes of an access c names, or
// a status; with stOK the registration is counted busy until unbusy. The
// caller holds the MPI lock.
func (t *Transport) lookup(c *ctl) (*region, []byte, uint32) {
	if t.binding(rdma.Addr(c.addr)) == nil {
		return nil, nil, stNoPeer
	}
	t.regMu.Lock()
	defer t.regMu.Unlock()
	g, ok := t.regs[c.key]
	if !ok || g.tag != c.tag {
		return nil, nil, stNoRegion
	}
	rl := uint64(len(g.buf))
	if c.off > rl || c.n > rl-c.off {
		return nil, nil, stBounds
	}
	g.busy++
	return g, g.buf[c.off : c.off+c.n], stOK
}

// access checks a Put or Get towards owner and returns the owner's
// process, or handles it here when the owner is this process.
func (t *Transport) access(owner rdma.Addr, r rdma.Region, off uint64, n int) (int, error) {
	if t.closed.Load() {
		return -1, rdma.ErrClosed
	}
	p, err := t.dest(owner)
	if err != nil {
		return -1, err
	}
	if err := rdma.CheckBounds(r, off, n); err != nil {
		return -1, err
	}
	return p, nil
}

func (t *Transport) boundsErr(err error, r rdma.Region, off uint64, n int) error {
	if errors.Is(err, rdma.ErrOutOfBounds) {
		return &rdma.BoundsError{Region: r, Off: off, Len: n}
	}
	return err
}

// Put copies src into the region r of owner at off: the bytes travel as
// MPI messages on the owner's data tag, received straight into the
// registration, and Put returns when the owner has them (it parks the
// calling goroutine between polls).
func (t *Transport) Put(owner rdma.Addr, r rdma.Region, off uint64, src []byte) error {
	p, err := t.access(owner, r, off, len(src))
	if err != nil {
		return err
	}
	if p == t.rank {
		return t.localCopy(owner, r, off, src, true)
	}
	var pin runtime.Pinner
	if len(src) > 0 {
		pin.Pin(&src[0])
	}
	defer pin.Unpin()
	w := &waiter{proc: p}
	if err := t.call(p, &ctl{kind: kPut, addr: uint32(owner), key: r.Key, tag: r.Addr, off: off, n: uint64(len(src))}, src, w); err != nil {
		return err
	}
	return t.boundsErr(t.await(w), r, off, len(src))
}

// StartPut starts a Put of src into the region r of owner at off and
// returns at once (pending true): its head goes to the owner, which posts
// the bytes' receive and says so (kPutGo); the bytes go then, from the
// poll that finds that answer, so they always meet a posted receive.
// done.PutDone is called from the Progress that finds the owner's last
// answer in (the bytes are in the region) and MPI done with src (or from
// Close). src stays
// pinned until then. An owner in this process is copied to at once
// (pending false), and so is a failure found before anything was sent.
func (t *Transport) StartPut(owner rdma.Addr, r rdma.Region, off uint64, src []byte, done rdma.PutDone) (bool, error) {
	p, err := t.access(owner, r, off, len(src))
	if err != nil {
		return false, err
	}
	if p == t.rank {
		return false, t.localCopy(owner, r, off, src, true)
	}
	w := &waiter{proc: p, async: done, region: r, off: off, n: len(src), pin: pinBytes(src)}
	// The bytes wait for the owner's kPutGo: sent before their receive
	// is posted, they would reach the owner's MPI as an unexpected
	// message.
	w.src = src
	if err := t.call(p, &ctl{kind: kPutAsk, addr: uint32(owner), key: r.Key, tag: r.Addr, off: off, n: uint64(len(src))}, nil, w); err != nil {
		unpin(&w.pin)
		return false, err
	}
	return true, nil
}

// Get copies from the region r of owner at off into dst; it parks the
// calling goroutine between polls until the bytes are there.
func (t *Transport) Get(owner rdma.Addr, r rdma.Region, off uint64, dst []byte) error {
	p, err := t.access(owner, r, off, len(dst))
	if err != nil {
		return err
	}
	if p == t.rank {
		return t.localCopy(owner, r, off, dst, false)
	}
	var pin runtime.Pinner
	if len(dst) > 0 {
		pin.Pin(&dst[0])
	}
	defer pin.Unpin()
	w := &waiter{proc: p, dst: dst}
	if err := t.call(p, &ctl{kind: kGet, addr: uint32(owner), key: r.Key, tag: r.Addr, off: off, n: uint64(len(dst))}, nil, w); err != nil {
		return err
	}
	return t.boundsErr(t.await(w), r, off, len(dst))
}

// localCopy is a Put (put) or Get into a registration of this process.
func (t *Transport) localCopy(owner rdma.Addr, r rdma.Region, off uint64, b []byte, put bool) error {
	cmpi.Lock()
	g, buf, st := t.lookup(&ctl{addr: uint32(owner), key: r.Key, tag: r.Addr, off: off, n: uint64(len(b))})
	cmpi.Unlock()
	switch st {
	case stNoPeer:
		return rdma.ErrNoPeer
	case stNoRegion:
		return rdma.ErrNoRegion
	case stBounds:
		return &rdma.BoundsError{Region: r, Off: off, Len: len(b)}
	}
	if put {
		copy(buf, b)
	} else {
		copy(b, buf)
	}
	t.unbusy(g)
	return nil
}

// unbusy ends a transfer on g.
func (t *Transport) unbusy(g *region) {
	t.regMu.Lock()
	g.busy--
	if g.busy == 0 && g.gone {
		unpin(&g.pin)
	}
	t.regMu.Unlock()
}

// Progress polls MPI (if no other goroutine is doing so) and delivers the
// arrivals, in order, to their Receivers (if no other goroutine is doing
// so: that one delivers them, or the next Progress). It never blocks. A
// poll that finds nothing takes two locked instructions (the MPI lock's)
// and one cgo call.
func (t *Transport) Progress(w int) int {
	n, _ := t.progress(w, 0, nil)
	return n
}

// TakeEager implements rdma.EagerTaker. It polls as Progress does, and
// offers an eager message for to that the poll could hand straight to its
// receiver (receiveEager: nothing that arrived before it waits for
// delivery) to tk first. MPI has one ring for every process, so the
// message looked at is the next one from any process, not only from
// from's: one for another address, or one tk does not take, is delivered
// as Progress delivers it, and TakeEager then reports TakeOther, as it
// does for anything else the poll handled.
func (t *Transport) TakeEager(w int, from, to rdma.Addr, tk rdma.EagerTake) rdma.Take {
	switch n, took := t.progress(w, to, tk); {
	case took:
		return rdma.Took
	case n > 0 || t.closed.Load():
		return rdma.TakeOther
	default:
		return rdma.TakeNone
	}
}

// progress is Progress; tk, if not nil, is offered the eager arrivals for
// to first (TakeEager), and took reports whether it took one.
func (t *Transport) progress(w int, to rdma.Addr, tk rdma.EagerTake) (n int, took bool) {
	if t.closed.Load() {
		return 0, false
	}
	if !t.polled.Load() {
		t.polled.Store(true)
	}
	held := false
	if cmpi.TryLock() {
		if !t.closed.Load() {
			t.direct = true
			if tk != nil {
				t.take.to, t.take.tk = to, tk
			}
			spin := 0
			if t.idle >= 2 {
				spin = max(t.cfg.Spin, 0)
			}
			n = t.pollLocked(w, spin)
			if n == 0 {
				t.idle++
			} else {
				t.idle = 0
			}
			held = t.dheld
			t.direct, t.dheld = false, false
			if tk != nil {
				took = t.take.took
				t.take.tk, t.take.took = nil, false
			}
		}
		cmpi.Unlock()
	}
	if held || t.waiting.Load() > 0 && t.dmu.TryLock() {
		n += t.deliver(w)
		t.dmu.Unlock()
	}
	if took {
		n-- // the message taken is no event of Progress's
	}
	return n, took
}

// deliver hands the arrivals waiting in the inbox to their Receivers; the
// caller holds dmu.
func (t *Transport) deliver(w int) int {
	if t.waiting.Load() == 0 {
		return 0 // nothing to deliver: no lock taken
	}
	n := 0
	for {
		t.imu.Lock()
		var a arrival
		switch {
		case len(t.putDone) > 0:
			pw := t.putDone[0]
			t.putDone[0] = nil
			t.putDone = t.putDone[1:]
			t.waiting.Add(-1)
			t.imu.Unlock()
			t.endPut(w, pw)
			n++
			continue
		case len(t.release) > 0:
			a = t.release[0]
			t.release[0] = arrival{}
			t.waiting.Add(-1)
			t.release = t.release[1:]
		case t.ihead < len(t.inbox):
			a = t.inbox[t.ihead]
			t.inbox[t.ihead] = arrival{}
			t.waiting.Add(-1)
			if t.ihead++; t.ihead == len(t.inbox) {
				t.inbox, t.ihead = t.inbox[:0], 0
			}
		default:
			t.imu.Unlock()
			return n
		}
		if a.pk == nil {
			// Built now that a packet may be free.
			pk := t.build(w, a.to, a.raw)
			if pk == nil {
				t.pushFront(a)
				t.imu.Unlock()
				return n
			}
			a.pk, a.raw = pk, nil
		}
		b := t.binding(a.to)
		if b == nil || len(t.held[a.to]) > 0 {
			t.held[a.to] = append(t.held[a.to], a.pk)
			t.imu.Unlock()
			continue
		}
		t.imu.Unlock()
		b.r.Receive(w, a.pk)
		n++
	}
}

// maxBatch bounds the ring slots one poll consumes.
const maxBatch = 32

// pollLocked retires completed sends, turns the complete ring slots into
// arrivals (or answers them), and completes data transfers. When the ring
// has nothing, the poll tests its head up to spin more times before it
// returns (cmpi.Ring.Poll). A poll that follows an empty one takes only
// the head: testing the slot after it, usually empty after a wait, would
// run MPI's progress engine once more before the message is handled (0.1
// µs of every one-way latency; BENCHMARKS.md, issue 17, session 9). The
// caller holds the MPI lock. It returns the number of events handled.
func (t *Transport) pollLocked(w, spin int) int {
	batch := maxBatch
	if t.idle > 0 {
		batch = 1
	}
	k, err := t.ring.Poll(t.sendq, batch, spin)
	if err != nil {
		t.cfg.Logf("mpi: process %d: %v", t.rank, err)
	}
	used := 0
	for ; used < k; used++ {
		msg, src := t.ring.Slot(used)
		if !t.handle(w, msg, src) {
			break // no packet to build it in: try again later
		}
	}
	t.ring.Consume(used)
	return used + t.testOps()
}

// handle acts on one message; it returns false if it must be tried again
// later (the destination's pool is dry).
func (t *Transport) handle(w int, msg []byte, src int) bool {
	if len(msg) < headSize {
		t.cfg.Logf("mpi: process %d: dropped a message of %d bytes from MPI rank %d", t.rank, len(msg), src)
		return true
	}
	if genOf(msg) != t.me.gen {
		return true // for an earlier transport of this lane
	}
	// A Put is answered as soon as its bytes' receive is posted, so the
	// answer travels while the bytes do; what the sender sends after its
	// Put returns (the Done that says the bytes are there) waits here
	// until the receive has completed.
	if len(t.inPut) > 0 && t.inPut[src] > 0 {
		t.testOps()
		if t.inPut[src] > 0 {
			return false
		}
	}
	switch msg[0] {
	case kPacket:
		return t.arrive(w, msg, src)
	case kPacketFirst, kPacketMore:
		t.assemble(w, msg, src)
		return true
	}
	var c ctl
	c.decode(msg)
	p := int(c.from)
	if p < 0 || p >= len(t.places) || (!t.isPeer[p] && p != t.rank) {
		t.cfg.Logf("mpi: process %d: dropped a message of kind %d from process %d, no peer", t.rank, c.kind, p)
		return true
	}
	pl := t.places[p]
	switch c.kind {
	case kBind, kUnbind:
		t.setRemote(rdma.Addr(c.addr), c.kind == kBind)
		t.answer(pl, &ctl{kind: kAck, id: c.id})
	case kAck, kPutAck:
		if wt := t.waits[c.id]; wt != nil {
			delete(t.waits, c.id)
			wt.code, wt.acked = c.code, true
			wt.src = nil // a refused kPutAsk's bytes are never sent
			t.finish(wt)
		}
	case kGetAck:
		wt := t.waits[c.id]
		if wt == nil {
			break
		}
		delete(t.waits, c.id)
		wt.code, wt.acked = c.code, true
		if c.code == stOK {
			t.recvChunks(wt, p, wt.dst, pl.rank, t.me.dataTag(), cmpi.MaxMessage)
		}
		t.finish(wt)
	case kPutGo:
		wt := t.waits[c.id]
		if wt == nil || wt.src == nil {
			break
		}
		src := wt.src
		wt.src = nil
		wt.left += chunks(len(src), cmpi.MaxMessage)
		t.sendChunks(wt, c.id, p, src, pl.rank, pl.putTag(), cmpi.MaxMessage)
	case kPutAsk:
		g, buf, st := t.lookup(&c)
		ack := &ctl{kind: kPutAck, id: c.id, code: st}
		if st != stOK || c.n == 0 {
			// Refused before any byte moved (or none to move): the
			// sender sends none.
			if g != nil {
				t.unbusy(g)
			}
			t.answer(pl, ack)
			break
		}
		la := &lateAck{c: ack, to: pl, left: chunks(int(c.n), cmpi.MaxMessage)}
		for off := uint64(0); off < c.n; off += cmpi.MaxMessage {
			end := min(off+cmpi.MaxMessage, c.n)
			r, err := t.comm.Irecv(buf[off:end], pl.rank, t.me.putTag())
			if err != nil {
				t.cfg.Logf("mpi: process %d: receiving a Put from process %d: %v", t.rank, p, err)
				ack.code = stNoRegion
				if off == 0 { // nothing posted: refuse it, no bytes come
					t.unbusy(g)
					t.answer(pl, ack)
					la = nil
				}
				break
			}
			o := op{ack: la, last: end == c.n}
			if o.last {
				o.reg = g
			}
			t.addOp(r, o)
		}
		if la != nil {
			t.answer(pl, &ctl{kind: kPutGo, id: c.id})
		}
	case kPut:
		g, buf, st := t.lookup(&c)
		var junk *discard
		if st != stOK {
			// Take the bytes anyway (they are on their way) and throw
			// them away.
			g = nil
			if c.n > 0 {
				junk = newDiscard(int(min(c.n, cmpi.MaxMessage)), chunks(int(c.n), cmpi.MaxMessage))
			}
		}
		ack := &ctl{kind: kPutAck, id: c.id, code: st}
		if c.n == 0 {
			if g != nil {
				t.unbusy(g)
			}
			t.answer(pl, ack)
			break
		}
		for off := uint64(0); off < c.n; off += cmpi.MaxMessage {
			end := min(off+cmpi.MaxMessage, c.n)
			var into []byte
			if g != nil {
				into = buf[off:end]
			} else {
				into = junk.buf[:end-off]
			}
			r, err := t.comm.Irecv(into, pl.rank, t.me.dataTag())
			if err != nil {
				t.cfg.Logf("mpi: process %d: receiving a Put from process %d: %v", t.rank, p, err)
				ack.code = stNoRegion
			}
			o := op{last: end == c.n, junk: junk, from: src + 1}
			if o.last {
				o.reg = g
			}
			t.inPut[src]++
			t.addOp(r, o)
		}
		// The sender's Put returns once this answer is there and its own
		// send has completed (MPI's completion: the bytes are taken).
		t.answer(pl, ack)
	case kGet:
		g, buf, st := t.lookup(&c)
		t.answer(pl, &ctl{kind: kGetAck, id: c.id, code: st})
		if st != stOK {
			break
		}
		if c.n == 0 {
			t.unbusy(g)
			break
		}
		for off := uint64(0); off < c.n; off += cmpi.MaxMessage {
			end := min(off+cmpi.MaxMessage, c.n)
			r, err := t.comm.Isend(buf[off:end], pl.rank, pl.dataTag())
			if err != nil {
				t.cfg.Logf("mpi: process %d: answering a Get of process %d: %v", t.rank, p, err)
			}
			o := op{last: end == c.n}
			if o.last {
				o.reg = g
			}
			t.addOp(r, o)
		}
	case kBye:
		t.closedP[p].Store(true)
		for id, wt := range t.waits {
			if wt.proc == p {
				delete(t.waits, id)
				wt.err = &PeerError{Rank: p, Err: ErrPeerClosed}
				wt.acked, wt.left = true, 0
				t.settle(wt)
			}
		}
	default:
		t.cfg.Logf("mpi: process %d: dropped a message of unknown kind %d from process %d", t.rank, c.kind, p)
	}
	return true
}

// finish marks wt done once it is answered and its transfers are over.
func (t *Transport) finish(wt *waiter) {
	if wt.acked && wt.left == 0 {
		t.settle(wt)
	}
}

// answer sends an answer from the poll; a failure is logged (the peer's
// call then waits until this transport or the job ends).
func (t *Transport) answer(pl place, c *ctl) {
	if err := t.sendCtl(pl, c); err != nil {
		t.cfg.Logf("mpi: process %d: answering MPI rank %d: %v", t.rank, pl.rank, err)
	}
}

// arrive queues a packet message for delivery, built in a packet of the
// destination's pool, or kept as bytes when that pool is dry: the ring
// must go on, since the control messages behind it (a peer's Bind, the
// answer a caller here waits for) may be what frees packets. MPI would
// buffer the same bytes if the ring stopped; the endpoint layer's own
// windows bound them.
func (t *Transport) arrive(w int, msg []byte, src int) bool {
	to := rdma.Addr(binary.LittleEndian.Uint32(msg[4:]))
	if err := checkPacket(msg, t.cfg.PayloadSize); err != nil {
		t.cfg.Logf("mpi: process %d: dropped a malformed packet of %d bytes from MPI rank %d (%v)", t.rank, len(msg), src, err)
		return true
	}
	if t.direct && t.receiveEager(w, to, msg) {
		return true
	}
	t.imu.Lock()
	defer t.imu.Unlock()
	if t.ihead == len(t.inbox) || t.inbox[len(t.inbox)-1].pk != nil {
		if pk := t.build(w, to, msg); pk != nil {
			t.push(arrival{to: to, pk: pk})
			return true
		}
	}
	t.push(arrival{to: to, raw: append([]byte(nil), msg...)})
	return true
}

// assemble takes the part msg of a packet longer than Config.Whole from
// MPI rank src (kPacketFirst, kPacketMore) into t.asm[src], the packet's
// head and its payload so far, and, with the last part, hands the joined
// packet to arrive, which copies what it keeps. Parts out of turn are
// logged and dropped. The caller holds the MPI lock.
func (t *Transport) assemble(w int, msg []byte, src int) {
	a := t.asm[src]
	if msg[0] == kPacketFirst {
		if n := payloadLen(msg); n > t.cfg.PayloadSize || headSize+n <= len(msg) {
			t.cfg.Logf("mpi: process %d: dropped the first part of a packet of %d bytes in %d from MPI rank %d", t.rank, n, len(msg), src)
			return
		}
		if len(a) > 0 {
			t.cfg.Logf("mpi: process %d: dropped %d bytes of an unfinished packet from MPI rank %d", t.rank, len(a), src)
		} else if a == nil {
			a = make([]byte, 0, headSize+t.cfg.PayloadSize)
		}
		a = append(a[:0], msg...)
		a[0] = kPacket
		t.asm[src] = a
		return
	}
	if len(a) == 0 || len(a)+len(msg)-headSize > headSize+payloadLen(a) {
		t.cfg.Logf("mpi: process %d: dropped a part of %d bytes of no packet from MPI rank %d", t.rank, len(msg), src)
		t.asm[src] = a[:0]
		return
	}
	a = append(a, msg[headSize:]...)
	if len(a) == headSize+payloadLen(a) {
		t.arrive(w, a, src)
		a = a[:0]
	}
	t.asm[src] = a
}

// receiveEager hands an eager message straight from the ring to its
// destination's EagerReceiver (into a receive posted for it), and reports
// whether it took it. It may only when nothing that arrived before waits
// for delivery: it takes dmu (with TryLock: the MPI lock is held, and a
// deliverer holds dmu while its Receiver sends), so no deliverer is
// between taking an arrival and delivering it, and then finds the inbox,
// the release list and the address's held list empty. Progress calls it
// (t.direct), holding the MPI lock, and delivers and releases dmu after.
func (t *Transport) receiveEager(w int, to rdma.Addr, msg []byte) bool {
	ctx, src, tag, from, n, ok := packet.PeekEager(msg[pktHead:])
	if !ok {
		return false
	}
	b := t.binding(to)
	if b == nil || b.er == nil {
		return false
	}
	if !t.dheld {
		if t.dheld = t.dmu.TryLock(); !t.dheld {
			return false
		}
	}
	t.imu.Lock()
	// held has an entry only while it holds packets: an empty map spares
	// the lookup.
	empty := t.ihead == len(t.inbox) && len(t.release) == 0 && (len(t.held) == 0 || len(t.held[to]) == 0)
	t.imu.Unlock()
	if !empty {
		return false
	}
	h, data := rdma.EagerHeader{From: rdma.Addr(from), Context: ctx, Source: src, Tag: tag}, msg[headSize:headSize+n]
	if t.take.tk != nil && !t.take.took && to == t.take.to && t.take.tk.TakeEager(h, data) {
		t.take.took = true
		return true
	}
	return b.er.ReceiveEager(w, h, data)
}

// push appends a to the inbox, moving the waiting arrivals to the front of
// the array first when it is full; the caller holds imu.
func (t *Transport) push(a arrival) {
	if len(t.inbox) == cap(t.inbox) && t.ihead > 0 {
		n := copy(t.inbox, t.inbox[t.ihead:])
		clear(t.inbox[n:])
		t.inbox, t.ihead = t.inbox[:n], 0
	}
	t.inbox = append(t.inbox, a)
	t.waiting.Add(1)
}

// pushFront puts a back at the head of the inbox; the caller holds imu.
func (t *Transport) pushFront(a arrival) {
	t.waiting.Add(1)
	if t.ihead > 0 {
		t.ihead--
		t.inbox[t.ihead] = a
		return
	}
	t.inbox = append(t.inbox, arrival{})
	copy(t.inbox[1:], t.inbox)
	t.inbox[0] = a
}

// checkPacket checks a packet message's length against its header.
func checkPacket(msg []byte, payload int) error {
	if len(msg) < headSize {
		return fmt.Errorf("%d bytes", len(msg))
	}
	n := payloadLen(msg)
	if n > payload || headSize+n != len(msg) {
		return fmt.Errorf("a payload of %d bytes in a message of %d", n, len(msg))
	}
	return nil
}

// build makes a packet of msg in the destination's pool, or returns nil
// when that pool is dry (or there is none).
func (t *Transport) build(w int, to rdma.Addr, msg []byte) *packet.Packet {
	var pool *packet.Pool
	if b := t.binding(to); b != nil {
		pool = b.pool
	} else if t.cfg.Pool != nil {
		pool = t.cfg.Pool
	} else if p := t.pools.First(); p != nil {
		pool = p
	} else {
		return nil
	}
	pk := pool.Get(w)
	if pk == nil {
		return nil
	}
	if err := pk.DecodeHeader(msg[pktHead:]); err != nil {
		panic(fmt.Sprintf("mpi: a checked packet header failed to decode: %v", err))
	}
	copy(pk.Payload(), msg[headSize:])
	return pk
}

// testOps tests the data transfers in flight and completes those done.
// The caller holds the MPI lock.
func (t *Transport) testOps() int {
	if len(t.reqs) == 0 {
		return 0
	}
	n, err := cmpi.Testsome(t.reqs, t.idx)
	if err != nil {
		t.cfg.Logf("mpi: process %d: %v", t.rank, err)
	}
	if n == 0 {
		return 0
	}
	for _, i := range t.idx[:n] {
		o := &t.ops[i]
		if o.w != nil {
			o.w.left--
			t.finish(o.w)
		}
		if o.junk != nil {
			o.junk.done()
		}
		if o.from > 0 {
			if t.inPut[o.from-1]--; t.inPut[o.from-1] == 0 {
				delete(t.inPut, o.from-1)
			}
		}
		if o.last && o.reg != nil {
			t.unbusy(o.reg)
		}
		if a := o.ack; a != nil {
			if a.left--; a.left == 0 {
				t.answer(a.to, a.c)
			}
		}
		o.w = nil // marks it done for the compaction below
		o.reg, o.ack, o.junk = nil, nil, nil
	}
	j := 0
	for i := range t.reqs {
		if !t.reqs[i].Null() {
			t.reqs[j], t.ops[j] = t.reqs[i], t.ops[i]
			j++
		}
	}
	clear(t.ops[j:])
	t.reqs, t.ops = t.reqs[:j], t.ops[:j]
	return n
}

// poller polls MPI when nobody calls Progress, so that the peers' Bind,
// Put and Get are answered while this process computes or sleeps: every
// 20 µs after activity, backing off to 2 ms when idle; while Progress is
// called it only looks whether it still is, backing off to 20 ms.
func (t *Transport) poller() {
	// driven is the longest period while someone else calls Progress:
	// each wake-up of the poller is a thread woken on a machine whose
	// cores the workers keep busy, and on 2 cores it preempted a worker
	// (about 500 times a second at 2 ms).
	const least, most, driven = 20 * time.Microsecond, 2 * time.Millisecond, 20 * time.Millisecond
	delay := least
	tm := time.NewTimer(delay)
	defer tm.Stop()
	for {
		select {
		case <-t.stop:
			return
		case <-tm.C:
		}
		if t.polled.Load() && calls.Load() == 0 {
			// Someone drives progress: back off, but gradually, since
			// that someone may call Progress only now and then while
			// peers wait for answers.
			t.polled.Store(false)
			delay = min(2*delay, driven)
		} else if cmpi.TryLock() {
			n := 0
			if !t.closed.Load() {
				n = t.pollLocked(packet.NoWorker, 0)
			}
			cmpi.Unlock()
			if n > 0 || calls.Load() > 0 { // or a call of this process waits for an answer
				delay = least
			} else {
				delay = min(2*delay, most)
			}
		}
		tm.Reset(delay)
	}
}

// Sleep sleeps for at most max (capped at 100 µs): MPI cannot wake a
// sleeper when a message arrives, so a short nap is all that keeps an idle
// process responsive. It parks the calling goroutine.
func (t *Transport) Sleep(max time.Duration) {
	time.Sleep(min(max, 100*time.Microsecond))
}

// closeWait bounds how long Close waits for its messages in flight and for
// its peers' goodbyes.
const closeWait = 2 * time.Second

// Close says goodbye to every peer, waits (at most 2 s) for the messages
// in flight to be taken and for the goodbye of every peer in another MPI
// process, cancels the posted receives and returns the arrivals not
// delivered to their pools. Every later call fails with rdma.ErrClosed.
// It parks the calling goroutine.
//
// A peer's goodbye is the last message it sends to this transport. Waiting
// for it keeps the receives of this process's lane posted until nothing
// more can come, so that when MPI is finalized (which cancels them) no
// message of this job is left unmatched: UCX reports each one at
// MPI_Finalize ("unexpected tag-receive descriptor ... was not matched").
// Peers in this same process (other lanes, as in the tests) are not waited
// for: their transports may be closed one after another by one goroutine,
// and a lane's receives stay posted after its Close anyway.
func (t *Transport) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.closed.CompareAndSwap(false, true) {
		return rdma.ErrClosed
	}
	close(t.stop)
	t.wg.Wait()
	cmpi.Lock()
	var errs []error
	for _, p := range t.list {
		// Also to a peer that said goodbye first: it waits for this one.
		if err := t.sendCtl(t.places[p], &ctl{kind: kBye}); err != nil {
			errs = append(errs, &PeerError{Rank: p, Err: err})
		}
	}
	cmpi.Unlock()
	deadline := time.Now().Add(closeWait)
	for time.Now().Before(deadline) {
		cmpi.Lock()
		n, err := t.sendq.Test()
		t.idle = 0
		t.pollLocked(packet.NoWorker, 0) // the goodbyes, and answers to calls still made
		cmpi.Unlock()
		if err != nil || n == 0 && len(t.reqs) == 0 && t.saidBye() {
			break
		}
		time.Sleep(50 * time.Microsecond)
	}
	cmpi.Lock()
	for i := range t.reqs {
		// Transfers that did not finish within closeWait (a peer that
		// vanished) are left to MPI, and the memory they use stays
		// pinned for good: MPI may still touch it.
		// (Orphaned, not MPI_Request_free'd: internal/mpi's fmpi.h.)
		o := &t.ops[i]
		t.regMu.Lock()
		if o.reg != nil && o.reg.pin != nil {
			keepPinned(o.reg.pin)
			o.reg.pin = nil
		}
		t.regMu.Unlock()
		if o.junk != nil {
			keepPinned(&o.junk.pin)
		}
		t.reqs[i].Orphan(nil)
		if w := o.w; w != nil {
			if w.pin != nil { // a started Put's source, which MPI may still read
				keepPinned(w.pin)
				w.pin = nil
			}
			w.err = rdma.ErrClosed
			t.settle(w)
		}
	}
	t.reqs, t.ops = nil, nil
	// Only now (no transfer may still touch a caller's buffer) do the
	// calls still waiting return.
	for id, wt := range t.waits {
		delete(t.waits, id)
		wt.err = rdma.ErrClosed
		t.settle(wt)
	}
	giveLane(t.ring, t.me.lane, t.cfg.Ring, headSize+t.cfg.PayloadSize)
	t.ring = nil
	t.sendq.Free()
	cmpi.Reap()
	cmpi.Unlock()
	// Nothing delivers any more (closed): hand back what waits.
	t.dmu.Lock()
	t.imu.Lock()
	for _, a := range append(t.release, t.inbox[t.ihead:]...) {
		if a.pk != nil {
			t.putBack(a.to, a.pk)
		}
	}
	for to, h := range t.held {
		for _, pk := range h {
			t.putBack(to, pk)
		}
	}
	ended := t.putDone
	t.release, t.inbox, t.ihead, t.held, t.putDone = nil, nil, 0, nil, nil
	t.waiting.Store(0)
	t.imu.Unlock()
	t.dmu.Unlock()
	// The started Puts that ended and were not told yet (with ErrClosed
	// for those Close ended).
	for _, w := range ended {
		t.endPut(packet.NoWorker, w)
	}
	t.regMu.Lock()
	for k, g := range t.regs {
		unpin(&g.pin)
		delete(t.regs, k)
	}
	t.regMu.Unlock()
	return errors.Join(errs...)
}

// saidBye reports whether every peer in another MPI process has said
// goodbye. The caller holds the MPI lock.
func (t *Transport) saidBye() bool {
	for _, p := range t.list {
		if t.places[p].rank != t.me.rank && !t.closedP[p].Load() {
			return false
		}
	}
	return true
}

// leaked holds the pinners of memory MPI may still use after Close, so
// that they are never collected (nor the memory reused).
var (
	leakMu sync.Mutex
	leaked []*runtime.Pinner
)

// pinners recycles the Pinners of registrations and transfers: a
// Pinner's first Pin allocates its state and sets a finalizer on it
// (runtime.addfinalizer: 0.5 % of the samples of fmpi-osu bw at 64 KiB
// over MPICH), which a Pinner used again does not pay.
var pinners = sync.Pool{New: func() any { return new(runtime.Pinner) }}

// pinBytes pins b's memory for MPI to use after the call that hands it
// over; nil for an empty b.
func pinBytes(b []byte) *runtime.Pinner {
	if len(b) == 0 {
		return nil
	}
	p := pinners.Get().(*runtime.Pinner)
	p.Pin(&b[0])
	return p
}

// unpin unpins *p, if any, and recycles it; *p becomes nil, so that a
// second call does nothing.
func unpin(p **runtime.Pinner) {
	if *p == nil {
		return
	}
	(*p).Unpin()
	pinners.Put(*p)
	*p = nil
}

func keepPinned(p *runtime.Pinner) {
	leakMu.Lock()
	leaked = append(leaked, p)
	leakMu.Unlock()
}

// putBack returns an undelivered arrival to its pool.
func (t *Transport) putBack(to rdma.Addr, pk *packet.Packet) {
	if p := t.pools.Of(pk); p != nil {
		p.Put(packet.NoWorker, pk)
	}
}

// Finalize finalizes MPI (MPI_Finalize on the thread that initialized
// it), for a program that made transports without the MPI bootstrap, whose
// Close does it otherwise. Call it after closing every transport; MPI
// cannot be used again in this process. It parks the calling goroutine.
func Finalize() error { return cmpi.Finalize() }

// Tags of moved messages (rdma.Mover). Each takes a tag of its own from
// one counter per process, above every control, data and put tag (those
// stay below 4·2^24+4, takeLane), so that the receiver can post its
// receive whenever its match comes: MPI pairs the two by source and tag
// alone. A tag is used again after movedSpan more moved messages of this
// process: 2^28−2^26 on MPICH here, nearly 2^31 on Open MPI; only a moved
// message left unreceived that long could be taken for a later one. With
// an MPI_TAG_UB too small for a span of 2^16, nothing is moved.
const movedBase = 4<<24 + 4

var (
	movedSpan atomic.Int64 // 0: no moved messages
	movedSeq  atomic.Uint64
)

// Moves reports whether SendMoved moves messages: rdma.Mover.
func (t *Transport) Moves() bool { return movedSpan.Load() != 0 && !t.cfg.NoMove }

func setMovedTags(tagUB int) {
	if span := int64(tagUB) - movedBase + 1; span >= 1<<16 {
		movedSpan.Store(span)
	}
}

// movedPiece returns the size of the MPI messages in which a moved message
// of n bytes goes: Whole for one of at most MovedPieces×Whole bytes (each
// piece then goes by the MPI's eager protocol), else cmpi.MaxMessage.
func (t *Transport) movedPiece(n int) int {
	if w, k := t.cfg.Whole, t.cfg.MovedPieces; w > 0 && k > 0 && n <= k*w {
		return w
	}
	return cmpi.MaxMessage
}

// movedToken is the token of a moved message's RTS (rdma.Mover): its tag
// in the low 32 bits and, above them, the size of its pieces when it goes
// in pieces (movedPiece), else 0, so that the receiver posts the receives
// the sender's choice needs, whatever its own Config.
func movedToken(tag, piece int) uint64 {
	if piece == cmpi.MaxMessage {
		piece = 0
	}
	return uint64(tag) | uint64(piece)<<32
}

// movedFromToken reads a moved message's token for size bytes: its tag and
// piece size. It reports false for a token no sender makes: a tag outside
// the moved tags, pieces shorter than 2×headSize, or more than
// MaxMovedPieces of them.
func movedFromToken(token uint64, size int) (tag, piece int, ok bool) {
	tag, piece = int(token&(1<<32-1)), int(token>>32)
	span := int(movedSpan.Load())
	if tag < movedBase || tag >= movedBase+span || size < 0 {
		return 0, 0, false
	}
	if piece == 0 {
		return tag, cmpi.MaxMessage, true
	}
	if piece < 2*headSize || piece > cmpi.MaxMessage || chunks(size, piece) > MaxMovedPieces {
		return 0, 0, false
	}
	return tag, piece, true
}

// SendMoved sends the RTS pk to `to` and, on a tag of its own (stamped in
// pk.RecvID with the size of its pieces, movedToken), its bytes data,
// which MPI moves once the receiver posts their receive (TakeMoved),
// by its rendezvous or, for a message of a few pieces (movedPiece),
// eagerly: rdma.Mover. It returns rdma.ErrAgain, having sent nothing,
// when the send queue is full, the destination is in this MPI process, or
// MPI_TAG_UB leaves no room for moved tags. done.PutDone is called from a
// later Progress once MPI has completed every send of the bytes (data may
// be reused: the receiver has them, or MPI has buffered them), or from
// Close.
func (t *Transport) SendMoved(w int, to rdma.Addr, pk *packet.Packet, data []byte, done rdma.PutDone) error {
	span := movedSpan.Load() // once: the tag below divides by it
	if span == 0 || t.cfg.NoMove {
		return rdma.ErrAgain
	}
	tag := movedBase + int(movedSeq.Add(1)%uint64(span))
	piece := t.movedPiece(len(data))
	pk.RecvID = movedToken(tag, piece) // before packetHead encodes it
	p, pool, head, err := t.packetHead(to, pk)
	if err != nil {
		return err
	}
	if p == t.rank {
		return rdma.ErrAgain
	}
	cmpi.Lock()
	defer cmpi.Unlock()
	if err := t.usable(p); err != nil {
		return err
	}
	if err := t.sendPacket(p, &head, pk); err != nil {
		return err
	}
	pool.Put(w, pk)
	wt := &waiter{proc: p, async: done, acked: true, n: len(data), pin: pinBytes(data), left: chunks(len(data), piece)}
	t.sendChunks(wt, 0, p, data, t.places[p].rank, tag, piece)
	t.finish(wt)
	return nil
}

// TakeMoved receives the size bytes of the moved message whose RTS
// carried token, from the endpoint from, into buf: all of them, or the
// first len(buf) when buf is shorter (then into a buffer of size first):
// rdma.Mover. done.PutDone is called from a later Progress once they are
// in, or from Close.
func (t *Transport) TakeMoved(w int, from rdma.Addr, token uint64, buf []byte, size int, done rdma.PutDone) error {
	if t.closed.Load() {
		return rdma.ErrClosed
	}
	p, err := t.dest(from)
	if err != nil {
		return err
	}
	tag, piece, ok := movedFromToken(token, size)
	if !ok {
		return fmt.Errorf("mpi: moved message with token %#x and %d bytes: %w", token, size, ErrBadToken)
	}
	wt := &waiter{proc: p, async: done, acked: true, n: size}
	into := buf[:min(size, len(buf))]
	if size > len(buf) {
		wt.scratch, wt.into = make([]byte, size), buf
		into = wt.scratch
	}
	wt.pin = pinBytes(into)
	pl := t.places[p]
	cmpi.Lock()
	defer cmpi.Unlock()
	if t.closed.Load() {
		unpin(&wt.pin)
		return rdma.ErrClosed
	}
	t.recvChunks(wt, p, into, pl.rank, tag, piece)
	t.finish(wt)
	return nil
}
