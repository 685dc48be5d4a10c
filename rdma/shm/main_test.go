//go:build linux

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
	"github.com/fibermpi/fibermpi/rdma/rdmatest"
	"github.com/fibermpi/fibermpi/rdma/shm"
)

func TestMain(m *testing.M) {
	if child := os.Getenv(childEnv); child != "" {
		os.Exit(runChild(child))
	}
	goleak.VerifyTestMain(m)
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
	ex := rdmatest.MemExchange(n)
	j := &job{trs: make([]*shm.Transport, n), id: ex[0].JobID(), stop: make(chan struct{})}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		c := cfg(r)
		c.Exchange = ex[r]
		c.Layout = rdmatest.LayoutFor(n, endpoints)
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

// engine is a transport with a goroutine that drives its progress and
// sleeps when idle, as a process's progress engine does. Close stops the
// goroutine before it closes the transport, as a process stops its engine
// before it closes (a Progress running on another goroutine may hold
// packets it has taken out of a ring until it has delivered them).
type engine struct {
	*shm.Transport
	stop chan struct{}
	done chan struct{}
	once sync.Once
}

func startEngine(tr *shm.Transport) *engine {
	e := &engine{Transport: tr, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(e.done)
		for {
			select {
			case <-e.stop:
				return
			default:
			}
			if tr.Progress(packet.NoWorker) == 0 {
				tr.Sleep(time.Millisecond)
				runtime.Gosched()
			}
		}
	}()
	return e
}

// Close stops the engine, then closes the transport.
func (e *engine) Close() error {
	e.once.Do(func() {
		close(e.stop)
		<-e.done
	})
	return e.Transport.Close()
}

// engines starts an engine for every transport of the job, stopped at the
// job's clean-up at the latest.
func (j *job) engines() []*engine {
	es := make([]*engine, len(j.trs))
	for i, tr := range j.trs {
		es[i] = startEngine(tr)
		j.wg.Go(func() {
			<-j.stop
			es[i].Close()
		})
	}
	return es
}
