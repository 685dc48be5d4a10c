//go:build linux

package shm

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/fibermpi/fibermpi/packet"
	"github.com/fibermpi/fibermpi/rdma"
	"github.com/fibermpi/fibermpi/rdma/internal/addrdir"
)

// The bindings of addresses live in chunks of chunkSize consecutive
// addresses, found through a directory indexed by Addr>>chunkBits; Bind
// copies at most the directory.
const (
	chunkBits = 10
	chunkSize = 1 << chunkBits
)

// binding is one bound address: its Receiver and the pool its arrivals
// are built in.
type binding struct {
	r    rdma.Receiver
	er   rdma.EagerReceiver    // r, if it takes eager messages without a packet; else nil
	run  rdma.EagerRunReceiver // r, if it takes runs of them too; else nil
	pool *packet.Pool
}

// bindChunk holds the bindings of chunkSize consecutive addresses: Stored
// under Transport.mu, Loaded without a lock by Progress.
type bindChunk [chunkSize]atomic.Pointer[binding]

// Transport is the shared-memory transport of one process. Its zero value
// is not usable; call New. All methods may be called from any goroutine at
// once; none blocks except Sleep (and a copied Put or Get, which waits for
// ring room while draining its own rings: see the package documentation).
type Transport struct {
	rank   int
	layout *rdma.Layout
	cfg    Config
	name   string
	// splitWait is how long a split Put waits for its owner's read
	// before it cancels it (attachAfter; tests change it).
	splitWait time.Duration

	// out[p] is the ring this process sends into at process p: a peer
	// or itself; nil for the others.
	out []*outRing
	// in are the rings of this process's segment: its own first, then one
	// per peer; inBy holds them by the process that sends into them (nil
	// for the processes that do not).
	in   []*inRing
	inBy []*inRing
	self *segment
	segs []*segment // every mapping: self first

	// pools are the pools packets may come from (Config.Pool and every
	// bound one), copied on write under mu.
	pools addrdir.Pools

	// Bindings: dir Stored (copy on write) under mu, Loaded by Progress.
	dir atomic.Pointer[[]*bindChunk]
	mu  sync.Mutex

	// closed is Stored under mu, regMu and every ring lock by Close and
	// Loaded anywhere.
	closed atomic.Bool

	regs registry // Register, Deregister and the owner's side of copies
	gets getState // copied Gets, both sides
	// putting counts the started Puts not all written (outRing.puts):
	// changed under their ring's mu, Loaded by Progress and Arm.
	putting atomic.Int32

	// probe is the word peers read to test cross-memory attach. The Go
	// heap does not move objects, and t keeps it alive.
	probe *uint64
}

var (
	_ rdma.Transport = (*Transport)(nil)
	_ rdma.Sleeper   = (*Transport)(nil)
	_ rdma.Alarm     = (*Transport)(nil)

	_ rdma.EagerSender = (*Transport)(nil)
	_ rdma.PutStarter  = (*Transport)(nil)
)

// exchangeKey is the key of this transport's record in the Exchange.
const exchangeKey = "fibermpi/shm"

// peerInfo is what a process publishes through the Exchange.
type peerInfo struct {
	pid       uint64
	probe     uint64 // address of the probe word
	nonce     uint64 // its value
	payload   uint64
	forceCopy bool
	name      string
}

func (p peerInfo) marshal() []byte {
	b := binary.LittleEndian.AppendUint32(nil, segVersion)
	b = binary.LittleEndian.AppendUint64(b, p.pid)
	b = binary.LittleEndian.AppendUint64(b, p.probe)
	b = binary.LittleEndian.AppendUint64(b, p.nonce)
	b = binary.LittleEndian.AppendUint64(b, p.payload)
	flag := byte(0)
	if p.forceCopy {
		flag = 1
	}
	b = append(b, flag)
	return append(b, p.name...)
}

func parsePeerInfo(b []byte) (peerInfo, error) {
	const fixed = 4 + 4*8 + 1
	if len(b) < fixed || binary.LittleEndian.Uint32(b) != segVersion {
		return peerInfo{}, fmt.Errorf("shm: malformed or foreign exchange record (%d bytes)", len(b))
	}
	le := binary.LittleEndian
	return peerInfo{
		pid: le.Uint64(b[4:]), probe: le.Uint64(b[12:]), nonce: le.Uint64(b[20:]),
		payload: le.Uint64(b[28:]), forceCopy: b[36] == 1, name: string(b[fixed:]),
	}, nil
}

// New makes this process's transport. It is collective: every process of
// the job calls it, one without peers too, because it fences the Exchange
// twice. It creates this process's segment, publishes its name and pid,
// maps the peers' segments after the first fence, tests cross-memory
// attach towards each peer by reading a word of it, and removes the node's
// segment files after the second fence: from then on the segments live
// only in the mappings, and nothing is left in Config.Dir however the
// processes end. (A process killed inside New may leave its file; the
// launcher removes Config.Dir/fibermpi-<jobid>-* at the end of the job.)
//
// On error New removes what it made. A process that fails once the
// Exchange works still takes part in both fences, so that the others' New
// return; the job learns of the failure from that process (its error, its
// exit), and the others' CheckPeers report its exit.
//
// A peer's Send to an address of this process fails with rdma.ErrNoPeer
// until the address is bound: bind the endpoints, then fence, before
// sending.
func New(cfg Config) (*Transport, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	cfg.Peers = slices.Clone(cfg.Peers)
	ex := cfg.Exchange
	t := &Transport{rank: ex.Rank(), layout: cfg.Layout, cfg: cfg, splitWait: attachAfter, out: make([]*outRing, ex.Size())}
	t.dir.Store(new([]*bindChunk))
	t.pools.Add(cfg.Pool)

	// The probe word: a random value at an address peers read with
	// process_vm_readv.
	t.probe = new(uint64)
	var nb [8]byte
	_, _ = rand.Read(nb[:])
	*t.probe = binary.LittleEndian.Uint64(nb[:]) | 1

	lay := layoutFor(uint64(1+len(cfg.Peers)), uint64(cfg.RingSize), uint64(cfg.MaxAddrs), uint64(cfg.MaxRegions))
	name := segName(ex.JobID(), t.rank)
	self, err := createSegment(cfg.Dir, name, lay)
	if err != nil {
		return nil, err
	}
	t.self = self
	t.segs = append(t.segs, self)
	h := self.hdr
	h.version, h.rank, h.pid, h.size = segVersion, uint32(t.rank), uint64(os.Getpid()), lay.size
	h.payload, h.ringSize, h.nrings = uint64(cfg.PayloadSize), lay.ringSize, lay.nrings
	h.maxAddrs, h.maxRegions = lay.maxAddrs, lay.maxRegions
	h.boundOff, h.regionsOff, h.ringsOff, h.ringStride = lay.boundOff, lay.regionsOff, lay.ringsOff, lay.ringStride
	self.senders[0] = uint32(t.rank)
	for i, p := range cfg.Peers {
		self.senders[1+i] = uint32(p)
	}
	h.magic = segMagic // last: a peer checks it
	t.regs.init(self, cfg.MaxRegions)

	fenced := 0
	fail := func(err error) (*Transport, error) {
		_ = unlink(self.name)
		t.release()
		// Keep the collective in step: the others then finish New and
		// learn of this process's failure from the job (its exit).
		for ; fenced < 2; fenced++ {
			if ex.Fence() != nil {
				break
			}
		}
		return nil, err
	}
	// Safety: the probe word's address goes to peers as a number; t
	// keeps the word alive and the Go heap does not move it.
	info := peerInfo{
		pid: h.pid, probe: uint64(uintptr(unsafe.Pointer(t.probe))), nonce: *t.probe,
		payload: uint64(cfg.PayloadSize), forceCopy: cfg.ForceCopy, name: name,
	}
	if err := ex.Put(exchangeKey, info.marshal()); err != nil {
		fenced = 2
		return fail(fmt.Errorf("shm: publishing the segment: %w", err))
	}
	if err := ex.Fence(); err != nil {
		fenced = 2 // the Exchange is broken: do not wait in it again
		return fail(fmt.Errorf("shm: first fence: %w", err))
	}
	fenced = 1

	// This process's own ring, then the peers'.
	t.in = append(t.in, newInRing(self, 0, t.rank))
	t.out[t.rank] = newOutRing(self, 0, t.rank, int(h.pid))
	t.out[t.rank].self = true
	cma, copies := 0, 0
	for i, p := range cfg.Peers {
		t.in = append(t.in, newInRing(self, 1+i, p))
		o, err := t.connect(p)
		if err != nil {
			return fail(err)
		}
		o.back = t.in[len(t.in)-1]
		t.out[p] = o
		if o.cma {
			cma++
		} else {
			copies++
		}
	}
	t.inBy = make([]*inRing, len(t.out))
	for _, ir := range t.in {
		t.inBy[ir.from] = ir
	}
	if err := ex.Fence(); err != nil {
		fenced = 2
		return fail(fmt.Errorf("shm: second fence: %w", err))
	}
	fenced = 2
	// Every process has mapped every segment of the node: the files can
	// go. Each process removes its peers' too, so that a file stays only
	// if every process of the node dies between here and its unlink.
	for _, s := range t.segs {
		if err := unlink(s.name); err != nil {
			return fail(err)
		}
	}
	switch {
	case cma > 0 && copies > 0:
		t.name = "shm+cma+copy"
	case cma > 0:
		t.name = "shm+cma"
	case copies > 0 || cfg.ForceCopy:
		t.name = "shm+copy"
	default:
		t.name = "shm"
	}
	if cfg.RingPuts && cma > 0 {
		t.name += "+ringput"
		if cfg.SplitPuts {
			t.name += "+split"
		}
	}
	return t, nil
}

// connect maps peer p's segment and decides how to reach its memory.
func (t *Transport) connect(p int) (*outRing, error) {
	raw, err := t.cfg.Exchange.Get(p, exchangeKey)
	if err != nil {
		return nil, fmt.Errorf("shm: reading process %d's record: %w", p, err)
	}
	info, err := parsePeerInfo(raw)
	if err != nil {
		return nil, &PeerError{Rank: p, Err: err}
	}
	if info.payload != uint64(t.cfg.PayloadSize) {
		return nil, &PeerError{Rank: p, Err: fmt.Errorf("%w: payload size %d here, %d there", ErrInvalidConfig, t.cfg.PayloadSize, info.payload)}
	}
	if info.name != segName(t.cfg.Exchange.JobID(), p) {
		return nil, &PeerError{Rank: p, Err: fmt.Errorf("shm: segment named %q, want %q (a different job id?)", info.name, segName(t.cfg.Exchange.JobID(), p))}
	}
	seg, err := openSegment(t.cfg.Dir, info.name, p, info.pid)
	if err != nil {
		return nil, err
	}
	t.segs = append(t.segs, seg)
	ring := seg.ringOf(t.rank)
	if ring < 0 {
		return nil, &PeerError{Rank: p, Err: fmt.Errorf("shm: it does not list process %d as a peer (the processes disagree on who shares the node)", t.rank)}
	}
	seg.populateRing(ring)
	o := newOutRing(seg, ring, p, int(info.pid))
	o.cma = !t.cfg.ForceCopy && !info.forceCopy && probe(int(info.pid), info.probe, info.nonce)
	o.ringPut = !o.cma || t.cfg.RingPuts
	o.alwaysSplit = o.cma && t.cfg.RingPuts && t.cfg.SplitPuts
	if fd, err := unix.PidfdOpen(int(info.pid), 0); err == nil {
		o.pidfd.Store(int32(fd))
	}
	return o, nil
}

// probe reports whether this process can read the word at addr of process
// pid (which holds nonce) with process_vm_readv: whether cross-memory
// attach works between the two (ptrace scope, containers, pid namespaces).
func probe(pid int, addr, nonce uint64) bool {
	var got uint64
	// Safety: the kernel writes at most the 8 bytes of got, during the
	// call.
	local := []unix.Iovec{{Base: (*byte)(unsafe.Pointer(&got)), Len: 8}}
	remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: 8}}
	n, err := unix.ProcessVMReadv(pid, local, remote, 0)
	return err == nil && n == 8 && got == nonce
}

// Name returns "shm+cma" when Put and Get reach every peer by cross-memory
// attach, "shm+copy" when they copy through the rings, "shm+cma+copy"
// when it differs between peers, and "shm" without peers; with
// Config.RingPuts, "+ringput" follows "cma" (Get by cross-memory attach,
// Put through the rings).
func (t *Transport) Name() string { return t.name }

// Bind attaches the local endpoint a, which must be one of this process's
// addresses in the Layout and below Config.MaxAddrs; its arrivals are
// built in packets from pool, whose payloads must hold Config.PayloadSize
// bytes.
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
	if uint64(a) >= uint64(t.cfg.MaxAddrs) {
		return fmt.Errorf("%w: address %d, MaxAddrs %d", ErrLimit, a, t.cfg.MaxAddrs)
	}
	if pool.PayloadSize() < t.cfg.PayloadSize {
		return fmt.Errorf("%w: a pool of %d-byte payloads, PayloadSize %d", ErrInvalidConfig, pool.PayloadSize(), t.cfg.PayloadSize)
	}
	dir := *t.dir.Load()
	ci := int(a >> chunkBits)
	if ci >= len(dir) || dir[ci] == nil {
		grown := make([]*bindChunk, max(len(dir), ci+1))
		copy(grown, dir)
		grown[ci] = new(bindChunk)
		t.dir.Store(&grown)
		dir = grown
	}
	e := &dir[ci][a&(chunkSize-1)]
	if e.Load() != nil {
		return rdma.ErrBound
	}
	t.pools.Add(pool)
	er, _ := r.(rdma.EagerReceiver)
	run, _ := r.(rdma.EagerRunReceiver)
	e.Store(&binding{r: r, er: er, run: run, pool: pool})
	t.self.setBound(a, true)
	return nil
}

// Unbind detaches a. Packets already in a ring for a wait there, holding
// back the later packets of that ring, until a is bound again (or the
// transport closes): they are never dropped.
func (t *Transport) Unbind(a rdma.Addr) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed.Load() {
		return rdma.ErrClosed
	}
	e := t.entry(a)
	if e == nil || e.Load() == nil {
		return rdma.ErrNoPeer
	}
	t.self.setBound(a, false)
	e.Store(nil)
	return nil
}

// entry returns the binding slot of a, or nil if its chunk does not exist.
func (t *Transport) entry(a rdma.Addr) *atomic.Pointer[binding] {
	dir := *t.dir.Load()
	ci := int(a >> chunkBits)
	if ci >= len(dir) || dir[ci] == nil {
		return nil
	}
	return &dir[ci][a&(chunkSize-1)]
}

// route returns the ring towards the process that owns a, checking that a
// is bound there.
func (t *Transport) route(a rdma.Addr) (*outRing, error) {
	if o := t.ring(a); o != nil {
		return o, nil
	}
	if p := t.layout.Owner(a); p >= 0 && p < len(t.out) && t.out[p] == nil {
		return nil, fmt.Errorf("%w: address %d belongs to process %d, not on this node", rdma.ErrNoPeer, a, p)
	}
	return nil, rdma.ErrNoPeer
}

// ring is route without the error: the ring towards a's process if a is
// bound there, else nil.
func (t *Transport) ring(a rdma.Addr) *outRing {
	p := t.layout.Owner(a)
	if p < 0 || p >= len(t.out) {
		return nil
	}
	if o := t.out[p]; o != nil && o.seg.isBound(a) {
		return o
	}
	return nil
}

// Send copies pk into the ring of the process that owns to and returns pk
// to the pool it came from (the transport owns it on success). It never
// waits: a full ring gives rdma.ErrAgain, and the caller keeps pk. It
// wakes the receiving process if it sleeps (the only system call Send
// makes, and only then).
func (t *Transport) Send(w int, to rdma.Addr, pk *packet.Packet) error {
	pool := t.pools.Of(pk)
	if pool == nil {
		return ErrForeignPacket
	}
	o, rec, err := t.open(to, pk.Len())
	if err != nil {
		return err
	}
	pk.EncodeHeader(rec[:headSize])
	copy(rec[headSize:], pk.Data())
	// The record holds a copy: the packet goes back to its pool before
	// the record is published, so that by the time anyone sees the
	// message (and its answer), the sender's packet is free again.
	pool.Put(w, pk)
	o.commit(to, rec)
	return nil
}

// SendEager copies an eager message into the ring of the process that
// owns to, as Send would a packet holding it, without the packet. It
// reports false, having done nothing, whenever Send would not succeed at
// once (closed, unbound, too long, a full ring): the caller then sends a
// packet, and Send says why. It wakes the receiving process if it sleeps.
func (t *Transport) SendEager(w int, to rdma.Addr, h rdma.EagerHeader, data []byte) bool {
	o, rec, why := t.tryOpen(to, len(data))
	if why != opened {
		return false // a packet goes instead, and Send says what is wrong
	}
	packet.EncodeEager(rec[:headSize], h.Context, h.Source, h.Tag, uint32(h.From), len(data))
	copy(rec[headSize:], data)
	o.commit(to, rec)
	return true
}

// open reserves the record of a packet with n payload bytes for address
// to in the ring towards to's process, and returns the ring, locked, and
// the record's bytes: the caller writes the packet's header and payload
// into them and calls commit. Errors: rdma.ErrClosed, rdma.ErrNoPeer,
// ErrTooLong, and rdma.ErrAgain for a full ring.
func (t *Transport) open(to rdma.Addr, n int) (*outRing, []byte, error) {
	o, rec, why := t.tryOpen(to, n)
	switch why {
	case opened:
		return o, rec, nil
	case openClosed:
		return nil, nil, rdma.ErrClosed
	case openTooLong:
		return nil, nil, fmt.Errorf("%w: %d bytes, PayloadSize %d", ErrTooLong, n, t.cfg.PayloadSize)
	case openNoPeer:
		if _, err := t.route(to); err != nil {
			return nil, nil, err // the reason in words
		}
		return nil, nil, rdma.ErrNoPeer // bound since: the caller may try again
	default:
		return nil, nil, rdma.ErrAgain
	}
}

// openFail says why tryOpen reserved nothing.
type openFail uint8

const (
	opened      openFail = iota // it did
	openClosed                  // the transport or the ring is closed
	openTooLong                 // more than PayloadSize bytes
	openNoPeer                  // to is not bound in a process of this node
	openFull                    // no room in the ring now
)

// tryOpen is open without building errors, for SendEager, whose failures
// only send a packet instead.
func (t *Transport) tryOpen(to rdma.Addr, n int) (*outRing, []byte, openFail) {
	if t.closed.Load() {
		return nil, nil, openClosed
	}
	if n > t.cfg.PayloadSize {
		return nil, nil, openTooLong
	}
	o := t.ring(to)
	if o == nil {
		return nil, nil, openNoPeer
	}
	size := uint64(recordSize(n))
	o.mu.lock()
	if o.dead {
		o.mu.unlock()
		return nil, nil, openClosed
	}
	off, ok := o.reserve(size)
	if !ok {
		o.mu.unlock()
		return nil, nil, openFull
	}
	return o, o.data[off : off+size], opened
}

// Progress delivers what the rings of this process hold: packets to
// their Receivers (in packets from the destination's pool; when it is dry
// the record stays in its ring), copied Put bytes into their
// registrations, copied Get requests answered. It returns how many
// records it handled. Any number of goroutines may call it at once; each
// ring is delivered by one of them at a time, in order. w is the caller's
// worker index in the destination pools, or packet.NoWorker.
func (t *Transport) Progress(w int) int {
	if t.closed.Load() {
		return 0
	}
	n := 0
	for _, ir := range t.in {
		if ir.pending() {
			n += t.deliver(w, ir)
		}
	}
	if t.gets.serving.Load() != 0 {
		n += t.serve()
	}
	if t.putting.Load() != 0 {
		n += t.pushPuts(w)
	}
	return n
}

// maxPerCall bounds the records one Progress call takes from one ring,
// so that a busy peer cannot hold a caller forever.
const maxPerCall = 4 * batchSize

// deliver takes batches of records out of ir and delivers their packets.
func (t *Transport) deliver(w int, ir *inRing) int {
	if !ir.lk.tryDeliver() {
		return 0 // another goroutine delivers this ring
	}
	// take is held from here to the first Receive call; deliver to the
	// end, released by the deferred call also if a Receiver panics.
	ir.holdingTake = true
	defer ir.endDeliver()
	n := 0
	for n < maxPerCall {
		if !ir.holdingTake {
			ir.lk.lockTake()
			ir.holdingTake = true
		}
		k, handled, full := t.takeBatch(w, ir)
		if k > 0 {
			ir.lk.unlockTake()
			ir.holdingTake = false
		}
		for i := range k {
			r, pk := ir.recv[i], ir.batch[i]
			ir.recv[i], ir.batch[i] = nil, nil
			r.Receive(w, pk)
		}
		n += handled
		if !full {
			break
		}
	}
	return n
}

// takeBatch takes records out of ir's queue, then its ring, until
// batchSize packets are ready for delivery in ir.batch, or maxPerCall
// records were handled: the other records take effect here, and so does an
// eager message that reaches a posted receive with no packet ahead of it
// in the batch (direct: ReceiveEager runs under take, which its contract
// allows). It stops early at an empty ring, a dry pool or an unbound
// destination (the record stays). full reports that it stopped only for
// the batch's size or the bound. The caller holds take (and deliver).
func (t *Transport) takeBatch(w int, ir *inRing) (k, handled int, full bool) {
	if ir.dead {
		return 0, 0, false
	}
	full = true
	for k < batchSize && handled < maxPerCall {
		if rec, n, word1, ok := ir.peekQueue(); ok {
			if !t.unpack(w, ir, k, rec, n, word1) {
				full = false
				break
			}
			ir.popQueue(n)
			k++
			handled++
			continue
		}
		rec, typ, n, word1, ok, corrupt := ir.peekRing()
		if corrupt {
			t.corrupt(ir)
		}
		if !ok {
			full = false
			break
		}
		if typ == recPacket {
			// With no packet ahead of it in the batch, an eager message,
			// and the ones after it with the same envelope, may go
			// straight into posted receives: no packet, one copy.
			if k == 0 {
				if m := t.direct(w, ir, rec, n, word1, maxPerCall-handled); m > 0 {
					handled += m
					if ir.seenAll() {
						// Nothing is left: the queue was empty (it
						// comes first, and take is held), and so is
						// the ring, by a fresh load of its tail. A
						// shorter second look than the loop's, on the
						// path of every answer a waiting fiber takes.
						full = false
						break
					}
					continue // direct moved head past the m records
				}
			}
			if !t.unpack(w, ir, k, rec, n, word1) {
				full = false
				break
			}
			k++
		} else {
			t.apply(ir, typ, n, word1, rec)
		}
		ir.head += uint64(len(rec))
		handled++
	}
	// Not deferred: if a ReceiveEager panics, the records before it are
	// consumed (head is private) and the next batch publishes them.
	ir.publishHead()
	return k, handled, full
}

// direct hands the packet record rec (n payload bytes, for address
// word1; at ir.head) to its destination's ReceiveEager if it is an eager
// message and the destination takes those; if it took it, and the
// destination takes runs (rdma.EagerRunReceiver), it offers the records
// after it that carry eager messages for the same destination with the
// same envelope (up to most records in all) to ReceiveEagerRun. It
// returns how many records were taken, and moves ir.head past them. The
// caller holds take: the records' bytes stay put during the call.
//
// The first message alone goes first: a run is gathered only behind a
// message that found its receive posted, so that a stream of unexpected
// messages does not pay for reading records it will build packets of.
func (t *Transport) direct(w int, ir *inRing, rec []byte, n int, word1 uint32, most int) int {
	ctx, src, tag, from, _, ok := packet.PeekEager(rec[:headSize])
	if !ok {
		return 0
	}
	e := t.entry(rdma.Addr(word1))
	if e == nil {
		return 0
	}
	b := e.Load()
	if b == nil || b.er == nil {
		return 0
	}
	h := rdma.EagerHeader{From: rdma.Addr(from), Context: ctx, Source: src, Tag: tag}
	if !b.er.ReceiveEager(w, h, rec[headSize:headSize+n]) {
		return 0
	}
	ir.head += uint64(len(rec))
	if b.run == nil || most < 2 || !ir.mayContinue(ir.head, (*[headSize]byte)(rec)) {
		return 1
	}
	run := ir.gather((*[headSize]byte)(rec), most-1)
	if len(run) == 0 {
		return 1
	}
	m := b.run.ReceiveEagerRun(w, h, run)
	for _, d := range run[:m] {
		ir.head += uint64(recordSize(len(d)))
	}
	return 1 + m
}

// unpack builds the packet record rec (n payload bytes, for address
// word1) in a packet of the destination's pool as ir.batch[k]. It reports
// false, leaving the record, when the destination is not bound or its
// pool is dry.
func (t *Transport) unpack(w int, ir *inRing, k int, rec []byte, n int, word1 uint32) bool {
	e := t.entry(rdma.Addr(word1))
	if e == nil {
		return false
	}
	b := e.Load()
	if b == nil {
		return false
	}
	pk := b.pool.Get(w)
	if pk == nil {
		return false
	}
	if err := pk.DecodeHeader(rec[:headSize]); err != nil {
		b.pool.Put(w, pk)
		t.corrupt(ir)
		return false
	}
	copy(pk.Payload()[:n], rec[headSize:])
	ir.batch[k], ir.recv[k] = pk, b.r
	return true
}

// corrupt reports bytes in a ring that are no record. After Close the
// mapping reads as zeros: that is not corruption, and the callers stop.
func (t *Transport) corrupt(ir *inRing) {
	if t.closed.Load() {
		return
	}
	panic(fmt.Sprintf("shm: corrupt record in the ring from process %d at position %d (tail %d)", ir.from, ir.head, ir.tailCache))
}

// drain moves every record of every ring into the rings' queues (the
// packets) or into effect (the rest), without delivering anything: a
// copied Put or Get waiting for room does it, so that processes waiting
// on each other's rings keep emptying them. It returns how many records
// it moved.
func (t *Transport) drain() int {
	n, queued := 0, 0
	for _, ir := range t.in {
		if !ir.pending() {
			continue
		}
		ir.lk.lockTake()
		for !ir.dead {
			rec, typ, size, word1, ok, corrupt := ir.peekRing()
			if corrupt {
				t.corrupt(ir)
			}
			if !ok {
				break
			}
			if typ == recPacket {
				ir.queue = append(ir.queue, rec[:queuedSize(size)]...)
				ir.queued.Add(1)
				queued++
			} else {
				t.apply(ir, typ, size, word1, rec)
			}
			ir.head += uint64(len(rec))
			n++
		}
		ir.publishHead()
		ir.lk.unlockTake()
	}
	if queued > 0 && t.self.hdr.waiters.Load() != 0 {
		wakeOne(t.self.hdr) // a sleeper of this process has packets to deliver
	}
	return n
}

// CheckPeers returns a *PeerError (ErrPeerGone) naming a peer process
// that has exited, or nil. It makes one poll system call; a progress loop
// may call it now and then (each Sleep, say) to turn a dead peer into an
// error rather than a wait.
func (t *Transport) CheckPeers() error {
	if t.closed.Load() {
		return rdma.ErrClosed
	}
	var fds []unix.PollFd
	var ranks []int
	for _, o := range t.out {
		if o == nil || o.self {
			continue
		}
		if fd := o.pidfd.Load(); fd >= 0 {
			fds = append(fds, unix.PollFd{Fd: fd, Events: unix.POLLIN})
			ranks = append(ranks, o.proc)
		}
	}
	if len(fds) == 0 {
		return nil
	}
	if _, err := unix.Poll(fds, 0); err != nil && !errors.Is(err, unix.EINTR) {
		return fmt.Errorf("shm: polling the peers: %w", err)
	}
	for i, fd := range fds {
		if fd.Revents != 0 {
			return &PeerError{Rank: ranks[i], Err: ErrPeerGone}
		}
	}
	return nil
}

// alive returns a *PeerError if o's process has exited.
func (o *outRing) alive() error {
	fd := o.pidfd.Load()
	if o.self || fd < 0 {
		return nil
	}
	fds := []unix.PollFd{{Fd: fd, Events: unix.POLLIN}}
	if n, _ := unix.Poll(fds, 0); n > 0 && fds[0].Revents != 0 {
		return &PeerError{Rank: o.proc, Err: ErrPeerGone}
	}
	return nil
}

// Close releases the transport: it unpins and forgets the registrations,
// drops what the rings and queues still hold (packets sent here and not
// delivered are lost with the process), wakes the goroutines in Sleep,
// and gives back the shared memory (the mappings become private zero
// pages, so calls racing with Close never fault). Every later call fails
// with rdma.ErrClosed, a second Close included.
func (t *Transport) Close() error {
	// The started Puts end after the locks are released (their PutDone
	// may Send, which now fails with rdma.ErrClosed).
	var ended []rdma.PutDone
	defer func() {
		for _, d := range ended {
			d.PutDone(packet.NoWorker, rdma.ErrClosed)
		}
	}()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed.Load() {
		return rdma.ErrClosed
	}
	t.regs.mu.Lock()
	t.closed.Store(true)
	t.regs.closeLocked()
	t.regs.mu.Unlock()
	// After each lock below, no goroutine touches that ring's memory:
	// every section under those locks checks dead first.
	for _, o := range t.out {
		if o != nil {
			o.mu.lock()
			o.dead = true
			for _, p := range o.puts {
				ended = append(ended, p.done)
			}
			for _, p := range o.splits {
				p.pin.Unpin()
				ended = append(ended, p.done)
			}
			t.putting.Add(-int32(len(o.puts) + len(o.splits)))
			o.puts, o.splits = nil, nil
			o.mu.unlock()
		}
	}
	for _, ir := range t.in {
		ir.lk.lockTake()
		ir.dead = true
		ir.queue, ir.qhead = nil, 0
		ir.queued.Store(0)
		ir.lk.unlockTake()
	}
	t.gets.closeAll()
	wakeAll(t.self.hdr)
	t.dir.Store(new([]*bindChunk))
	t.release()
	return nil
}

// release gives back the mappings and pidfds.
func (t *Transport) release() {
	for _, s := range t.segs {
		s.release()
	}
	for _, o := range t.out {
		if o != nil {
			if fd := o.pidfd.Swap(-1); fd >= 0 {
				_ = unix.Close(int(fd))
			}
		}
	}
}
