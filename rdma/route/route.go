// Package route gives a process one rdma.Transport over several backends,
// choosing one per destination: an endpoint of this process is reached
// directly (the in-process backend, and rdma.Local for the endpoint layer's
// direct path), an endpoint of another process through the backend that
// reaches that process (rdma/shm on the same node, rdma/tcp across
// nodes). Locality is decided per address, from the job's rdma.Layout, so
// a job may mix them.
package route

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fibermpi/fibermpi/packet"
	"github.com/fibermpi/fibermpi/rdma"
)

// Transport routes each call to the backend of the destination's process.
// Make it with New.
type Transport struct {
	self   int
	layout *rdma.Layout
	local  rdma.Transport
	peer   rdma.Local
	byProc []rdma.Transport   // by process; nil for this process and for unreachable ones
	eager  []rdma.EagerSender // byProc[p] as an EagerSender, or nil
	remote []rdma.Transport   // the distinct backends in byProc
	name   string

	// regs holds this process's registered buffers by key, so that a Put
	// or Get whose owner is this process copies directly.
	regMu sync.RWMutex
	regs  map[uint32][]byte

	// closed is set once by Close; every call checks it first.
	closed atomic.Bool
}

var (
	_ rdma.Transport   = (*Transport)(nil)
	_ rdma.Local       = (*Transport)(nil)
	_ rdma.Sleeper     = (*Transport)(nil)
	_ rdma.AlarmSource = (*Transport)(nil)
	_ rdma.PutStarter  = (*Transport)(nil)
	_ rdma.EagerSender = (*Transport)(nil)
)

// Adopter is implemented by backends (rdma/tcp) that can serve Put and
// Get on a registration another backend of this process made: a job that
// mixes backends hands out one Region per buffer, made by the backend
// that must make it (shared memory, whose peers read it in place), and
// the others adopt it. Deregister withdraws an adopted region as well.
type Adopter interface {
	AdoptRegion(r rdma.Region, buf []byte) error
}

// ErrUnreachable is returned (wrapped) for a destination whose process no
// backend reaches.
var ErrUnreachable = errors.New("route: no transport reaches that process")

// New returns a router for process self of the job that layout describes.
// local must implement rdma.Local (rdma/inproc does) and carries the
// traffic between endpoints of this process; byProc[p] is the backend that
// reaches process p (ignored for self; nil if none does). The router owns
// the backends: Close closes them.
func New(self int, layout *rdma.Layout, local rdma.Transport, byProc []rdma.Transport) (*Transport, error) {
	peer, ok := local.(rdma.Local)
	if !ok {
		return nil, fmt.Errorf("route: the local backend %q does not reach its endpoints directly (rdma.Local)", local.Name())
	}
	if len(byProc) != layout.Procs() {
		return nil, fmt.Errorf("route: %d backends for %d processes", len(byProc), layout.Procs())
	}
	t := &Transport{self: self, layout: layout, local: local, peer: peer, byProc: make([]rdma.Transport, len(byProc)),
		eager: make([]rdma.EagerSender, len(byProc)), regs: make(map[uint32][]byte)}
	names := []string{local.Name()}
	for p, b := range byProc {
		if p == self || b == nil {
			continue
		}
		t.byProc[p] = b
		t.eager[p], _ = b.(rdma.EagerSender)
		known := false
		for _, r := range t.remote {
			known = known || r == b
		}
		if !known {
			t.remote = append(t.remote, b)
			names = append(names, b.Name())
		}
	}
	t.name = "route(" + strings.Join(names, "+") + ")"
	return t, nil
}

// Name lists the backends, e.g. "route(inproc+shm+cma)".
func (t *Transport) Name() string { return t.name }

// Backend returns the backend that carries traffic to address a, or an
// error if a is not allocated or its process is unreachable.
func (t *Transport) Backend(a rdma.Addr) (rdma.Transport, error) {
	if t.closed.Load() {
		return nil, rdma.ErrClosed
	}
	switch owner := t.layout.Owner(a); {
	case owner < 0:
		return nil, rdma.ErrNoPeer
	case owner == t.self:
		return t.local, nil
	case t.byProc[owner] == nil:
		return nil, fmt.Errorf("%w: address %d belongs to process %d", ErrUnreachable, a, owner)
	default:
		return t.byProc[owner], nil
	}
}

// Bind attaches a local endpoint to every backend, so that its arrivals
// come from this process and from every other.
func (t *Transport) Bind(a rdma.Addr, r rdma.Receiver, pool *packet.Pool) error {
	if t.closed.Load() {
		return rdma.ErrClosed
	}
	if owner := t.layout.Owner(a); owner != t.self {
		return fmt.Errorf("route: Bind of address %d, which belongs to process %d, at process %d: %w", a, owner, t.self, rdma.ErrNoPeer)
	}
	if err := t.local.Bind(a, r, pool); err != nil {
		return err
	}
	for i, b := range t.remote {
		if err := b.Bind(a, r, pool); err != nil {
			for _, prev := range t.remote[:i] {
				_ = prev.Unbind(a)
			}
			_ = t.local.Unbind(a)
			return err
		}
	}
	return nil
}

// Unbind detaches a from every backend.
func (t *Transport) Unbind(a rdma.Addr) error {
	if t.closed.Load() {
		return rdma.ErrClosed
	}
	err := t.local.Unbind(a)
	for _, b := range t.remote {
		if berr := b.Unbind(a); err == nil {
			err = berr
		}
	}
	return err
}

// Send hands pk to the backend of to's process.
func (t *Transport) Send(w int, to rdma.Addr, pk *packet.Packet) error {
	b, err := t.Backend(to)
	if err != nil {
		return err
	}
	return b.Send(w, to, pk)
}

// SendEager hands an eager message to the backend of to's process if that
// backend sends them without a packet (rdma.EagerSender); otherwise, and
// for this process's own endpoints (reached directly through Peer), it
// reports false.
func (t *Transport) SendEager(w int, to rdma.Addr, h rdma.EagerHeader, data []byte) bool {
	if t.closed.Load() {
		return false
	}
	if e := t.EagerVia(to); e != nil {
		return e.SendEager(w, to, h, data)
	}
	return false
}

// EagerVia returns the backend of to's process if it sends eager messages
// without a packet (rdma.EagerRouter), else nil.
func (t *Transport) EagerVia(to rdma.Addr) rdma.EagerSender {
	if owner := t.layout.Owner(to); owner >= 0 && owner < len(t.eager) && t.eager[owner] != nil {
		return t.eager[owner]
	}
	return nil
}

// MoverVia returns the backend of a's process if it moves large
// messages itself (rdma.MoverRouter), else nil: also for this process's
// own endpoints, which are reached directly.
func (t *Transport) MoverVia(a rdma.Addr) rdma.Mover {
	if owner := t.layout.Owner(a); owner >= 0 && owner < len(t.byProc) && owner != t.self {
		m, _ := t.byProc[owner].(rdma.Mover)
		return m
	}
	return nil
}

// Peer returns the Receiver of a local endpoint; for an endpoint of
// another process it returns rdma.ErrRemote.
func (t *Transport) Peer(a rdma.Addr) (rdma.Receiver, error) {
	if t.closed.Load() {
		return nil, rdma.ErrClosed
	}
	if owner := t.layout.Owner(a); owner != t.self {
		if owner < 0 {
			return nil, rdma.ErrNoPeer
		}
		return nil, rdma.ErrRemote
	}
	return t.peer.Peer(a)
}

// Register exposes buf to every process: it registers it with the first
// remote backend that cannot adopt another's registration (or the first
// remote backend, or the local one in a job of one process), whose region
// then travels to peers, has every other remote backend that can adopt it
// (Adopter) do so, and remembers it for local copies.
func (t *Transport) Register(buf []byte) (rdma.Region, error) {
	if t.closed.Load() {
		return rdma.Region{}, rdma.ErrClosed
	}
	b := t.owner()
	r, err := b.Register(buf)
	if err != nil {
		return r, err
	}
	for _, o := range t.remote {
		if a, ok := o.(Adopter); ok && o != b {
			if err := a.AdoptRegion(r, buf); err != nil {
				t.dropAdopted(b, r)
				_ = b.Deregister(r)
				return rdma.Region{}, err
			}
		}
	}
	t.regMu.Lock()
	t.regs[r.Key] = buf
	t.regMu.Unlock()
	return r, nil
}

// owner returns the backend that makes this process's registrations.
func (t *Transport) owner() rdma.Transport {
	if len(t.remote) == 0 {
		return t.local
	}
	for _, o := range t.remote {
		if _, ok := o.(Adopter); !ok {
			return o
		}
	}
	return t.remote[0]
}

// dropAdopted withdraws r from the backends that adopted it.
func (t *Transport) dropAdopted(b rdma.Transport, r rdma.Region) {
	for _, o := range t.remote {
		if _, ok := o.(Adopter); ok && o != b {
			_ = o.Deregister(r)
		}
	}
}

// Deregister withdraws a registration made by Register.
func (t *Transport) Deregister(r rdma.Region) error {
	if t.closed.Load() {
		return rdma.ErrClosed
	}
	t.regMu.Lock()
	_, ok := t.regs[r.Key]
	delete(t.regs, r.Key)
	t.regMu.Unlock()
	if !ok {
		return rdma.ErrNoRegion
	}
	b := t.owner()
	t.dropAdopted(b, r)
	return b.Deregister(r)
}

// region returns the bytes of a registration of the local endpoint owner
// for an access of n bytes at off.
func (t *Transport) region(owner rdma.Addr, r rdma.Region, off uint64, n int) ([]byte, error) {
	if _, err := t.peer.Peer(owner); err != nil {
		return nil, err
	}
	t.regMu.RLock()
	buf, ok := t.regs[r.Key]
	t.regMu.RUnlock()
	if !ok || uint64(len(buf)) != r.Len {
		return nil, rdma.ErrNoRegion
	}
	if err := rdma.CheckBounds(r, off, n); err != nil {
		return nil, err
	}
	return buf[off : off+uint64(n)], nil
}

// Put copies src into r: directly when owner is an endpoint of this
// process, else through the owner's backend.
func (t *Transport) Put(owner rdma.Addr, r rdma.Region, off uint64, src []byte) error {
	b, err := t.Backend(owner)
	if err != nil {
		return err
	}
	if b != t.local {
		return b.Put(owner, r, off, src)
	}
	dst, err := t.region(owner, r, off, len(src))
	if err != nil {
		return err
	}
	copy(dst, src)
	return nil
}

// StartPut starts a Put through the owner's backend when that backend
// can overlap Puts (rdma.PutStarter); otherwise, and for an owner in this
// process, it does the Put at once and returns pending false.
func (t *Transport) StartPut(owner rdma.Addr, r rdma.Region, off uint64, src []byte, done rdma.PutDone) (bool, error) {
	b, err := t.Backend(owner)
	if err != nil {
		return false, err
	}
	if ps, ok := b.(rdma.PutStarter); ok && b != t.local {
		return ps.StartPut(owner, r, off, src, done)
	}
	return false, t.Put(owner, r, off, src)
}

// Get copies from r into dst, as Put.
func (t *Transport) Get(owner rdma.Addr, r rdma.Region, off uint64, dst []byte) error {
	b, err := t.Backend(owner)
	if err != nil {
		return err
	}
	if b != t.local {
		return b.Get(owner, r, off, dst)
	}
	src, err := t.region(owner, r, off, len(dst))
	if err != nil {
		return err
	}
	copy(dst, src)
	return nil
}

// Progress polls every backend.
func (t *Transport) Progress(w int) int {
	n := t.local.Progress(w)
	for _, b := range t.remote {
		n += b.Progress(w)
	}
	return n
}

// Sleep waits for an arrival on the remote backend, if there is exactly one
// and it can (rdma.Sleeper); otherwise it sleeps for at most max, or not at
// all when a backend cannot wake it.
func (t *Transport) Sleep(max time.Duration) {
	if len(t.remote) == 1 {
		if s, ok := t.remote[0].(rdma.Sleeper); ok {
			s.Sleep(max)
			return
		}
	}
	if len(t.remote) == 0 {
		time.Sleep(max)
	}
}

// Alarm returns the Alarm of the backend that carries the traffic to
// every other process, if there is exactly one and it has one (rdma/shm),
// else nil: a sleeper of this process then polls.
func (t *Transport) Alarm() rdma.Alarm {
	if len(t.remote) != 1 {
		return nil
	}
	switch b := t.remote[0].(type) {
	case rdma.AlarmSource:
		return b.Alarm()
	case rdma.Alarm:
		return b
	}
	return nil
}

// Close closes every backend; every later call fails with rdma.ErrClosed.
func (t *Transport) Close() error {
	if !t.closed.CompareAndSwap(false, true) {
		return rdma.ErrClosed
	}
	errs := []error{t.local.Close()}
	for _, b := range t.remote {
		errs = append(errs, b.Close())
	}
	return errors.Join(errs...)
}
