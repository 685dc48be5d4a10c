package rdmatest

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fibermpi/fibermpi/rdma"
)

// Test stand-ins for what a job's bootstrap gives a transport between
// processes, for tests whose "processes" are transports of one test
// process.

// FenceTimeout bounds every Fence of the exchanges MemExchange returns.
const FenceTimeout = 30 * time.Second

// ErrFenceTimeout is returned by a Fence that waited FenceTimeout for a
// rank that never arrived.
var ErrFenceTimeout = errors.New("rdmatest: exchange: fence timed out (a rank did not arrive)")

// memJob is the shared state of an in-memory exchange.
type memJob struct {
	id      string
	n       int
	mu      sync.Mutex
	cond    *sync.Cond
	records map[string][]byte // rank/key
	arrived int               // at the current fence
	gen     int               // fences completed
}

var jobCounter atomic.Int64

// MemExchange returns the exchanges of the n ranks of a fresh in-memory
// job, rank r's at index r, with a job id of their own: records put by one
// rank are seen by every other after a Fence, which waits (at most
// FenceTimeout) until all n have called it.
func MemExchange(n int) []rdma.Exchange {
	j := &memJob{id: fmt.Sprintf("rdmatest%d-%d", os.Getpid(), jobCounter.Add(1)), n: n, records: make(map[string][]byte)}
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
		return nil, fmt.Errorf("rdmatest: exchange: rank %d put no %q", rank, key)
	}
	return v, nil
}

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
	timer := time.AfterFunc(FenceTimeout, func() {
		j.mu.Lock()
		j.cond.Broadcast()
		j.mu.Unlock()
	})
	defer timer.Stop()
	deadline := time.Now().Add(FenceTimeout)
	for j.gen == gen {
		if time.Now().After(deadline) {
			return ErrFenceTimeout
		}
		j.cond.Wait()
	}
	return nil
}

// LayoutFor returns a layout of procs processes with at least endpoints
// addresses, address a owned by process a % procs.
func LayoutFor(procs, endpoints int) *rdma.Layout {
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
