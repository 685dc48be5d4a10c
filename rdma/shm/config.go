package shm

import (
	"errors"
	"fmt"
	"math/bits"
	"strings"

	"github.com/fibermpi/fibermpi/packet"
	"github.com/fibermpi/fibermpi/rdma"
)

// Defaults of Config.
const (
	// DefaultRingSize is the size in bytes of each inbound ring: 63
	// records of a default 8 KiB packet, or 8192 one-line records
	// (messages of up to 8 bytes).
	DefaultRingSize = 512 << 10
	// DefaultMaxAddrs bounds the addresses a transport can bind: the
	// bitmap of bound addresses that peers read has this many bits.
	DefaultMaxAddrs = 1 << 20
	// DefaultMaxRegions is how many registrations may be live at once.
	DefaultMaxRegions = 1 << 14
	// DefaultDir is where segments are created.
	DefaultDir = "/dev/shm"
)

// Limits of Config.
const (
	// MaxRingSize is the largest ring.
	MaxRingSize = 1 << 30
	// minRecords is how many records of the largest packet a ring must
	// hold at least.
	minRecords = 4
)

// recordSize returns the ring bytes of a record with n data bytes: a
// 56-byte head (the packet header) and the data, in whole cache lines
// (ring.go).
func recordSize(n int) int {
	return (packet.HeaderWireSize + n + packet.CacheLine - 1) &^ (packet.CacheLine - 1)
}

// Config describes a transport. Exchange and Layout are required; every
// other zero field takes its default.
type Config struct {
	// Exchange is the job's bootstrap: New puts this process's segment
	// name, pid and probe word, fences twice and reads the peers'.
	Exchange rdma.Exchange
	// Layout maps every address of the job to its process. The transport
	// reads it at every Send, Put and Get, so it may grow (collective
	// endpoint creation) while the transport runs.
	Layout *rdma.Layout
	// Peers are the processes on this node other than this one, the ones
	// this transport reaches. Sends to addresses of other processes (on
	// other nodes) fail with rdma.ErrNoPeer; sends to this process's own
	// addresses go through a ring of its own.
	Peers []int
	// Pool is the process's packet pool. Send returns a packet it
	// accepted to the pool it came from: this one, or one bound with
	// Bind. It may be nil if every sender binds first.
	Pool *packet.Pool
	// PayloadSize is the largest packet payload in bytes, the same at
	// every process (New checks): 0 means Pool's, or
	// packet.DefaultPayloadSize without a Pool. Pools bound later must
	// have payloads at least this large.
	PayloadSize int
	// RingSize is the size in bytes of the ring each peer (and this
	// process) sends into, a power of two holding at least four records
	// of the largest packet. 0 means DefaultRingSize.
	RingSize int
	// MaxAddrs bounds the addresses this transport can bind (Bind fails
	// for larger ones); 0 means DefaultMaxAddrs.
	MaxAddrs int
	// MaxRegions bounds the registrations live at once, a power of two;
	// 0 means DefaultMaxRegions.
	MaxRegions int
	// ForceCopy makes Put and Get copy through the rings even where the
	// kernel would allow cross-memory attach (for tests and comparisons).
	ForceCopy bool
	// RingPuts makes Put (and StartPut) copy through the rings even where
	// cross-memory attach works; Get still uses it. Two copies, the
	// sender's into the ring and the owner's out of it, run at once on
	// two CPUs, and beat one process_vm_writev, which pins the owner's
	// pages one by one: about 2× at 16 KiB–4 MiB between two processes on
	// the development machine, and ahead too with 3, 4 and 8 processes on
	// its 2 CPUs (BENCHMARKS.md, issue 12). A ring that stays full for
	// 50 µs (the owner is not running) makes the sender write the rest of
	// that Put by cross-memory attach. A Put ends once its last chunk is
	// in the ring: one longer than the ring's room waits for the owner's
	// progress to take the first chunks out (StartPut returns meanwhile;
	// Put waits). A Put of 64 KiB or more goes by cross-memory attach
	// instead while that measured faster towards its owner: the rings
	// lose to it when the host runs the two processes far apart (pace.go).
	// A started Put goes attached split in two: the owner's Progress
	// reads one half while the sender writes the other (split.go).
	RingPuts bool
	// SplitPuts, with RingPuts, splits every started Put of 64 KiB or more
	// towards a process that allows cross-memory attach (split.go), as if
	// that way always measured faster (for tests and comparisons; it
	// still falls back to one process_vm_writev where split.go does).
	SplitPuts bool
	// Dir is the directory of the segments, a tmpfs; "" means
	// DefaultDir. The launcher removes Dir/fibermpi-<jobid>-* at the end
	// of a job.
	Dir string
}

// ErrInvalidConfig is returned (wrapped) by New and Validate for a Config
// that cannot work.
var ErrInvalidConfig = errors.New("shm: invalid config")

// withDefaults fills the zero fields.
func (c Config) withDefaults() Config {
	if c.PayloadSize == 0 {
		if c.Pool != nil {
			c.PayloadSize = c.Pool.PayloadSize()
		} else {
			c.PayloadSize = packet.DefaultPayloadSize
		}
	}
	if c.RingSize == 0 {
		c.RingSize = DefaultRingSize
		for c.RingSize < minRecords*recordSize(c.PayloadSize) && c.RingSize < MaxRingSize {
			c.RingSize *= 2
		}
	}
	if c.MaxAddrs == 0 {
		c.MaxAddrs = DefaultMaxAddrs
	}
	if c.MaxRegions == 0 {
		c.MaxRegions = DefaultMaxRegions
	}
	if c.Dir == "" {
		c.Dir = DefaultDir
	}
	return c
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidConfig, fmt.Sprintf(format, args...))
}

// Validate reports whether c (with defaults filled in) can make a
// transport. The error matches ErrInvalidConfig.
func (c Config) Validate() error {
	c = c.withDefaults()
	if c.Exchange == nil {
		return invalid("no Exchange")
	}
	if c.Layout == nil {
		return invalid("no Layout")
	}
	size, rank := c.Exchange.Size(), c.Exchange.Rank()
	if c.Layout.Procs() != size {
		return invalid("the Layout has %d processes, the Exchange %d", c.Layout.Procs(), size)
	}
	if rank < 0 || rank >= size {
		return invalid("rank %d of %d", rank, size)
	}
	if err := checkJobID(c.Exchange.JobID()); err != nil {
		return err
	}
	seen := make(map[int]bool, len(c.Peers))
	for _, p := range c.Peers {
		switch {
		case p < 0 || p >= size:
			return invalid("peer %d outside the job's %d processes", p, size)
		case p == rank:
			return invalid("peer %d is this process", p)
		case seen[p]:
			return invalid("peer %d listed twice", p)
		}
		seen[p] = true
	}
	if c.PayloadSize <= 0 || c.PayloadSize%packet.CacheLine != 0 || c.PayloadSize > packet.MaxPayloadSize {
		return invalid("PayloadSize %d: want a positive multiple of %d up to %d", c.PayloadSize, packet.CacheLine, packet.MaxPayloadSize)
	}
	if c.Pool != nil && c.Pool.PayloadSize() < c.PayloadSize {
		return invalid("the Pool's payloads (%d bytes) are smaller than PayloadSize %d", c.Pool.PayloadSize(), c.PayloadSize)
	}
	minRing := minRecords * recordSize(c.PayloadSize)
	if c.RingSize < minRing || c.RingSize > MaxRingSize || bits.OnesCount(uint(c.RingSize)) != 1 {
		return invalid("RingSize %d: want a power of two in [%d, %d] (%d records of a %d-byte payload)",
			c.RingSize, minRing, MaxRingSize, minRecords, c.PayloadSize)
	}
	if c.MaxAddrs <= 0 || c.MaxAddrs > 1<<32 {
		return invalid("MaxAddrs %d: want 1 to 2^32", c.MaxAddrs)
	}
	if c.MaxRegions <= 0 || c.MaxRegions > 1<<20 || bits.OnesCount(uint(c.MaxRegions)) != 1 {
		return invalid("MaxRegions %d: want a power of two up to 2^20", c.MaxRegions)
	}
	return nil
}

// checkJobID refuses job ids that cannot be part of a file name.
func checkJobID(id string) error {
	if id == "" {
		return invalid("empty job id")
	}
	if len(id) > 128 {
		return invalid("job id of %d bytes (at most 128)", len(id))
	}
	for _, r := range id {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._-", r)
		if !ok {
			return invalid("job id %q: only letters, digits, '.', '_' and '-' may appear in a segment name", id)
		}
	}
	return nil
}

// String prints the effective configuration.
func (c Config) String() string {
	c = c.withDefaults()
	rank, size, job := -1, 0, ""
	if c.Exchange != nil {
		rank, size, job = c.Exchange.Rank(), c.Exchange.Size(), c.Exchange.JobID()
	}
	return fmt.Sprintf("shm.Config{job %q, rank %d of %d, peers %v, payload %d, ring %d, max addrs %d, max regions %d, force copy %v, ring puts %v, split puts %v, dir %s}",
		job, rank, size, c.Peers, c.PayloadSize, c.RingSize, c.MaxAddrs, c.MaxRegions, c.ForceCopy, c.RingPuts, c.SplitPuts, c.Dir)
}
