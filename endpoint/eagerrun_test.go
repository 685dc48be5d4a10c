//go:build linux

package endpoint_test

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/fibermpi/fibermpi/endpoint"
	"github.com/fibermpi/fibermpi/internal/invariants"
	"github.com/fibermpi/fibermpi/internal/jobtest"
	"github.com/fibermpi/fibermpi/internal/testenv"
)

// Eager messages that reach another process in a row with one envelope are
// matched as a run (rdma.EagerRunReceiver, from rdma/shm's ring): each
// still goes to the receive MPI's order gives it, a short buffer still
// truncates its message alone, and a wildcard receive posted among the
// exact ones still takes the message that comes at its turn.
func TestEagerRunsBetweenProcesses(t *testing.T) {
	from, to, done := jobtest.ShmPair(t)
	defer done()
	wf, wt := from.World(), to.World()
	const n = 90 // more than a run takes at once
	for _, tc := range []struct {
		name  string
		wild  int // the receive posted as a wildcard (AnyTag), or -1
		short int // the receive with a 4-byte buffer, or -1
	}{
		{"exact", -1, -1},
		{"truncated", -1, 37},
		{"wildcard", 50, -1},
	} {
		// Not subtests: the handles belong to this goroutine.
		reqs := make([]endpoint.Request, n)
		bufs := make([][]byte, n)
		for i := range n {
			bufs[i] = make([]byte, 8)
			if i == tc.short {
				bufs[i] = bufs[i][:4]
			}
			tag := 5
			if i == tc.wild {
				tag = endpoint.AnyTag
			}
			if err := to.IrecvInto(&reqs[i], wt, 0, tag, bufs[i]); err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
		}
		msg := make([]byte, 8)
		for i := range n {
			binary.LittleEndian.PutUint64(msg, uint64(1000+i))
			if err := from.Send(wf, 0, 1, 5, msg); err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
		}
		for i := range n {
			err := to.Wait(&reqs[i])
			st := reqs[i].Status()
			if i == tc.short {
				var te *endpoint.TruncateError
				if !errors.As(err, &te) || te.Got != 8 || st.Count != 4 || binary.LittleEndian.Uint32(bufs[i]) != uint32(1000+i) {
					t.Errorf("%s: receive %d (4 bytes): %v, count %d, bytes %x; want a truncation of message %d", tc.name, i, err, st.Count, bufs[i], 1000+i)
				}
				continue
			}
			if err != nil || st.Count != 8 || st.Tag != 5 || st.Source != 0 {
				t.Errorf("%s: receive %d: %v, status %+v", tc.name, i, err, st)
			}
			if got := binary.LittleEndian.Uint64(bufs[i]); got != uint64(1000+i) {
				t.Errorf("%s: receive %d got message %d, want %d", tc.name, i, got, 1000+i)
			}
		}
	}
	// A window of receives matched by runs allocates nothing.
	if testenv.RaceEnabled || invariants.Enabled {
		t.Log("allocations not counted: the race detector and the invariants checks allocate")
		return
	}
	reqs := make([]endpoint.Request, n)
	buf, msg := make([]byte, 8), make([]byte, 8)
	window := func() {
		for i := range reqs {
			if err := to.IrecvInto(&reqs[i], wt, 0, 5, buf); err != nil {
				t.Fatal(err)
			}
		}
		for range reqs {
			if err := from.Send(wf, 0, 1, 5, msg); err != nil {
				t.Fatal(err)
			}
		}
		for i := range reqs {
			if err := to.Wait(&reqs[i]); err != nil {
				t.Fatal(err)
			}
		}
	}
	window()
	if allocs := testing.AllocsPerRun(20, window); allocs != 0 {
		t.Errorf("a window of %d messages matched by runs allocates %.1f times", n, allocs)
	}
}
