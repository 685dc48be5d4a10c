package jobtest

import (
	"errors"
	"fmt"
	"sync"

	"github.com/fibermpi/fibermpi/endpoint"
)

// MemJob is a bootstrap for several endpoint.Processes of one OS process:
// records in a map, fences and barriers as a cyclic barrier. It stands for
// a launcher in tests that simulate processes.
type MemJob struct {
	mu      sync.Mutex
	cond    *sync.Cond
	n       int
	records map[string][]byte // "rank/key"
	arrived int
	round   int
	fail    error
	boots   []*memBoot
}

// NewMemJob returns the bootstraps of a job of n processes.
func NewMemJob(n int) []endpoint.Bootstrap {
	j := &MemJob{n: n, records: make(map[string][]byte)}
	j.cond = sync.NewCond(&j.mu)
	bs := make([]endpoint.Bootstrap, n)
	for i := range bs {
		b := &memBoot{j: j, rank: i, failed: make(chan error, 1)}
		j.boots = append(j.boots, b)
		bs[i] = b
	}
	return bs
}

// Fail ends the job of bs for every process, as a launcher does when one
// dies: fences and barriers return err, and Failed delivers it.
func Fail(bs []endpoint.Bootstrap, err error) { bs[0].(*memBoot).j.end(err) }

func (j *MemJob) end(err error) {
	j.mu.Lock()
	if j.fail != nil {
		j.mu.Unlock()
		return
	}
	j.fail = err
	j.cond.Broadcast()
	j.mu.Unlock()
	for _, b := range j.boots {
		b.failed <- err
	}
}

var errMemAbort = errors.New("jobtest: job aborted")

type memBoot struct {
	j      *MemJob
	rank   int
	failed chan error
}

func (b *memBoot) Name() string         { return "memjob" }
func (b *memBoot) Rank() int            { return b.rank }
func (b *memBoot) Size() int            { return b.j.n }
func (b *memBoot) JobID() string        { return fmt.Sprintf("memjob-%p", b.j) }
func (b *memBoot) Host() string         { return "memhost" }
func (b *memBoot) Failed() <-chan error { return b.failed }
func (b *memBoot) Close() error         { return nil }

func (b *memBoot) Put(key string, value []byte) error {
	b.j.mu.Lock()
	defer b.j.mu.Unlock()
	b.j.records[fmt.Sprintf("%d/%s", b.rank, key)] = append([]byte(nil), value...)
	return nil
}

func (b *memBoot) Get(rank int, key string) ([]byte, error) {
	b.j.mu.Lock()
	defer b.j.mu.Unlock()
	v, ok := b.j.records[fmt.Sprintf("%d/%s", rank, key)]
	if !ok {
		return nil, fmt.Errorf("jobtest: no record %q of process %d", key, rank)
	}
	return v, nil
}

// Fence waits for every process (a cyclic barrier).
func (b *memBoot) Fence() error {
	j := b.j
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.fail != nil {
		return j.fail
	}
	round := j.round
	if j.arrived++; j.arrived == j.n {
		j.arrived = 0
		j.round++
		j.cond.Broadcast()
		return nil
	}
	for j.round == round && j.fail == nil {
		j.cond.Wait()
	}
	return j.fail
}

func (b *memBoot) Barrier() error { return b.Fence() }

func (b *memBoot) Abort(code int, reason string) error {
	b.j.end(fmt.Errorf("%w by process %d (code %d): %s", errMemAbort, b.rank, code, reason))
	return nil
}
