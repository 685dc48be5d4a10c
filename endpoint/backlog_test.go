package endpoint

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"testing"

	"github.com/fibermpi/fibermpi/rdma/inproc"
)

// TestFlood: both ranks send a window of 10^4 messages to each other before
// receiving any, over a transport whose queue holds 4 packets: sends are
// refused with ErrAgain most of the time, the backlog keeps them in order,
// and progress (workers' idle hook, a server, or the waiting callers)
// drains it. Every message must arrive once, in order, with its checksum.
func TestFlood(t *testing.T) {
	const n = 10_000
	for _, mode := range []ProgressMode{ProgressIdle, ProgressServer, ProgressCaller} {
		t.Run(mode.String(), func(t *testing.T) {
			tr := &queued{Transport: inproc.New(), limit: 4}
			opts := Options{Workers: 2, Progress: mode, Transport: tr}
			err := RunWith(ThreadSingle, opts, 2, func(ep *Endpoint) error {
				w := ep.World()
				me, peer := ep.Rank(), 1-ep.Rank()
				msg := func(from, i int) []byte {
					b := make([]byte, 8+4*(i%5))
					binary.LittleEndian.PutUint32(b, uint32(from))
					binary.LittleEndian.PutUint32(b[4:], uint32(i))
					return binary.LittleEndian.AppendUint32(b[:len(b)-4], crc32.ChecksumIEEE(b[:len(b)-4]))
				}
				sends := make([]*Request, 0, n)
				for i := range n {
					r, err := ep.Isend(w, me, peer, 1, msg(me, i))
					if err != nil {
						return err
					}
					sends = append(sends, r)
				}
				buf := make([]byte, 64)
				for i := range n {
					st, err := ep.Recv(w, peer, 1, buf)
					if err != nil {
						return err
					}
					want := msg(peer, i)
					got := buf[:st.Count]
					if string(got) != string(want) {
						return fmt.Errorf("rank %d, message %d from %d: got %x, want %x", me, i, peer, got, want)
					}
				}
				return WaitAll(ep.Waiter(), sends...)
			})
			if err != nil {
				t.Fatal(err)
			}
			tr.mu.Lock()
			refused := tr.refused
			tr.mu.Unlock()
			if refused == 0 {
				t.Fatal("the transport never refused a send: the backlog was not exercised")
			}
			t.Logf("%d sends refused with ErrAgain", refused)
		})
	}
}
