package shm_test

import (
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/fibermpi/fibermpi/packet"
	"github.com/fibermpi/fibermpi/rdma"
	"github.com/fibermpi/fibermpi/rdma/shm"
)

func TestMain(m *testing.M) {
	if child := os.Getenv(childEnv); child != "" {
		os.Exit(runChild(child))
	}
	goleak.VerifyTestMain(m)
}

// layoutFor returns a layout of procs processes with at least endpoints
// addresses, address a owned by process a % procs.
func layoutFor(procs, endpoints int) *rdma.Layout {
	l := rdma.NewLayout(procs)
	ones := make([]int, procs)
	for i := range ones {
		ones[i] = 1
	}
	for l.Len() < endpoints {
		if _, err := l.Append(ones); err != nil {
			panic(err)
		}
	}
	return l
}

// job is n transports of one test process, each standing for a process
// of one node.
type job struct {
	trs  []*shm.Transport
	id   string
	stop chan struct{}
	wg   sync.WaitGroup
}

// newJob makes n transports at once (New is collective), with
// configurations from cfg (Exchange, Layout and Peers are filled in), and
// registers their clean-up: Close, and a check that nothing is left in
// /dev/shm.
func newJob(t testing.TB, n, endpoints int, cfg func(rank int) shm.Config) *job {
	t.Helper()
	ex := newMemJob(n)
	j := &job{trs: make([]*shm.Transport, n), id: ex[0].JobID(), stop: make(chan struct{})}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		c := cfg(r)
		c.Exchange = ex[r]
		c.Layout = layoutFor(n, endpoints)
		for p := range n {
			if p != r {
				c.Peers = append(c.Peers, p)
			}
		}
		wg.Go(func() { j.trs[r], errs[r] = shm.New(c) })
	}
	wg.Wait()
	t.Cleanup(func() {
		close(j.stop)
		j.wg.Wait()
		for _, tr := range j.trs {
			if tr != nil {
				_ = tr.Close() // the test may have closed it
			}
		}
		left, _ := filepath.Glob(filepath.Join(shm.DefaultDir, "fibermpi-"+j.id+"-*"))
		for _, f := range left {
			t.Errorf("segment file %s left behind", f)
			_ = os.Remove(f)
		}
	})
	for r, err := range errs {
		if err != nil {
			t.Fatalf("New at rank %d: %v", r, err)
		}
	}
	return j
}

// progressInBackground gives every transport a goroutine that drives its
// progress and sleeps when idle, as a process's progress engine does,
// until the job's clean-up.
func (j *job) progressInBackground() {
	for _, tr := range j.trs {
		j.wg.Go(func() {
			for {
				select {
				case <-j.stop:
					return
				default:
				}
				if tr.Progress(packet.NoWorker) == 0 {
					tr.Sleep(time.Millisecond)
					runtime.Gosched()
				}
			}
		})
	}
}
