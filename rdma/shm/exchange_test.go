//go:build linux

package shm_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"
)

// A test-only rdma.Exchange between real processes, standing in for the
// job's bootstrap (rdmatest.MemExchange serves transports of one test
// process).

// jobCounter numbers the jobs of this test process (their ids).
var jobCounter atomic.Int64

// exchangeTimeout bounds every Fence of the test exchanges.
const exchangeTimeout = 30 * time.Second

var errFenceTimeout = errors.New("exchange: fence timed out (a process did not arrive)")

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
