package endpoint

import (
	"github.com/fibermpi/fibermpi/fiber"
	"github.com/fibermpi/fibermpi/match"
	"github.com/fibermpi/fibermpi/rdma"
)

// takeSpins bounds the looks takeRecv takes at a transport before the
// blocking Recv posts its receive and waits as any other (spin, then
// block). A look at an empty ring is a poll's look (a few loads, no lock),
// some tens of nanoseconds: the bound is of the order of spinTime.
const takeSpins = 512

// taking is the envelope and buffer of a blocking Recv that takes its
// message from a transport itself (takeRecv): it is the rdma.EagerTake
// the transport offers the message to.
type taking struct {
	c        *core
	key      match.Key
	ctx      uint32
	src, tag int32
	buf      []byte
	n        int // bytes taken
	// peer is the sender's offers and counts (the source's dest.offers):
	// a message taken counts as arrived there, as ReceiveEager counts it.
	// nil for a source in this process.
	peer *peerOffers
}

var _ rdma.EagerTake = (*taking)(nil)

// TakeEager takes an eager message with t's envelope that fits t's buffer
// if the matching table holds nothing under t's key and no wildcard
// receive: the receive is then posted and matched in one step, as if it
// had been posted when the message came (match.Table.Vacate).
func (t *taking) TakeEager(h rdma.EagerHeader, data []byte) bool {
	if h.Context != t.ctx || h.Source != t.src || h.Tag != t.tag || len(data) > len(t.buf) {
		return false
	}
	v, ok := t.c.table.Vacate(t.key)
	if !ok {
		return false
	}
	t.n = copy(t.buf, data)
	v.Release()
	if t.peer != nil {
		t.peer.arrived.Add(1) // after matching, as ReceiveEager counts
	}
	return true
}

// takeRecv is the first way of a blocking Recv from a fiber that has its
// worker to itself, for a message from another process whose transport
// lets a receiver take messages itself (rdma.EagerTaker: rdma/shm, and
// rdma/mpi, which polls MPI for it): the fiber looks at the ring from
// src's process, and takes the eager message at its head if it is for
// this endpoint with the receive's envelope, and
// nothing is posted or queued under its key (taking.TakeEager). It skips
// the receive's post, the delivery through Progress and the request's
// completion. It reports false, having taken nothing, when anything else
// comes first at the ring (Progress must deliver that, in order), when
// another fiber lives on the worker (fiber.Fiber.WorkerAlone: it would
// wait for the polling this skips), when a message of the key waits in
// the matching table (another goroutine's progress delivered it: the
// receive's post matches it), and after takeSpins looks: Recv then posts
// and waits as always. The fiber does not yield here; it spins, as a
// waiting fiber does before it yields (Request.spin).
func (e *Endpoint) takeRecv(c Comm, src, tag int, buf []byte) (Status, bool) {
	if tag < 0 {
		return Status{}, false
	}
	d, f, ok := e.mayTake(c, src)
	if !ok {
		return Status{}, false
	}
	key, ok := match.ExactKey(c.Context, int32(src), int32(tag))
	if !ok {
		return Status{}, false
	}
	// Anything under the key, or a wildcard receive, goes the general way
	// at once: a receive that would not take the ring's next message.
	if !e.c.vacant(key) {
		return Status{}, false
	}
	t := &e.take
	*t = taking{c: e.c, key: key, ctx: c.Context, src: int32(src), tag: int32(tag), buf: buf, peer: d.offers}
	took := e.takeSpin(d.taker, f, d.to, t)
	t.buf = nil // the caller's buffer is not kept
	if !took {
		return Status{}, false
	}
	e.takes++
	return Status{Source: int32(src), Tag: int32(tag), Count: t.n}, true
}

// mayTake reports whether a blocking Recv on c from rank src may take its
// message itself (takeRecv) as far as the source and the fiber go: src is
// a rank of another process whose transport is an rdma.EagerTaker, the
// process does not poll only from inside blocking calls, and the caller
// is a fiber alone on its worker. It returns the source's dest (cached in
// e.src) and the fiber.
func (e *Endpoint) mayTake(c Comm, src int) (*dest, *fiber.Fiber, bool) {
	p := e.c.p
	if src < 0 || src >= len(c.Addrs) || p.procs == 1 || p.opts.Progress == ProgressCaller {
		return nil, nil, false
	}
	from := c.Addrs[src]
	d := &e.src
	if !d.set || d.to != from {
		*d = e.lookup(from)
	}
	if d.taker == nil {
		return nil, nil, false
	}
	f := e.waiter.Fiber()
	if f == nil || !f.WorkerAlone() {
		return nil, nil, false
	}
	return d, f, true
}

// takeSpin is takeRecv's loop: it reports whether tk took t's message
// from the process of address from.
func (e *Endpoint) takeSpin(tk rdma.EagerTaker, f *fiber.Fiber, from rdma.Addr, t *taking) bool {
	for i := 1; i <= takeSpins; i++ {
		switch tk.TakeEager(e.worker, from, e.c.addr, t) {
		case rdma.Took:
			return true
		case rdma.TakeOther:
			return false
		}
		if i%8 == 0 {
			if !f.WorkerAlone() || !e.c.vacant(t.key) {
				return false
			}
		}
	}
	return false
}

// vacant reports whether nothing is queued or posted under key and no
// wildcard receive is posted, at the moment it looks (match.Table.Vacate,
// released at once).
func (c *core) vacant(key match.Key) bool {
	v, ok := c.table.Vacate(key)
	if ok {
		v.Release()
	}
	return ok
}
