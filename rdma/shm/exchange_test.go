//go:build linux

package shm_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fibermpi/fibermpi/rdma"
)

// Test-only implementations of rdma.Exchange, standing in for the job's
// bootstrap: memJob for "processes" that are transports of one test
// process, fileExchange for real processes (files in a directory they
// share).

// exchangeTimeout bounds every Fence of the test exchanges.
const exchangeTimeout = 30 * time.Second

var errFenceTimeout = errors.New("exchange: fence timed out (a process did not arrive)")

// memJob is the shared state of an in-memory exchange.
type memJob struct {
	id string
	n  int

	mu      sync.Mutex
	cond    *sync.Cond
	records map[string][]byte // rank/key
	arrived int               // at the current fence
	gen     int               // fences completed
}

var jobCounter atomic.Int64

// newMemJob returns the exchanges of n ranks of a fresh job.
func newMemJob(n int) []rdma.Exchange {
	j := &memJob{id: fmt.Sprintf("test%d-%d", os.Getpid(), jobCounter.Add(1)), n: n, records: make(map[string][]byte)}
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

// Fence waits for every rank, at most exchangeTimeout.
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
	timer := time.AfterFunc(exchangeTimeout, func() {
		j.mu.Lock()
		j.cond.Broadcast()
		j.mu.Unlock()
	})
	defer timer.Stop()
	deadline := time.Now().Add(exchangeTimeout)
	for j.gen == gen {
		if time.Now().After(deadline) {
			return errFenceTimeout
		}
		j.cond.Wait()
	}
	return nil
}

// fileExchange is an exchange between real processes through files in a
// directory: a record is a file "<rank>.<key>" written atomically
// (rename), a fence a file per rank and fence number that each process
// writes and then waits for from every other.
type fileExchange struct {
	dir    string
	job    string
	rank   int
	size   int
	fences int
}

func (e *fileExchange) Rank() int     { return e.rank }
func (e *fileExchange) Size() int     { return e.size }
func (e *fileExchange) JobID() string { return e.job }

func (e *fileExchange) path(rank int, key string) string {
	return filepath.Join(e.dir, fmt.Sprintf("%d.%x", rank, key))
}

func (e *fileExchange) Put(key string, value []byte) error {
	tmp := e.path(e.rank, key) + ".tmp"
	if err := os.WriteFile(tmp, value, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, e.path(e.rank, key))
}

func (e *fileExchange) Get(rank int, key string) ([]byte, error) {
	return os.ReadFile(e.path(rank, key))
}

func (e *fileExchange) Fence() error {
	e.fences++
	name := func(r int) string { return filepath.Join(e.dir, fmt.Sprintf("fence%d.%d", e.fences, r)) }
	if err := os.WriteFile(name(e.rank), nil, 0o600); err != nil {
		return err
	}
	deadline := time.Now().Add(exchangeTimeout)
	for r := range e.size {
		for {
			if _, err := os.Stat(name(r)); err == nil {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%w: rank %d, fence %d", errFenceTimeout, r, e.fences)
			}
			time.Sleep(200 * time.Microsecond)
		}
	}
	return nil
}
