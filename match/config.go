package match

import (
	"errors"
	"fmt"
	"math/bits"
)

// Errors returned by this package. Test for them with errors.Is.
var (
	// ErrKeyRange is returned (as a *KeyError) by NewKey when the context
	// id, source or tag is out of range.
	ErrKeyRange = errors.New("match: key field out of range")
	// ErrWildcardKey is returned when an operation that needs an exact key
	// (Arrive, Insert) is given a key holding AnySource or AnyTag.
	ErrWildcardKey = errors.New("match: a message key cannot hold a wildcard")
	// ErrWildcardNotAllowed is returned when Post or Probe is given a
	// wildcard that the table's Config promised would not be used
	// (NoAnySource, NoAnyTag).
	ErrWildcardNotAllowed = errors.New("match: wildcard not allowed by the table's hints")
	// ErrNilValue is returned when a nil message or receive is given; nil
	// is how the table marks an empty entry.
	ErrNilValue = errors.New("match: nil message or receive")
	// ErrNeedsHints is returned by Insert on a table whose Config does not
	// set both NoAnySource and NoAnyTag: Dang et al.'s primitive neither sees
	// wildcard receives nor keeps their order.
	ErrNeedsHints = errors.New("match: Insert needs a table with NoAnySource and NoAnyTag")
	// ErrConfig is returned by Config.Validate and New for an invalid Config.
	ErrConfig = errors.New("match: invalid config")
)

// DefaultExpected is the Expected value used when Config.Expected is 0.
const DefaultExpected = 1024

// MaxExpected is the largest Config.Expected accepted (2^24 keys, a 2 GiB
// table).
const MaxExpected = 1 << 24

// Config configures a Table. The zero value is valid: a table for
// DefaultExpected pending keys with full MPI semantics (wildcards allowed,
// non-overtaking kept).
type Config struct {
	// Expected is the number of keys expected to be pending (unexpected
	// messages plus posted receives) at once, at Dang et al.'s "table size
	// controlled by the packet pool size". The table has the next power of
	// two at or above Expected buckets, each holding three keys, so
	// collisions spill into overflow buckets rarely. From 256 keys up the
	// buckets are cache-line aligned; a smaller Expected (down to 4) gives a
	// small table for programs with very many endpoints. More pending keys than
	// that still work, through longer overflow chains. 0 means
	// DefaultExpected.
	Expected int

	// NoAnySource promises that no receive on this table uses AnySource
	// (MPI 4.0 mpi_assert_no_any_source). Post and Probe then reject it with
	// ErrWildcardNotAllowed.
	NoAnySource bool
	// NoAnyTag promises that no receive uses AnyTag (mpi_assert_no_any_tag).
	// With NoAnySource too, Arrive does not even load the wildcard count and
	// nothing is stamped with a sequence number: Dang et al.'s path, plus a FIFO
	// per key. Insert and Empty need both.
	NoAnyTag bool
	// AllowOvertaking lets messages from one source with different tags be
	// received out of order by an AnyTag receive
	// (mpi_assert_allow_overtaking); arrivals are then not stamped with a
	// sequence number. Messages with the same key, and receives, keep FIFO
	// order, which costs nothing.
	AllowOvertaking bool
}

// Validate reports whether c is usable; the error matches ErrConfig.
func (c Config) Validate() error {
	if c.Expected < 0 || c.Expected > MaxExpected {
		return fmt.Errorf("%w: Expected %d not in [0, %d]", ErrConfig, c.Expected, MaxExpected)
	}
	return nil
}

// minBuckets is the smallest bucket array that the Go allocator places on
// a page boundary with no malloc header in front (32 KiB), so that every
// bucket starts a cache line (TestAlignment checks it). Tables asked for
// fewer than minBuckets keys get what they ask for (at least smallBuckets):
// an endpoint among thousands keeps a small table, and its buckets may then
// straddle cache lines, which costs some false sharing and nothing else.
const (
	minBuckets   = 256
	smallBuckets = 4
)

// buckets returns the number of buckets for c: a power of two, at least
// minBuckets unless Expected asks for fewer, and at least smallBuckets.
func (c Config) buckets() int {
	n := c.Expected
	if n == 0 {
		n = DefaultExpected
	}
	n = max(n, smallBuckets)
	return 1 << bits.Len(uint(n-1))
}

// String prints the effective configuration, including the table's size.
func (c Config) String() string {
	e := c.Expected
	if e == 0 {
		e = DefaultExpected
	}
	if c.Validate() != nil {
		return fmt.Sprintf("match.Config{Expected: %d (invalid)}", c.Expected)
	}
	n := c.buckets()
	return fmt.Sprintf("match.Config{Expected: %d, buckets: %d (%d KiB), NoAnySource: %t, NoAnyTag: %t, AllowOvertaking: %t}",
		e, n, n*pairSize/1024, c.NoAnySource, c.NoAnyTag, c.AllowOvertaking)
}
