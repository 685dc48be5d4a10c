package endpoint

import (
	"errors"
	"sync"
	"sync/atomic"

	"github.com/fibermpi/fibermpi/packet"
	"github.com/fibermpi/fibermpi/rdma"
)

// The non-blocking contract (rdma: "Never blocking"): a transport's Send
// returns rdma.ErrAgain instead of waiting for room, and much of the
// protocol sends from Receive callbacks, where waiting could deadlock two
// processes. So a packet the transport refuses for now goes to a backlog,
// one FIFO per destination, which progress drains in order; every later
// packet to that destination queues behind it, keeping the order of sends
// that do not overlap in time. The backlog holds packets of the pool, so
// the pool bounds it: a sender that keeps sending finds the pool dry and
// waits in getPacket, driving progress — back-pressure, never a drop or an
// unbounded queue.
//
// While nothing is backlogged (the common case), a send is the transport's
// Send and one atomic load.
type backlog struct {
	// queued counts packets in every queue. post loads it before its
	// fast-path Send; drain stores the decrement only after the Send of
	// the packet it removes, so a send that sees 0 comes after every
	// backlogged packet has gone.
	queued atomic.Int64
	peers  peerTable[peerQueue, *peerQueue]
}

// peerQueue is the backlog towards one destination endpoint.
type peerQueue struct {
	mu sync.Mutex
	q  []pendingSend
}

func (q *peerQueue) init() {}

type pendingSend struct {
	w  int // the worker index the packet was taken with
	to rdma.Addr
	pk *packet.Packet
}

// post sends pk to to, or backlogs it if the transport's queue to that
// peer is full. On any other error the caller keeps pk.
func (p *Process) post(w int, to rdma.Addr, pk *packet.Packet) error {
	if p.backlog.queued.Load() == 0 {
		err := p.tr.Send(w, to, pk)
		if !errors.Is(err, rdma.ErrAgain) {
			return err
		}
	}
	return p.postSlow(w, to, pk)
}

// postSlow is post while something is backlogged, or after ErrAgain: under
// the destination's lock, send directly if its queue is empty, else (or if
// refused again) queue behind it. Sends to a backend that delivers in the
// caller (in-process) never come here with a queue to lock twice: they
// never get ErrAgain, and their queues stay empty.
func (p *Process) postSlow(w int, to rdma.Addr, pk *packet.Packet) error {
	q := p.backlog.peers.get(to)
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.q) == 0 {
		err := p.tr.Send(w, to, pk)
		if !errors.Is(err, rdma.ErrAgain) {
			return err
		}
	}
	q.q = append(q.q, pendingSend{w, to, pk})
	p.backlog.queued.Add(1)
	return nil
}

// drain sends what the backlog holds, in order per destination, until the
// transport refuses again. It reports how many packets went.
func (p *Process) drain() int {
	if p.backlog.queued.Load() == 0 {
		return 0
	}
	n := 0
	p.backlog.peers.each(func(q *peerQueue) {
		if !q.mu.TryLock() {
			return // another caller drains (or posts to) it
		}
		defer q.mu.Unlock()
		for len(q.q) > 0 {
			head := q.q[0]
			err := p.tr.Send(head.w, head.to, head.pk)
			if errors.Is(err, rdma.ErrAgain) {
				return
			}
			if err != nil {
				// The peer is gone (or the transport closed): the
				// packet cannot be delivered; the job's failure
				// handling reports the loss.
				p.pool.Put(head.w, head.pk)
			}
			q.q[0] = pendingSend{}
			q.q = q.q[1:]
			p.backlog.queued.Add(-1)
			n++
		}
	})
	return n
}
