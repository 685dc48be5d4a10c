package rdma

import (
	"fmt"
	"sync"
	"sync/atomic"
)

// Layout records which process of the job owns each endpoint address. A job
// starts with one endpoint per process (process i owns address i, the Init
// world) and grows by collective endpoint creation: every process appends
// the same counts in the same order, so every process's Layout agrees. Owner
// is a load and an index, without a lock; Append copies (endpoints are
// created rarely, messages are sent often).
type Layout struct {
	mu     sync.Mutex // serialises Append
	owners atomic.Pointer[[]int32]
	procs  int
}

// NewLayout returns the layout of a job of procs processes, each owning one
// address: process i owns Addr(i).
func NewLayout(procs int) *Layout {
	if procs < 1 {
		panic(fmt.Sprintf("rdma: NewLayout(%d): a job has at least one process", procs))
	}
	l := &Layout{procs: procs}
	owners := make([]int32, procs)
	for i := range owners {
		owners[i] = int32(i)
	}
	l.owners.Store(&owners)
	return l
}

// Procs returns the number of processes of the job.
func (l *Layout) Procs() int { return l.procs }

// Len returns the number of addresses allocated so far.
func (l *Layout) Len() int { return len(*l.owners.Load()) }

// Owner returns the process that owns a, or -1 for an address not allocated.
func (l *Layout) Owner(a Addr) int {
	owners := *l.owners.Load()
	if int64(a) >= int64(len(owners)) {
		return -1
	}
	return int(owners[a])
}

// Append allocates counts[i] new addresses to process i, for every process
// in order, and returns the first new address: process i's addresses start
// at base plus the counts of the processes before it (Base). Every process
// must call it with the same counts.
func (l *Layout) Append(counts []int) (Addr, error) {
	if len(counts) != l.procs {
		return 0, fmt.Errorf("rdma: Layout.Append: %d counts for %d processes", len(counts), l.procs)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	old := *l.owners.Load()
	total := len(old)
	for _, c := range counts {
		if c < 0 {
			return 0, fmt.Errorf("rdma: Layout.Append: negative count %d", c)
		}
		total += c
	}
	if total > 1<<32 {
		return 0, fmt.Errorf("rdma: Layout.Append: %d addresses exceed the 32-bit address space", total)
	}
	grown := make([]int32, len(old), total)
	copy(grown, old)
	for p, c := range counts {
		for range c {
			grown = append(grown, int32(p))
		}
	}
	l.owners.Store(&grown)
	return Addr(len(old)), nil
}

// Base returns the first address process proc got from an Append of counts
// that returned base.
func Base(base Addr, counts []int, proc int) Addr {
	for _, c := range counts[:proc] {
		base += Addr(c)
	}
	return base
}

// Exchange is what a transport between processes needs from the job's
// bootstrap to set itself up: who this process is, and a put/fence/get
// exchange of small records (e.g. segment names, socket addresses). The
// bootstrap package's Bootstrap satisfies it.
type Exchange interface {
	Rank() int     // this process, 0..Size()-1
	Size() int     // processes in the job
	JobID() string // unique per job
	// Put publishes a record of this process under key.
	Put(key string, value []byte) error
	// Fence is collective: after it, every record put before any
	// process's Fence can be read with Get.
	Fence() error
	// Get reads the record process rank put under key.
	Get(rank int, key string) ([]byte, error)
}
