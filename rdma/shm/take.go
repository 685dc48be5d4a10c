package shm

import (
	"github.com/fibermpi/fibermpi/packet"
	"github.com/fibermpi/fibermpi/rdma"
)

var _ rdma.EagerTaker = (*Transport)(nil)

// TakeEager implements rdma.EagerTaker: it offers the record at the head of
// the ring from the process of address from to t, if it is an eager
// message for to, and consumes it if t takes it. The ring is held as
// deliver holds it (a deliverer, or a caller of TakeEager, at a time), so
// records leave it in order whoever takes them. Records a Put or Get set
// aside (the queue) come first: their presence is TakeOther, as is
// anything doubtful, which peekRing then reports to the deliverer.
func (t *Transport) TakeEager(w int, from, to rdma.Addr, tk rdma.EagerTake) rdma.Take {
	p := t.layout.Owner(from)
	if p < 0 || p >= len(t.inBy) || t.closed.Load() {
		return rdma.TakeOther
	}
	ir := t.inBy[p]
	if ir == nil {
		return rdma.TakeOther
	}
	// The look of Progress's poll: no lock while the ring is empty, and
	// the record's line loaded with the tail's.
	if !ir.pending() {
		return rdma.TakeNone
	}
	if !ir.lk.tryDeliver() {
		return rdma.TakeNone // a deliverer has it: it may be taking this very record
	}
	ir.holdingTake = true
	defer ir.endDeliver() // released also if t panics
	if ir.dead || ir.qhead != len(ir.queue) {
		return rdma.TakeOther
	}
	rec, typ, n, word1, ok, corrupt := ir.peekRing()
	switch {
	case corrupt:
		return rdma.TakeOther
	case !ok:
		return rdma.TakeNone
	case typ != recPacket || word1 != uint32(to):
		return rdma.TakeOther
	}
	ctx, src, tag, sender, _, ok := packet.PeekEager(rec[:headSize])
	if !ok || !tk.TakeEager(rdma.EagerHeader{From: rdma.Addr(sender), Context: ctx, Source: src, Tag: tag}, rec[headSize:headSize+n]) {
		return rdma.TakeOther
	}
	ir.head += uint64(len(rec))
	ir.publishHead()
	return rdma.Took
}
