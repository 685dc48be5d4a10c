//go:build mpi

package mpi

// fmpi_send and fmpi_sendq_test take Go pointers: noescape keeps them on
// the stack (nocallback is what lets cgo honour it). fmpi_send_top and
// fmpi_poll, the calls of every message, take integers only, so they have
// neither directive: nocallback costs two runtime calls around each cgo
// call (runtime.cgoNoCallback, about 35 instructions a call) and would buy
// nothing there.

/*
#cgo noescape fmpi_send
#cgo nocallback fmpi_send
#cgo noescape fmpi_sendq_test
#cgo nocallback fmpi_sendq_test
#include "fmpi.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"unsafe"
)

// Ring is a ring of receives preposted on one tag from any source, into
// C memory (MPI keeps writing it after the call that posts it). Messages
// of one source land in ring order; the caller consumes complete slots in
// that order. Every method needs the lock.
type Ring struct {
	r        *C.fmpi_ring
	slot     int
	consumed int // complete slots consumed since the last Poll
}

// NewRing posts n receives of slot bytes each on c with tag.
func NewRing(c Comm, tag, n, slot int) (*Ring, error) {
	var code C.int
	r := C.fmpi_ring_new(c.c, C.int(tag), C.int(n), C.int(slot), &code)
	if r != nil {
		rings = append(rings, r) // Finalize cancels what it posted, even if not all
	}
	if err := check("MPI_Irecv", code); err != nil {
		return nil, err // a ring that posted some receives is abandoned
	}
	return &Ring{r: r, slot: slot}, nil
}

// rings are every ring made in this process, abandoned ones included:
// Finalize cancels their receives. Under the lock.
var rings []*C.fmpi_ring

// cancelRings cancels the receives of every ring, for Finalize: nothing
// may use a ring after it. The caller holds the lock.
func cancelRings() error {
	var err error
	for _, r := range rings {
		err = errors.Join(err, check("MPI_Cancel", C.fmpi_ring_cancel(r)))
	}
	rings = nil
	return err
}

// Poll is one poll in one cgo call: it retires q's completed sends once
// a batch of them is active, then reposts the slots consumed since the
// last poll and tests the ring in order, returning how many slots from
// the head are complete (at most max). When none is complete it tests
// the head again, up to spin more times, returning as soon as it
// completes (1): a poller that waits for a message passes spin > 0 to see
// it within one MPI_Test of its arrival rather than one cgo call (while
// holding the lock longer).
func (r *Ring) Poll(q *SendQ, max, spin int) (int, error) {
	// Safety: q.q and r.r are C memory (fmpi_sendq_new, fmpi_ring_new),
	// never freed while the ring is in use; passed as integers, they are
	// not Go pointers for cgo to check, and C gets no Go pointer.
	n := C.fmpi_poll(C.uintptr_t(uintptr(unsafe.Pointer(q.q))), C.uintptr_t(uintptr(unsafe.Pointer(r.r))), C.int(r.consumed), C.int(max), C.int(spin))
	r.consumed = 0
	if r.r.err == C.MPI_SUCCESS {
		return int(n), nil
	}
	return int(n), check("MPI_Test", r.r.err)
}

// Slot returns the message in complete slot k (0 = the head) and the rank
// of its sender. The bytes are C memory, valid until the next Poll after
// Consume. It reads the ring's C fields directly: no cgo call.
func (r *Ring) Slot(k int) ([]byte, int) {
	c := r.r
	i := (int(c.head) + k) % int(c.n)
	// Safety: count and source are C arrays of c.n ints and mem is c.n
	// slots of r.slot bytes, allocated by fmpi_ring_new and never freed;
	// slot i's receive has completed (MPI has finished writing it) and
	// it is reposted only by a later Poll.
	n := int(*(*C.int)(unsafe.Add(unsafe.Pointer(c.count), i*int(unsafe.Sizeof(C.int(0))))))
	src := int(*(*C.int)(unsafe.Add(unsafe.Pointer(c.source), i*int(unsafe.Sizeof(C.int(0))))))
	n = min(max(n, 0), r.slot)
	p := unsafe.Add(unsafe.Pointer(c.mem), i*r.slot)
	return unsafe.Slice((*byte)(p), n), src
}

// Consume marks the first k complete slots consumed: the next Poll
// reposts them.
func (r *Ring) Consume(k int) { r.consumed += k }

// Abandon stops using the ring: its receives stay posted and its memory
// allocated for the life of the process (fmpi.h says why nothing is
// cancelled); its tag must never be used again.
func (r *Ring) Abandon() {
	if r.r != nil {
		C.fmpi_ring_abandon(r.r)
		r.r = nil
	}
}

// SendQ sends messages copied into C buffers of a fixed size, recycled
// when their sends complete. Every method needs the lock.
type SendQ struct {
	q    *C.fmpi_sendq
	slot int
}

// NewSendQ makes a queue of messages of at most slot bytes on c.
func NewSendQ(c Comm, slot int) (*SendQ, error) {
	q := C.fmpi_sendq_new(c.c, C.int(slot))
	if q == nil {
		return nil, fmt.Errorf("mpi: out of memory for a send queue")
	}
	return &SendQ{q: q, slot: slot}, nil
}

// Send copies head then body into one buffer and starts sending it to dest
// with tag: one cgo call, no allocation on the Go side. The send is not
// tested here: Ring.Poll retires completed sends in batches, and Test does
// at once. When a recycled buffer is free, the copy is Go's, into that C
// buffer (Top, SendTop), and the cgo call takes only integers (no pointer
// check).
func (q *SendQ) Send(head, body []byte, dest, tag int) error {
	n := len(head) + len(body)
	if b := q.Top(n); b != nil {
		copy(b[copy(b, head):], body)
		return q.SendTop(n, dest, tag)
	}
	// Safety: C copies both during the call and keeps neither pointer.
	return check("MPI_Isend", C.fmpi_send(q.q, bufPtr(head), C.int(len(head)), bufPtr(body), C.int(len(body)), C.int(dest), C.int(tag)))
}

// Top returns the C buffer the next send of n bytes goes from, for the
// caller to write the message into and start with SendTop (under the same
// hold of the lock): a message built in place, with no copy of its head.
// It returns nil when no recycled buffer is free, the queue is full or n
// is over the slot size: Send then takes the other way.
func (q *SendQ) Top(n int) []byte {
	c := q.q
	if c.nfree == 0 || c.active >= c.cap || n > q.slot {
		return nil
	}
	// Safety: free_list is a C array of c.nfree buffers of q.slot bytes
	// each (fmpi_sendq_recycle), all C memory no send uses; the top one
	// is written by the caller and sent by fmpi_send_top, which pops it,
	// under the same lock.
	top := unsafe.Slice(c.free_list, c.nfree)[c.nfree-1]
	return unsafe.Slice((*byte)(unsafe.Pointer(top)), n)
}

// SendTop starts sending to dest with tag the n bytes written into the
// buffer Top returned.
func (q *SendQ) SendTop(n, dest, tag int) error {
	if code := C.fmpi_send_top(C.uintptr_t(uintptr(unsafe.Pointer(q.q))), C.int(n), C.int(dest), C.int(tag)); code != C.MPI_SUCCESS {
		return check("MPI_Isend", code)
	}
	return nil
}

// Test retires completed sends and returns how many are still active.
func (q *SendQ) Test() (int, error) {
	var code C.int
	n := C.fmpi_sendq_test(q.q, &code)
	return int(n), check("MPI_Testsome", code)
}

// Active returns how many sends are active, without testing.
func (q *SendQ) Active() int { return int(q.q.active) }

// Free frees the queue once its sends have completed: a queue with sends
// still active is kept (with its buffers) until Reap finds them complete
// — never MPI_Request_free'd, which MPICH 4.0.2 gets wrong for sends to
// this process itself (fmpi.h).
func (q *SendQ) Free() {
	if q.q == nil {
		return
	}
	if n, _ := q.Test(); n > 0 {
		orphanQs = append(orphanQs, &SendQ{q: q.q, slot: q.slot})
	} else {
		C.fmpi_sendq_free(q.q)
	}
	q.q = nil
}

// Requests and send queues of closed transports that MPI had not
// completed yet; under the lock.
var (
	orphanQs   []*SendQ
	orphanReqs []Request
	orphanKeep []any
	orphanIdx  []int32
)

// Orphan hands r to the package, which tests it from Reap until it
// completes, keeping keep (the pinners of its memory) reachable until
// then; r becomes null. The caller holds the lock.
func (r *Request) Orphan(keep any) {
	if r.Null() {
		return
	}
	orphanReqs = append(orphanReqs, *r)
	orphanKeep = append(orphanKeep, keep)
	*r = NullRequest()
}

// Reap tests the orphaned requests and send queues once, freeing those
// complete, and returns how many are left. The caller holds the lock.
func Reap() int {
	w := 0
	for _, q := range orphanQs {
		if n, _ := q.Test(); n == 0 {
			C.fmpi_sendq_free(q.q)
			continue
		}
		orphanQs[w] = q
		w++
	}
	clear(orphanQs[w:])
	orphanQs = orphanQs[:w]
	if len(orphanReqs) > 0 {
		if len(orphanIdx) < len(orphanReqs) {
			orphanIdx = make([]int32, 2*len(orphanReqs))
		}
		if n, _ := Testsome(orphanReqs, orphanIdx); n > 0 {
			j := 0
			for i := range orphanReqs {
				if !orphanReqs[i].Null() {
					orphanReqs[j], orphanKeep[j] = orphanReqs[i], orphanKeep[i]
					j++
				}
			}
			clear(orphanKeep[j:])
			orphanReqs, orphanKeep = orphanReqs[:j], orphanKeep[:j]
		}
	}
	return len(orphanQs) + len(orphanReqs)
}
