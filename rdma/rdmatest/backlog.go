package rdmatest

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fibermpi/fibermpi/packet"
	"github.com/fibermpi/fibermpi/rdma"
)

// A transport may refuse a Send with rdma.ErrAgain when its queue to the
// peer is full. Outside Receive the suite then drives progress and sends
// again (sendRetry). Inside a Receive callback it must not wait (the
// transport may be waiting for this very callback to return), so the
// packet goes to the env's backlog, a FIFO per sending transport and
// destination that every progress pass of the suite drains in order
// (reply): the endpoint layer does the same.

// backlog holds the packets Receive callbacks could not send yet.
type backlog struct {
	mu     sync.Mutex
	queues map[backlogKey]*backlogQueue
	list   []*backlogQueue // the queues in creation order, for draining
	// held counts the packets in every queue: Added under mu, Loaded by
	// drain to skip the lock when there is nothing to send.
	held atomic.Int64
	// draining is held by the one goroutine draining.
	draining sync.Mutex
}

type backlogKey struct {
	h  rdma.Transport
	to rdma.Addr
}

// backlogQueue is the FIFO of one sending transport towards one address.
type backlogQueue struct {
	backlogKey
	pks []*packet.Packet
	// busy is set (under backlog.mu) while one goroutine sends the
	// queue's first packet outside the lock: nobody else may send to the
	// same destination then, or order would be lost.
	busy bool
}

// queue returns the queue of (h, to). The caller holds mu.
func (b *backlog) queue(h rdma.Transport, to rdma.Addr) *backlogQueue {
	k := backlogKey{h, to}
	q := b.queues[k]
	if q == nil {
		if b.queues == nil {
			b.queues = make(map[backlogKey]*backlogQueue)
		}
		q = &backlogQueue{backlogKey: k}
		b.queues[k] = q
		b.list = append(b.list, q)
	}
	return q
}

// reply sends pk from host h to to from inside a Receive callback, as
// worker w: at once if nothing waits in the backlog for that destination
// and the transport takes it, else at the end of the backlog. A refusal
// other than rdma.ErrAgain is a failure; the packet goes back to the pool.
func (e *env) reply(w int, h rdma.Transport, to rdma.Addr, pk *packet.Packet) {
	b := &e.backlog
	b.mu.Lock()
	q := b.queue(h, to)
	if len(q.pks) > 0 || q.busy {
		q.pks = append(q.pks, pk)
		b.held.Add(1)
		b.mu.Unlock()
		return
	}
	q.busy = true
	b.mu.Unlock()
	err := h.Send(w, to, pk)
	b.mu.Lock()
	q.busy = false
	if errors.Is(err, rdma.ErrAgain) {
		// First in line: anything queued meanwhile was sent after it.
		q.pks = append([]*packet.Packet{pk}, q.pks...)
		b.held.Add(1)
		err = nil
	}
	b.mu.Unlock()
	if err != nil {
		e.failf("Send from Receive to %d: %v", to, err)
		e.putBack(w, pk)
	}
}

// drainBacklog sends what the backlog holds, each queue in order until the
// transport refuses with rdma.ErrAgain, as worker w. It returns the number
// of packets sent. Only one goroutine drains at a time; the others return.
func (e *env) drainBacklog(w int) int {
	b := &e.backlog
	if b.held.Load() == 0 || !b.draining.TryLock() {
		return 0
	}
	defer b.draining.Unlock()
	b.mu.Lock()
	list := b.list
	b.mu.Unlock()
	n := 0
	for _, q := range list {
		for {
			b.mu.Lock()
			if len(q.pks) == 0 || q.busy {
				b.mu.Unlock()
				break
			}
			pk := q.pks[0]
			q.pks = q.pks[1:]
			q.busy = true
			b.mu.Unlock()
			err := q.h.Send(w, q.to, pk)
			b.mu.Lock()
			q.busy = false
			again := errors.Is(err, rdma.ErrAgain)
			if again {
				q.pks = append([]*packet.Packet{pk}, q.pks...)
			} else {
				b.held.Add(-1)
			}
			b.mu.Unlock()
			if again {
				break
			}
			if err != nil {
				e.failf("Send from the backlog to %d: %v", q.to, err)
				e.putBack(w, pk)
			}
			n++
		}
	}
	return n
}

// dropBacklog returns every packet still in the backlog to the pool (at
// the end of a subtest, after the transports closed).
func (e *env) dropBacklog() {
	b := &e.backlog
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, q := range b.list {
		for _, pk := range q.pks {
			e.pool.Put(packet.NoWorker, pk)
		}
		b.held.Add(int64(-len(q.pks)))
		q.pks = nil
	}
}

// sendRetry sends pk from host h to to as worker w, outside any Receive
// callback. While the backlog holds packets it lets them go first, and
// while the transport answers rdma.ErrAgain it tries again; either way it
// drives progress meanwhile, for at most the fabric's timeout. On error
// the caller keeps pk.
//
// Letting the backlog go first keeps the pool from running dry. A sender
// that kept taking packets for new messages while the answers of Receive
// callbacks waited in the backlog could end with every packet in the
// backlog, the queues of both directions full, and no packet left for a
// transport to build an arrival in: nothing would move again. Between
// processes, each with its own pool, it is enough that a process sends
// nothing new while its own backlog holds packets: the other side's
// backlog can then grow only by what the queues held, and the other side
// still has packets. The suite's endpoints share one pool, so a sender
// waits while any backlog of the fabric holds packets.
func (e *env) sendRetry(w int, h rdma.Transport, to rdma.Addr, pk *packet.Packet) error {
	var deadline time.Time
	for {
		var err error
		if e.backlog.held.Load() != 0 {
			err = errBacklog
		} else if err = h.Send(w, to, pk); !errors.Is(err, rdma.ErrAgain) {
			return err
		}
		if deadline.IsZero() {
			deadline = time.Now().Add(e.timeout)
		} else if time.Now().After(deadline) {
			return fmt.Errorf("rdmatest: still %w after %v of progress", err, e.timeout)
		}
		if e.progress(w) == 0 {
			runtime.Gosched()
		}
	}
}

// errBacklog describes a send held back by the backlog.
var errBacklog = errors.New("waiting for the backlog to drain")
