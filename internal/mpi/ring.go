//go:build mpi

package mpi

/*
#cgo noescape fmpi_send_now
#cgo nocallback fmpi_send_now
#cgo nocallback fmpi_poll
#cgo nocallback fmpi_ring_cycle
#cgo nocallback fmpi_sendq_test
#include "fmpi.h"
*/
import "C"

import (
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
	consumed int // complete slots consumed since the last Cycle
}

// NewRing posts n receives of slot bytes each on c with tag.
func NewRing(c Comm, tag, n, slot int) (*Ring, error) {
	var code C.int
	r := C.fmpi_ring_new(c.c, C.int(tag), C.int(n), C.int(slot), &code)
	if err := check("MPI_Irecv", code); err != nil {
		return nil, err // a ring that posted some receives is abandoned
	}
	return &Ring{r: r, slot: slot}, nil
}

// Cycle reposts the slots consumed since the last call and tests the ring
// in order; it returns how many slots from the head are complete (at most
// max). One cgo call.
func (r *Ring) Cycle(max int) (int, error) {
	var code C.int
	n := C.fmpi_ring_cycle(r.r, C.int(r.consumed), C.int(max), &code)
	r.consumed = 0
	return int(n), check("MPI_Test", code)
}

// Poll is one poll in one cgo call: it retires q's completed sends and
// then does what Cycle does, returning the complete slots.
func (r *Ring) Poll(q *SendQ, max int) (int, error) {
	var code, active C.int
	n := C.fmpi_poll(q.q, r.r, C.int(r.consumed), C.int(max), &active, &code)
	r.consumed = 0
	return int(n), check("MPI_Test", code)
}

// Slot returns the message in complete slot k (0 = the head) and the rank
// of its sender. The bytes are C memory, valid until the next Cycle after
// Consume. It reads the ring's C fields directly: no cgo call.
func (r *Ring) Slot(k int) ([]byte, int) {
	c := r.r
	i := (int(c.head) + k) % int(c.n)
	// Safety: count and source are C arrays of c.n ints and mem is c.n
	// slots of r.slot bytes, allocated by fmpi_ring_new and never freed;
	// slot i's receive has completed (MPI has finished writing it) and
	// it is reposted only by a later Cycle or Poll.
	n := int(*(*C.int)(unsafe.Add(unsafe.Pointer(c.count), i*int(unsafe.Sizeof(C.int(0))))))
	src := int(*(*C.int)(unsafe.Add(unsafe.Pointer(c.source), i*int(unsafe.Sizeof(C.int(0))))))
	n = min(max(n, 0), r.slot)
	p := unsafe.Add(unsafe.Pointer(c.mem), i*r.slot)
	return unsafe.Slice((*byte)(p), n), src
}

// Consume marks the first k complete slots consumed: the next Cycle
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
// with tag: one cgo call, no allocation on the Go side.
func (q *SendQ) Send(head, body []byte, dest, tag int) error {
	// Safety: C copies both during the call and keeps neither pointer.
	return check("MPI_Isend", C.fmpi_send_now(q.q, bufPtr(head), C.int(len(head)), bufPtr(body), C.int(len(body)), C.int(dest), C.int(tag)))
}

// Test retires completed sends and returns how many are still active.
func (q *SendQ) Test() (int, error) {
	var code C.int
	n := C.fmpi_sendq_test(q.q, &code)
	return int(n), check("MPI_Testsome", code)
}

// Active returns how many sends are active, without testing.
func (q *SendQ) Active() int { return int(q.q.active) }

// Free frees the queue; sends still active are left to MPI (see fmpi.h).
func (q *SendQ) Free() {
	if q.q != nil {
		C.fmpi_sendq_free(q.q)
		q.q = nil
	}
}
