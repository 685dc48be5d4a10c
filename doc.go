// Package fibermpi is message passing for threads in Go: SPMD programs in
// which millions of fibers, goroutines and processes communicate as MPI
// ranks do, with typed communicators and request futures.
//
// This package holds no code; it is the tour of the model. The packages that
// do the work are listed below, lowest first.
//
// # Vocabulary
//
//   - process: one OS process; it owns one or more endpoints.
//   - worker: a goroutine locked to its OS thread (optionally pinned to a
//     core) that runs fibers.
//   - fiber: a user-level thread run by exactly one worker, cooperatively
//     scheduled; it blocks in Recv for the price of a coroutine switch.
//   - goroutine: Go's own thread; a blocking call from a plain goroutine
//     parks it the Go way.
//   - endpoint: the resources that let communication proceed independently
//     (matching table, share of the packet pool, transport port, progress
//     state). An endpoint is a rank in every communicator it belongs to
//     (Snir's proposal, seed 004; Intel's library endpoints, seed 003).
//   - communicator: a group of endpoints plus a context id; comm.Comm[T] is
//     its typed view.
//   - packet: a fixed-size buffer that carries an eager message or a
//     control message.
//
// # Packages
//
//	fiber     workers, fibers, the two-level bit-vector scheduler, Event and
//	          Waiter (seed 001 §3.1)
//	packet    packets and the per-worker packet pool with stealing (seed 001
//	          §3.3)
//	match     the concurrent matching table: 64-byte buckets, FIFO per key,
//	          wildcards (seed 001 §3.2, and further)
//	datatype  derived datatypes and packing (vector, indexed, subarray, ...)
//	rdma      the transport interface and its backends: rdma/inproc (one
//	          process, the embedded default), rdma/shm (processes of one
//	          node), rdma/route (one transport per process that picks a
//	          backend per destination); TCP between nodes is not built yet
//	endpoint  processes, thread levels, endpoints, eager and rendezvous
//	comm      Comm[T], Request[T], collectives, communicator creation
//
// Arrows point down only: fiber, match, packet and datatype import no other
// fibermpi package (but internal/invariants); rdma imports packet, and its
// backends only rdma and packet; endpoint is the one package that knows
// them all, and comm builds on endpoint.
// internal/invariants holds consistency checks compiled in only with the
// build tag "invariants".
//
// # The path of one message
//
// Send, eager (up to the eager limit): Comm[T].Send views []T as bytes
// without copying; the endpoint translates (communicator, rank) to a
// transport address, takes a packet from its worker's pool, writes the header
// (context id, source, tag, sequence, length) and the payload, and posts it;
// the send buffer is reusable when Send returns. (In one process, when the
// receive is already posted, the sender copies straight into the receive
// buffer instead and no packet is used.)
//
// Arrival: the progress engine (a worker's idle hook, a dedicated server, or
// the caller) polls the transport, builds the key (context id, source, tag)
// and inserts the packet into the matching table. If a receive was posted,
// the payload is copied into its buffer, its waiter is signalled (one atomic
// OR for a fiber) and the packet returns to the pool; otherwise the packet
// waits in the table for its receive.
//
// Recv: builds the request (buffer, waiter), inserts it; if a packet was
// there it copies and frees it, otherwise it waits: a fiber yields to its
// worker, a goroutine parks.
//
// Rendezvous (above the eager limit, seed 001 §2.2.2): the receiver sends a
// ready-to-receive with its registered buffer, the sender puts the data
// straight into it (one copy, no packet) and a completion wakes the
// receiver. A receive with a wildcard, or posted after its message, first
// needs the sender's request-to-send. In one process a send of any size
// whose receive is posted copies straight into it, with no control
// messages at all.
//
// # Rejected designs
//
// Assembly stack switching for fibers: about 10 ns a switch, and broken by
// the garbage collector, stack growth, system calls, panics and the race
// detector; Go moves and scans goroutine stacks, so only the runtime may
// switch them. Fibers are runtime coroutines (iter.Pull) instead, at about
// 30 ns a switch (see package fiber). Goroutines and channels as fibers: a
// scheduler round trip per handoff, and tens of microseconds whenever a
// locked worker thread must be unparked. Linear posted and unexpected
// queues for matching: cost grows with every pending operation and one lock
// serializes all threads.
package fibermpi
