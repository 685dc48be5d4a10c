//go:build mpi

package mpi

import (
	"cmp"
	"errors"
	"fmt"
	"log"
	"strings"

	"github.com/fibermpi/fibermpi/packet"
	"github.com/fibermpi/fibermpi/rdma"
)

// Defaults of Config.
const (
	// DefaultRing is the number of receives each transport keeps posted.
	DefaultRing = 64
	// DefaultMaxQueue is how many sends may be in flight (started, not
	// completed by MPI) before Send returns rdma.ErrAgain.
	DefaultMaxQueue = 1024
	// DefaultSpin is Config.Spin's default.
	DefaultSpin = 16
	// DefaultWhole is Config.Whole's default under MPICH: MPICH 4.0.2 over
	// UCX 1.13 here sends a message of up to 8192 bytes eagerly and a
	// longer one by UCX's rendezvous, 3.9 against 0.7 µs a message in a
	// window (an eager packet of 8192 bytes and its 64-byte head make
	// 8256; BENCHMARKS.md, issue 17, session 23).
	DefaultWhole = 8192
	// DefaultWholeOpenMPI is Config.Whole's default under Open MPI: Open
	// MPI 4.1.4's shared memory (btl vader, eager limit 4096 bytes with
	// its headers) sends a message of up to 4040 bytes eagerly, 0.97
	// against 3.0 µs one-way for 4048 (a C ping-pong here). Split there,
	// fmpi-osu latency over Open MPI went from 6.7 to 3.0 µs at 4 KiB and
	// from 10.0 to 3.8 µs at 8 KiB, bandwidth at 4 KiB from 1 057 to
	// 1 862 MB/s, at 8 KiB from 1 763 to 1 456 (BENCHMARKS.md, issue 17,
	// session 24). Under any other MPI the default is -1.
	DefaultWholeOpenMPI = 4032
	// DefaultMovedPieces is Config.MovedPieces's default under MPICH: a
	// moved message of up to 4 pieces of Whole bytes (32 KiB) goes as
	// pieces. Over MPICH here, against one message by UCX's rendezvous:
	// one-way 16 KiB 12.8 → 7.9 µs, 32 KiB 15.8 → 10.3 µs, bandwidth
	// 16 KiB 2 250 → 3 300 MB/s; at 64 KiB latency gained (19.7 → 16.9 µs)
	// but bandwidth lost (5 000 → 4 300 MB/s), so 64 KiB goes whole. Under
	// any other MPI the default is -1: over Open MPI, pieces of 4000 or
	// 8192 bytes made moved messages of 16–64 KiB slower, not faster
	// (BENCHMARKS.md, issue 17, session 24).
	DefaultMovedPieces = 4
	// MaxMovedPieces bounds Config.MovedPieces, and the pieces a receiver
	// posts for one moved message.
	MaxMovedPieces = 64
)

// Config describes a transport. Exchange and Layout are required; every
// other zero field takes its default.
type Config struct {
	// Exchange is the job's bootstrap: New publishes this transport's
	// place in MPI_COMM_WORLD (rank and lane) under "fibermpi/mpi" and
	// fences once. Every process of the job must be a process of the same
	// MPI_COMM_WORLD.
	Exchange rdma.Exchange
	// Layout maps every address of the job to its process; it may grow
	// while the transport runs.
	Layout *rdma.Layout
	// Peers are the processes this transport reaches; sends to others fail
	// with rdma.ErrNoPeer. Every process must list the processes that list
	// it.
	Peers []int
	// Pool is the process's packet pool, the pool of packets sent before
	// any Bind and of arrivals for an address not bound. It may be nil if
	// every sender binds first.
	Pool *packet.Pool
	// PayloadSize is the largest packet payload, the same at every
	// process (New checks); 0 means Pool's, or packet.DefaultPayloadSize.
	PayloadSize int
	// Ring is the number of receives kept posted; 0 means DefaultRing.
	Ring int
	// MaxQueue bounds the sends in flight; 0 means DefaultMaxQueue.
	MaxQueue int
	// Spin is how many more times a Progress that follows two empty ones
	// tests the receive ring, inside one cgo call, before it returns
	// empty: a waiting caller then sees a message within one MPI_Test of
	// its arrival instead of one round of the Go side, at the cost of
	// holding the MPI lock that much longer. 0 means DefaultSpin; -1
	// means none.
	Spin int
	// NoMove turns moved messages off: SendMoved then returns
	// rdma.ErrAgain, and the endpoint layer's rendezvous sends its RTR,
	// Put and Done through this transport as over any other (for
	// comparisons; BENCHMARKS.md, issue 17). By default MPI's own
	// rendezvous moves a large message's bytes after its RTS.
	NoMove bool
	// Whole is the longest MPI message a packet takes in one piece: a
	// packet whose head and payload are longer goes as several messages
	// of at most Whole bytes, back to back, and the receiver joins them
	// (one copy more). It keeps a full-size eager message under the MPI's
	// own eager limit. 0 means the MPI's default, which New resolves from
	// MPI_Get_library_version: DefaultWhole under MPICH,
	// DefaultWholeOpenMPI under Open MPI, else -1; -1 means no limit.
	// Otherwise it must be at least 128.
	Whole int
	// MovedPieces is the most pieces of Whole bytes in which a moved
	// message (rdma.Mover) goes: one of at most MovedPieces×Whole bytes
	// goes as MPI messages of Whole bytes, each under the MPI's eager
	// limit, where a longer one goes as one message, which the MPI moves
	// by its rendezvous once the receiver posts the receive. Like an eager
	// message, such a message that nobody receives yet waits in the
	// receiver's MPI, not at the sender, and its send completes once MPI
	// has buffered it. The RTS tells the receiver the sender's choice. 0
	// means the MPI's default, which New resolves like Whole's:
	// DefaultMovedPieces under MPICH, else -1. -1 means none; at most
	// MaxMovedPieces. It does nothing while Whole is -1.
	MovedPieces int
	// Logf logs what the transport drops (malformed messages) and lost
	// peers; nil means log.Printf.
	Logf func(format string, args ...any)
}

// ErrInvalidConfig is returned (wrapped) by New for a Config that cannot
// work.
var ErrInvalidConfig = errors.New("mpi: invalid config")

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidConfig, fmt.Sprintf(format, args...))
}

func (c Config) withDefaults() Config {
	if c.PayloadSize == 0 {
		if c.Pool != nil {
			c.PayloadSize = c.Pool.PayloadSize()
		} else {
			c.PayloadSize = packet.DefaultPayloadSize
		}
	}
	if c.Ring == 0 {
		c.Ring = DefaultRing
	}
	if c.MaxQueue == 0 {
		c.MaxQueue = DefaultMaxQueue
	}
	if c.Spin == 0 {
		c.Spin = DefaultSpin
	}
	if c.Logf == nil {
		c.Logf = log.Printf
	}
	return c
}

// Validate reports whether c (with defaults) can make a transport.
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
	if c.PayloadSize <= 0 || c.PayloadSize > packet.MaxPayloadSize {
		return invalid("PayloadSize %d", c.PayloadSize)
	}
	if c.Pool != nil && c.Pool.PayloadSize() < c.PayloadSize {
		return invalid("the Pool's payloads (%d bytes) are smaller than PayloadSize %d", c.Pool.PayloadSize(), c.PayloadSize)
	}
	if c.Ring < 1 || c.Ring > 1<<16 {
		return invalid("Ring %d (1 to 65536)", c.Ring)
	}
	if c.MaxQueue < 1 {
		return invalid("MaxQueue %d", c.MaxQueue)
	}
	if c.Spin < -1 || c.Spin > 1<<20 {
		return invalid("Spin %d (at most -1 to 1<<20)", c.Spin)
	}
	if c.Whole != 0 && c.Whole != -1 && c.Whole < 2*headSize {
		return invalid("Whole %d (0, -1, or at least %d)", c.Whole, 2*headSize)
	}
	if c.MovedPieces < -1 || c.MovedPieces > MaxMovedPieces {
		return invalid("MovedPieces %d (-1 to %d)", c.MovedPieces, MaxMovedPieces)
	}
	return nil
}

// libraryDefaults returns the defaults of Whole and MovedPieces under the
// MPI library named lib (MPI_Get_library_version's first line).
func libraryDefaults(lib string) (whole, pieces int) {
	switch {
	case strings.Contains(lib, "MPICH"):
		return DefaultWhole, DefaultMovedPieces
	case strings.Contains(lib, "Open MPI"):
		return DefaultWholeOpenMPI, -1
	}
	return -1, -1
}

// wholeFor resolves Whole 0 for the MPI library named lib.
func wholeFor(whole int, lib string) int {
	def, _ := libraryDefaults(lib)
	return cmp.Or(whole, def)
}

// movedPiecesFor resolves MovedPieces 0 for the MPI library named lib.
func movedPiecesFor(pieces int, lib string) int {
	_, def := libraryDefaults(lib)
	return cmp.Or(pieces, def)
}

// String prints the effective configuration (Whole and MovedPieces 0: the
// MPI's defaults, resolved by New).
func (c Config) String() string {
	c = c.withDefaults()
	return fmt.Sprintf("mpi.Config{Peers: %v, PayloadSize: %d, Ring: %d, MaxQueue: %d, Spin: %d, NoMove: %t, Whole: %d, MovedPieces: %d}", c.Peers, c.PayloadSize, c.Ring, c.MaxQueue, c.Spin, c.NoMove, c.Whole, c.MovedPieces)
}
