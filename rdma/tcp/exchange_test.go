package tcp_test

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
	j := &memJob{id: fmt.Sprintf("tcptest%d-%d", os.Getpid(), jobCounter.Add(1)), n: n, records: make(map[string][]byte)}
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
	id   string // overrides the job id when set
}

func (e *memExchange) Rank() int { return e.rank }
func (e *memExchange) Size() int { return e.j.n }
func (e *memExchange) JobID() string {
	if e.id != "" {
		return e.id
	}
	return e.j.id
}

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

var errFenceTimeout = errors.New("exchange: fence timed out")

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
			return errFenceTimeout
		}
		j.cond.Wait()
	}
	return nil
}
