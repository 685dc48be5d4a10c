// Package match is fibermpi's matching table: where an arriving message
// and the receive that wants it find each other, whichever comes first.
//
// # Model
//
// A message arrives with an exact [Key] (context id, source, tag). A receive
// is posted with a Key that may hold the wildcards [AnySource] and [AnyTag].
// The table holds, per exact key, a FIFO of either unexpected messages or
// posted receives (never both: they would have matched), plus a list of
// posted wildcard receives:
//
//   - [Table.Arrive]: if a posted receive matches, the earliest posted one
//     is removed and returned; otherwise the message is queued.
//   - [Table.Post]: if an unexpected message matches, the earliest arrived
//     one (per source) is removed and returned; otherwise the receive is
//     queued.
//   - [Table.Probe] looks without removing; [Table.Cancel] withdraws a
//     posted receive.
//   - [Table.Insert] and [Table.Empty] are Dang et al.'s primitive, for tables
//     that promise no wildcards.
//
// The table stores the caller's pointers (*M for messages, *R for receives)
// and never allocates on the steady-state path.
//
// # Design (Dang et al. 2016b §2.2, §3.2)
//
// The table is Dang et al.'s concurrent hash table: a fixed array of 64-byte
// buckets, each one cache line holding a control entry (a spinlock, per-slot
// bits, an overflow pointer) and three 16-byte entries (key, head item).
// Keys that collide beyond three spill into overflow buckets chained from
// the first, guarded by its lock. The array has Config.Expected buckets
// rounded up to a power of two, so a chain is almost always one bucket:
// an operation is a hash, one cache line, a lock, a store and an unlock,
// independent of how many operations are pending. Next to each bucket, on
// the following cache line, sits a sidecar with what Dang et al.'s entry has
// no room for: the head's sequence number and the tail of the items queued
// behind the head. Those items are nodes from a table-owned free list.
//
// # Ordering (further than Dang et al.)
//
// MPI's non-overtaking rule is kept by the FIFO per key: two messages with
// the same key are matched in arrival order, two receives with the same key
// in posting order. Wildcards need two more orders:
//
//   - Which receive a message matches when an exact and a wildcard receive
//     both match: the earlier posted. Each wildcard Post increments an epoch
//     and takes its value as sequence number; an exact receive records the
//     epoch when posted. The exact receive is earlier iff its number is
//     smaller.
//   - Which message an AnyTag receive gets: the earliest from that source,
//     across tags. Arrivals are stamped from a counter chosen by hashing
//     (context, source), 64 counters on their own cache lines, so
//     goroutines handling different sources do not share one.
//
// While no wildcard receive is posted, Arrive pays one atomic load for
// wildcard matching (the count of posted wildcard receives, read under the
// bucket lock) and Post pays one load (the epoch). An arrival that has to
// queue its message also takes an arrival stamp (one uncontended atomic
// add, for AnyTag order); NoAnyTag or AllowOvertaking drop it. A wildcard
// Post raises the count before it scans the table, so an arrival either
// sees the count and takes the slow path, or the scan sees the arrival's
// message. The scan visits only chains listed in a bitmap as possibly
// holding messages (an arrival lists its chain once, under its lock, before
// reading the count; a scan that finds no message unlists it), so its cost
// is the table's size / 64 words plus the chains with messages. The
// wildcard paths serialise on one mutex: wildcards cost about what MPI
// queues cost, and only programs using them pay it.
//
// # Hints
//
// [Config] carries the spirit of MPI 4.0's assertions. NoAnySource and
// NoAnyTag together remove every wildcard cost (no count load, no epoch, no
// stamp) and allow Insert/Empty. AllowOvertaking drops the arrival stamp.
//
// # Blocking and fibers
//
// Exact-key operations never park and never yield: they hold a bucket's
// spinlock for a few dozen instructions. The wildcard paths (any Arrive
// while a wildcard receive is posted, a wildcard Post or Cancel) take a
// mutex and may wait for a wildcard Post's scan of the whole table; called
// from a fiber, that wait holds the fiber's worker.
//
// # Limits
//
// Context ids have 16 bits, sources and tags 24 (see [MaxContext],
// [MaxSource], [MaxTag]); [NewKey] rejects larger values. The table does
// not grow: beyond Config.Expected pending keys it keeps working through
// longer overflow chains, which are kept (not freed) for reuse.
//
// # Rejected designs
//
// Linear posted/unexpected queues under one lock (MPICH, Open MPI) are
// linear in pending operations and serialise threads; BenchmarkMatch
// measures them as "queue". A single slot per key, as in Dang et al., loses
// messages when the same key is pending twice. A global arrival counter
// would order AnySource choices too, but every arrival on every core would
// write the same cache line; MPI only requires order per source.
package match
