//go:build mpi

package mpi_test

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/fibermpi/fibermpi/rdma"
	"github.com/fibermpi/fibermpi/rdma/mpi"
)

// TestMain finalizes MPI after the tests (the MPI launcher counts a process
// that exits without MPI_Finalize as failed), then looks for leaked
// goroutines: the MPI main thread ends with Finalize.
func TestMain(m *testing.M) {
	code := m.Run()
	if err := mpi.Finalize(); err != nil {
		fmt.Fprintln(os.Stderr, "MPI_Finalize:", err)
		code = 1
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
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

// newJob makes n transports in this process at once (New is collective),
// each reaching all others, standing for n processes, and closes them at
// the test's end.
func newJob(t testing.TB, n, endpoints int, cfg func(rank int) mpi.Config) []*mpi.Transport {
	t.Helper()
	ex := newMemJob(n)
	trs := make([]*mpi.Transport, n)
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
		wg.Go(func() { trs[r], errs[r] = mpi.New(c) })
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, tr := range trs {
			if tr != nil {
				_ = tr.Close()
			}
		}
	})
	for r, err := range errs {
		if err != nil {
			t.Fatalf("New at rank %d: %v", r, err)
		}
	}
	return trs
}

// memJob is an in-memory rdma.Exchange for transports of one test
// process standing for the processes of a job.
type memJob struct {
	id      string
	n       int
	mu      sync.Mutex
	cond    *sync.Cond
	records map[string][]byte
	arrived int
	gen     int
}

var jobCounter atomic.Int64

func newMemJob(n int) []rdma.Exchange {
	j := &memJob{id: fmt.Sprintf("mpitest%d-%d", os.Getpid(), jobCounter.Add(1)), n: n, records: make(map[string][]byte)}
	j.cond = sync.NewCond(&j.mu)
	ex := make([]rdma.Exchange, n)
	for r := range ex {
		ex[r] = &memExchange{j: j, rank: r}
	}
	return ex
}

type memExchange struct {
	j    *memJob
	rank int
}

func (e *memExchange) Rank() int     { return e.rank }
func (e *memExchange) Size() int     { return e.j.n }
func (e *memExchange) JobID() string { return e.j.id }

func (e *memExchange) Put(key string, value []byte) error {
	e.j.mu.Lock()
	defer e.j.mu.Unlock()
	e.j.records[strconv.Itoa(e.rank)+"/"+key] = append([]byte(nil), value...)
	return nil
}

func (e *memExchange) Get(rank int, key string) ([]byte, error) {
	e.j.mu.Lock()
	defer e.j.mu.Unlock()
	v, ok := e.j.records[strconv.Itoa(rank)+"/"+key]
	if !ok {
		return nil, fmt.Errorf("exchange: rank %d put no %q", rank, key)
	}
	return v, nil
}

// Fence waits for every rank, at most 30 s.
func (e *memExchange) Fence() error {
	j := e.j
	j.mu.Lock()
	defer j.mu.Unlock()
	gen := j.gen
	j.arrived++
	if j.arrived == j.n {
		j.arrived = 0
		j.gen++
		j.cond.Broadcast()
		return nil
	}
	deadline := time.Now().Add(30 * time.Second)
	stop := time.AfterFunc(30*time.Second, func() {
		j.mu.Lock()
		j.cond.Broadcast()
		j.mu.Unlock()
	})
	defer stop.Stop()
	for j.gen == gen {
		if time.Now().After(deadline) {
			return fmt.Errorf("exchange: fence timed out")
		}
		j.cond.Wait()
	}
	return nil
}
