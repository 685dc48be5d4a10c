// Package inproc is the transport for endpoints that share one process, the
// embedded default: Send delivers the packet by calling the peer's Receiver
// in the sender's own call, and Put and Get are copies between the
// registered buffer and the caller's. Nothing runs in the background and
// Progress has nothing to do.
package inproc

import (
	"sync"
	"sync/atomic"

	"github.com/fibermpi/fibermpi/packet"
	"github.com/fibermpi/fibermpi/rdma"
)

// The receivers of bound addresses live in chunks of chunkSize consecutive
// addresses, found through a directory indexed by Addr>>chunkBits. Binding
// a address copies at most the directory, never all bindings, and a
// directory for the largest Addr stays small (1<<(32-chunkBits) pointers).
const (
	chunkBits = 12
	chunkSize = 1 << chunkBits
)

// chunk holds the bindings of chunkSize consecutive addresses. Bind and
// Unbind store an entry under Transport.mu; Send loads it without a lock.
type chunk [chunkSize]atomic.Pointer[binding]

// binding is one bound Receiver.
type binding struct{ r rdma.Receiver }

// Transport connects the endpoints of one process. Its zero value is not
// usable; call New.
type Transport struct {
	// dir maps Addr>>chunkBits to the chunk of that address, or nil. A
	// published directory is never modified: Bind stores a longer copy
	// (copy on write, under mu) to add a chunk, which Send's Load
	// observes.
	dir atomic.Pointer[[]*chunk]
	mu  sync.Mutex

	// regions maps a key to a registered buffer.
	regMu   sync.RWMutex
	regions map[uint32][]byte
	nextKey uint32

	// closed is set by Close under mu and regMu; Send, Put and Get load
	// it without a lock, Bind, Unbind, Register and Deregister under
	// their lock.
	closed atomic.Bool
}

// New returns an empty in-process transport.
func New() *Transport {
	t := &Transport{regions: make(map[uint32][]byte)}
	t.dir.Store(new([]*chunk))
	return t
}

var _ rdma.Transport = (*Transport)(nil)

// Name returns "inproc".
func (t *Transport) Name() string { return "inproc" }

// Bind attaches the endpoint a. Its arrivals are the senders' own
// packets, so pool is only checked, not used: every endpoint of one
// in-process job shares the process's pool.
func (t *Transport) Bind(a rdma.Addr, r rdma.Receiver, pool *packet.Pool) error {
	if r == nil || pool == nil {
		return rdma.ErrNoPeer
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed.Load() {
		return rdma.ErrClosed
	}
	dir := *t.dir.Load()
	ci := int(a >> chunkBits)
	if ci >= len(dir) || dir[ci] == nil {
		grown := make([]*chunk, max(len(dir), ci+1))
		copy(grown, dir)
		grown[ci] = new(chunk)
		t.dir.Store(&grown)
		dir = grown
	}
	e := &dir[ci][a&(chunkSize-1)]
	if e.Load() != nil {
		return rdma.ErrBound
	}
	e.Store(&binding{r: r})
	return nil
}

// entry returns the slot of address a, or nil if its chunk does not exist.
func (t *Transport) entry(a rdma.Addr) *atomic.Pointer[binding] {
	dir := *t.dir.Load()
	ci := int(a >> chunkBits)
	if ci >= len(dir) || dir[ci] == nil {
		return nil
	}
	return &dir[ci][a&(chunkSize-1)]
}

// Unbind detaches the endpoint a.
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
	e.Store(nil)
	return nil
}

func (t *Transport) peer(a rdma.Addr) (rdma.Receiver, error) {
	if t.closed.Load() {
		return nil, rdma.ErrClosed
	}
	if e := t.entry(a); e != nil {
		if b := e.Load(); b != nil {
			return b.r, nil
		}
	}
	return nil, rdma.ErrNoPeer
}

// Peer returns the Receiver bound at a (rdma.Local): every endpoint of an
// in-process job is reachable directly.
func (t *Transport) Peer(a rdma.Addr) (rdma.Receiver, error) { return t.peer(a) }

var _ rdma.Local = (*Transport)(nil)

// Send delivers pk to the endpoint to before it returns, in the caller's
// goroutine or fiber.
func (t *Transport) Send(w int, to rdma.Addr, pk *packet.Packet) error {
	r, err := t.peer(to)
	if err != nil {
		return err
	}
	r.Receive(w, pk)
	return nil
}

// Register records buf under a new key. The Region's Addr is 0: offsets
// are relative to buf.
func (t *Transport) Register(buf []byte) (rdma.Region, error) {
	t.regMu.Lock()
	defer t.regMu.Unlock()
	if t.closed.Load() {
		return rdma.Region{}, rdma.ErrClosed
	}
	for {
		t.nextKey++
		if _, used := t.regions[t.nextKey]; !used && t.nextKey != 0 {
			break
		}
	}
	t.regions[t.nextKey] = buf
	return rdma.Region{Key: t.nextKey, Len: uint64(len(buf))}, nil
}

// Deregister forgets the region.
func (t *Transport) Deregister(r rdma.Region) error {
	t.regMu.Lock()
	defer t.regMu.Unlock()
	if t.closed.Load() {
		return rdma.ErrClosed
	}
	if _, ok := t.regions[r.Key]; !ok {
		return rdma.ErrNoRegion
	}
	delete(t.regions, r.Key)
	return nil
}

func (t *Transport) region(owner rdma.Addr, r rdma.Region, off uint64, n int) ([]byte, error) {
	if _, err := t.peer(owner); err != nil {
		return nil, err
	}
	t.regMu.RLock()
	buf, ok := t.regions[r.Key]
	t.regMu.RUnlock()
	if !ok || uint64(len(buf)) != r.Len {
		return nil, rdma.ErrNoRegion
	}
	if err := rdma.CheckBounds(r, off, n); err != nil {
		return nil, err
	}
	return buf[off : off+uint64(n)], nil
}

// Put copies src into the region.
func (t *Transport) Put(owner rdma.Addr, r rdma.Region, off uint64, src []byte) error {
	dst, err := t.region(owner, r, off, len(src))
	if err != nil {
		return err
	}
	copy(dst, src)
	return nil
}

// Get copies from the region into dst.
func (t *Transport) Get(owner rdma.Addr, r rdma.Region, off uint64, dst []byte) error {
	src, err := t.region(owner, r, off, len(dst))
	if err != nil {
		return err
	}
	copy(dst, src)
	return nil
}

// Progress does nothing: delivery is synchronous.
func (t *Transport) Progress(int) int { return 0 }

// Close makes every later call fail with rdma.ErrClosed, a second Close
// included, and drops the bindings and registrations.
func (t *Transport) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed.Load() {
		return rdma.ErrClosed
	}
	t.regMu.Lock()
	t.closed.Store(true)
	clear(t.regions)
	t.regMu.Unlock()
	t.dir.Store(new([]*chunk))
	return nil
}
