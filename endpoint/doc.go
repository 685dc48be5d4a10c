// Package endpoint is fibermpi's byte-level core: processes, thread levels,
// endpoints, and the eager and rendezvous protocols over an rdma.Transport.
// Most programs use its typed face, package comm, and touch this package
// only to start: Run, or Init and CreateEndpoints.
//
// # Model (seed 004 §2, seed 003)
//
// Init joins the job at a thread level. Without a launcher the job is this
// process alone, with one endpoint, rank 0 of its world (the embedded
// default). CreateEndpoints(k) makes k endpoints at this process, the ranks of
// a new world; each is a full rank, for point-to-point, wildcards and
// collectives alike. An endpoint's resources — its matching table, its
// address at the transport, its rendezvous state — let it communicate
// independently of the others, so k ThreadSingle endpoints serve k threads
// without a lock.
//
// A caller (a fiber or a goroutine) registers with an endpoint and gets a
// handle; the handle's blocking calls wait the caller's way: a fiber yields to
// its worker, a goroutine parks. The thread level says how many callers may be
// registered at once (ThreadSingle and ThreadFunneled: one; ThreadSerialized
// and ThreadMultiple: many) and whether they may call at the same time (only
// at ThreadMultiple). Builds with the tag "invariants" check that each handle
// is used by the goroutine that registered it, and that no two callers are
// inside a ThreadSingle or ThreadSerialized endpoint at once.
//
// Run does it all for the common case: Init, CreateEndpoints(k), a fiber per
// endpoint registered with it, and Finalize when all return.
//
// # Protocols (seed 001 §2.2)
//
// Eager, up to Options.EagerLimit bytes: the sender copies the data into a
// packet from its worker's share of the pool and posts it; Send completes at
// once. At the receiving endpoint the packet meets its receive in the
// matching table: if the receive was posted first, the data is copied
// straight into its buffer and the packet goes back to the pool; otherwise
// the packet waits in the table until the receive comes.
//
// In one process (a transport implementing rdma.Local, as the in-process
// default does), a send of any size whose receive is already posted skips
// the protocol: the sender takes the receive from the peer's table
// (match.Table.TryArrive) and copies the data straight into its buffer (one
// copy, no packet; a synchronous send is satisfied too).
//
// Rendezvous, above the limit (and always for Ssend), is receiver-driven
// (seed 001 §2.2.2). Over a transport between processes, an exact receive
// (no wildcard) with a buffer above the limit that is the first receive of
// its key registers the buffer and offers it to the sender at once:
// ready-to-receive (RTR) with the region. The sender keeps the offer and its
// next send under that key Puts the data straight into the buffer (one copy)
// and sends Done: no request-to-send. The sender checks an offer is fresh by
// counting the packets between the pair (see offer.go): an offer that
// crossed a message in flight is dropped, and that receive is matched as
// usual. Otherwise (a wildcard receive, a receive posted after its message,
// a second receive of the same key, a ThreadMultiple job) the sender posts a
// request-to-send (RTS) that is matched like a message; when it meets its
// receive, the receiver answers with an RTR, and the Put and Done follow. A
// send completes when its Put has. A message longer than the receive buffer
// is truncated to it, as MPI does: the receive's error is a *TruncateError
// and the message is consumed. Cancelling a receive whose buffer was offered
// asks the sender to withdraw the offer; the request then completes
// cancelled, or with the message if a send had already taken the offer.
//
// Every packet travels through rdma.Transport. The in-process transport
// delivers in the sender's own call, so no thread is needed; for transports
// that need polling, Options.Progress chooses who polls: the fiber workers
// when idle (the default), a dedicated communication server, or the waiting
// caller.
//
// # Blocking
//
// Send, Ssend, Recv, Probe, Endpoint.Wait, Request.WaitFor, WaitAll,
// WaitAny and WaitSome block: a fiber yields, a goroutine parks.
// Request.WaitContext and Request.Done are for goroutines (select blocks a
// fiber's worker). Isend, Irecv, Iprobe, Test and Cancel never block, except
// that a send (or the withdrawal Cancel sends for an offered receive)
// finding the packet pool exhausted waits for a packet (yielding or letting
// other goroutines run) rather than drop or allocate without bound.
//
// # Errors
//
// Bad input gets a sentinel that errors.Is recognises (ErrRank, ErrTag,
// ErrTruncate, ErrNotRegistered, ErrFinalized, ErrThreadLevel, ErrNilRequest,
// ErrRequestActive, ErrEndpoints, ErrOptions), checked before anything is
// sent, so nothing in flight is lost or delivered twice and the endpoint
// stays usable.
//
// # Tracing
//
// With Options.Trace or FIBERMPI_TRACE set, each endpoint records its calls,
// protocol steps and per-peer counts (package trace), Finalize writes them
// (one part per process in a job of several; cmd/fmpi-trace merges and draws
// them), blocking calls are runtime/trace regions, and Register sets pprof
// labels fibermpi.rank and fibermpi.endpoint on the registering goroutine
// (replacing its labels). Off, each hook is a nil test (trace.go).
package endpoint
