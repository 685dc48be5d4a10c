package bootstrap

import (
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/fibermpi/fibermpi/internal/bootwire"
)

// single is the embedded default: a job of one process.
type single struct {
	jobID  string
	stderr io.Writer

	mu      sync.Mutex
	records map[string][]byte
	closed  bool
}

// Single returns the bootstrap of a job of one process: rank 0 of size 1,
// records kept in memory, collectives that return at once. Its Failed
// channel never fires. Abort prints the reason to standard error and
// returns; the caller exits with the code.
func Single() Bootstrap {
	return &single{jobID: bootwire.NewJobID(), stderr: os.Stderr, records: make(map[string][]byte)}
}

func (s *single) Name() string  { return "single" }
func (s *single) Rank() int     { return 0 }
func (s *single) Size() int     { return 1 }
func (s *single) JobID() string { return s.jobID }
func (s *single) Host() string  { return hostIdentity() }

func (s *single) Put(key string, value []byte) error {
	if err := checkRecord(key, value); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	s.records[key] = append([]byte(nil), value...)
	return nil
}

func (s *single) Get(rank int, key string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	if rank != 0 {
		return nil, fmt.Errorf("%w: rank %d of a job of 1", ErrRank, rank)
	}
	v, ok := s.records[key]
	if !ok {
		return nil, fmt.Errorf("%w: rank 0 published no %q", ErrNotFound, key)
	}
	return append([]byte(nil), v...), nil
}

func (s *single) Fence() error   { return s.check() }
func (s *single) Barrier() error { return s.check() }

func (s *single) check() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	return nil
}

// failed is shared by every single bootstrap: nothing ever sends on it.
var failed = make(chan error)

func (s *single) Failed() <-chan error { return failed }

func (s *single) Abort(code int, reason string) error {
	if err := s.check(); err != nil {
		return err
	}
	fmt.Fprintf(s.stderr, "bootstrap: the job aborted with code %d: %s\n", code, reason)
	return nil
}

func (s *single) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	s.closed = true
	s.records = nil
	return nil
}
