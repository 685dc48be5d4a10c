//go:build linux

package shm_test

import (
	"testing"

	"github.com/fibermpi/fibermpi/packet"
	"github.com/fibermpi/fibermpi/rdma"
)

// taker takes eager messages of tag want (all tags when want is -1), and
// keeps the last one's header and bytes.
type taker struct {
	want int32
	h    rdma.EagerHeader
	data []byte
}

func (k *taker) TakeEager(h rdma.EagerHeader, data []byte) bool {
	if k.want >= 0 && h.Tag != k.want {
		return false
	}
	k.h, k.data = h, append(k.data[:0], data...)
	return true
}

// TakeEager offers the head of the ring from the sender's process, and
// only it: an empty ring is TakeNone; an eager message for another address,
// a packet that is no eager message and an eager message the taker refuses
// are TakeOther and stay, in order, for Progress; an eager message taken is
// consumed, and Progress no longer delivers it.
func TestTakeEager(t *testing.T) {
	j, pool, cs := pair(t, 64<<10, false)
	tr := j.trs[1]
	from, to := rdma.Addr(0), rdma.Addr(1)
	k := &taker{want: -1}
	if got := tr.TakeEager(packet.NoWorker, from, to, k); got != rdma.TakeNone {
		t.Fatalf("empty ring: %v, want TakeNone", got)
	}
	send := func(tag int32, data string) {
		t.Helper()
		if !j.trs[0].SendEager(packet.NoWorker, to, rdma.EagerHeader{From: from, Context: 3, Source: 0, Tag: tag}, []byte(data)) {
			t.Fatal("SendEager refused")
		}
	}
	send(5, "first")
	if got := tr.TakeEager(packet.NoWorker, from, to, k); got != rdma.Took {
		t.Fatalf("an eager message for to: %v, want Took", got)
	}
	if k.h != (rdma.EagerHeader{From: from, Context: 3, Source: 0, Tag: 5}) || string(k.data) != "first" {
		t.Fatalf("took %+v %q", k.h, k.data)
	}
	if got := tr.TakeEager(packet.NoWorker, from, to, k); got != rdma.TakeNone {
		t.Fatalf("after the take: %v, want TakeNone (consumed)", got)
	}

	// Refused, then for another address, then a packet: each stays first.
	send(6, "refused")
	k.want = 5
	if got := tr.TakeEager(packet.NoWorker, from, to, k); got != rdma.TakeOther {
		t.Fatalf("a refused message: %v, want TakeOther", got)
	}
	if got := tr.TakeEager(packet.NoWorker, from, 0, k); got != rdma.TakeOther {
		t.Fatalf("a message for another address: %v, want TakeOther", got)
	}
	if n := tr.Progress(packet.NoWorker); n != 1 || cs[1].count() != 1 || string(cs[1].last) != "refused" {
		t.Fatalf("Progress after a refusal: %d records, %d arrivals, last %q; want the refused message", n, cs[1].count(), cs[1].last)
	}
	pk := pool.Get(packet.NoWorker)
	pk.Kind = packet.KindRTS
	if err := j.trs[0].Send(packet.NoWorker, to, pk); err != nil {
		t.Fatal(err)
	}
	send(5, "behind")
	k.want = -1
	if got := tr.TakeEager(packet.NoWorker, from, to, k); got != rdma.TakeOther {
		t.Fatalf("a packet that is no eager message first: %v, want TakeOther", got)
	}
	if n := tr.Progress(packet.NoWorker); n != 2 || cs[1].count() != 3 || string(cs[1].last) != "behind" {
		t.Fatalf("Progress: %d records, %d arrivals, last %q; want the packet and the message behind it", n, cs[1].count(), cs[1].last)
	}
	// An address of a process without a ring here.
	if got := tr.TakeEager(packet.NoWorker, 99, to, k); got != rdma.TakeOther {
		t.Fatalf("an address of no process: %v, want TakeOther", got)
	}
	if s := pool.Stats(); s.InUse != 0 {
		t.Fatalf("%d packets not back in the pool", s.InUse)
	}
}
