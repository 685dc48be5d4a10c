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

// Transport connects the endpoints of one process. Its zero value is not
// usable; call New.
type Transport struct {
	// peers maps an Addr to its Receiver. Send loads it without a lock;
	// Bind and Unbind replace it (copy on write) under mu.
	peers atomic.Pointer[[]rdma.Receiver]
	mu    sync.Mutex

	// regions maps a key to a registered buffer.
	regMu   sync.RWMutex
	regions map[uint32][]byte
	nextKey uint32

	closed atomic.Bool
}

// New returns an empty in-process transport.
func New() *Transport {
	t := &Transport{regions: make(map[uint32][]byte)}
	t.peers.Store(new([]rdma.Receiver))
	return t
}

var _ rdma.Transport = (*Transport)(nil)

// Name returns "inproc".
func (t *Transport) Name() string { return "inproc" }

// Bind attaches the endpoint a.
func (t *Transport) Bind(a rdma.Addr, r rdma.Receiver) error {
	if r == nil {
		return rdma.ErrNoPeer
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed.Load() {
		return rdma.ErrClosed
	}
	old := *t.peers.Load()
	if int(a) < len(old) && old[a] != nil {
		return rdma.ErrBound
	}
	peers := make([]rdma.Receiver, max(len(old), int(a)+1))
	copy(peers, old)
	peers[a] = r
	t.peers.Store(&peers)
	return nil
}

// Unbind detaches the endpoint a.
func (t *Transport) Unbind(a rdma.Addr) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	old := *t.peers.Load()
	if int(a) >= len(old) || old[a] == nil {
		return rdma.ErrNoPeer
	}
	peers := append([]rdma.Receiver(nil), old...)
	peers[a] = nil
	t.peers.Store(&peers)
	return nil
}

func (t *Transport) peer(a rdma.Addr) (rdma.Receiver, error) {
	if t.closed.Load() {
		return nil, rdma.ErrClosed
	}
	peers := *t.peers.Load()
	if int(a) >= len(peers) || peers[a] == nil {
		return nil, rdma.ErrNoPeer
	}
	return peers[a], nil
}

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
	if t.closed.Load() {
		return rdma.Region{}, rdma.ErrClosed
	}
	t.regMu.Lock()
	defer t.regMu.Unlock()
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

// Close makes every later call fail with rdma.ErrClosed.
func (t *Transport) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed.Store(true)
	t.regMu.Lock()
	clear(t.regions)
	t.regMu.Unlock()
	return nil
}
