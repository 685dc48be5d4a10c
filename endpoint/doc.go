// Package endpoint is fibermpi's byte-level core: processes, thread levels,
// endpoints, and the eager and rendezvous protocols over an rdma.Transport.
// Most programs use its typed face, package comm, and touch this package
// only to start: Run, or Init and CreateEndpoints.
//
// # Model (Snir 2009 §2, Sridharan et al. 2014)
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
// endpoint registered with it, and Finalize when all return (RunGoroutines
// the same with goroutines, RunContext and RunGoroutinesContext with a
// context that can end the job).
//
// # Protocols (Dang et al. 2016b §2.2)
//
// Eager, up to Options.EagerLimit bytes: the sender copies the data into a
// packet from its worker's share of the pool and posts it; Send completes at
// once. At the receiving endpoint the packet meets its receive in the
// matching table: if the receive was posted first, the data is copied
// straight into its buffer and the packet goes back to the pool; otherwise
// the packet waits in the table until the receive comes. A transport that
// keeps arrivals in its own memory needs no packet for a message whose
// receive is posted (rdma.EagerReceiver), and hands over a run of messages
// with one envelope at once (rdma.EagerRunReceiver): they are matched
// under one lock of the table (match.Table.TryArriveRun), in order.
//
// In one process (a transport implementing rdma.Local, as the in-process
// default does), a send of any size whose receive is already posted skips
// the protocol: the sender takes the receive from the peer's table
// (match.Table.TryArrive) and copies the data straight into its buffer (one
// copy, no packet; a synchronous send is satisfied too).
//
// Rendezvous, above the limit (and always for Ssend), is receiver-driven
// (Dang et al. 2016b §2.2.2). Over a transport between processes, an exact receive
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
// send completes when its Put has. On a transport that can start a Put
// and report its end later (rdma.PutStarter: rdma/mpi, rdma/shm), the RTR's delivery
// only starts the Put, and the Done goes out and the send completes from
// the progress that reports its end, so the transfers of many sends are
// in flight at once; on the others the Put is made in the RTR's delivery.
// A transport that moves a large message's bytes with a rendezvous of its
// own (rdma.Mover: rdma/mpi, where the production MPI's rendezvous does)
// gets the bytes right after the RTS instead, and when the RTS meets its
// receive, the receiver has the transport receive them into the buffer: no
// RTR, Put or Done; the send completes when the transport says the bytes
// are taken (not for Ssend, which keeps the RTR). A receive from a sender
// behind such a transport offers nothing (rdma.Mover.Moves): an offer
// would have the sender Put instead of moving, which is slower there.
// A message longer than the receive buffer
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
// Send, Ssend, Recv, Probe, Mprobe, Mrecv, Endpoint.Wait, Request.WaitFor,
// WaitTimeout, WaitForContext, WaitContext, WaitAll, WaitAny and WaitSome
// block: a fiber
// yields, a goroutine parks. Request.Done is for goroutines (a select on
// it blocks a fiber's worker).
// Isend, Irecv, Iprobe, Improbe, Imrecv, Test and Cancel never block, except that a send (or
// the withdrawal Cancel sends for an offered receive) finding the packet
// pool exhausted waits for a packet (yielding or letting other goroutines
// run) rather than drop or allocate without bound.
//
// A fiber must not block in ordinary Go (a channel, select, a mutex,
// time.Sleep, a blocking system call): that stops its worker and every
// fiber on it. fiber.Sleep and the waits above yield instead; ranks that
// need ordinary Go run as goroutines (RunGoroutines). A fiber that keeps
// its worker that way for Options.Watch.Stuck is reported once, with its
// rank, its stack and the fix (a *StuckReport).
//
// # Environment
//
// The options a user sets at launch have environment variables, which fill
// the Options fields a program leaves at zero: FIBERMPI_WORKERS,
// FIBERMPI_EAGER_LIMIT, FIBERMPI_PROGRESS and FIBERMPI_PIN (EnvWorkers ...
// EnvPin), besides FIBERMPI_BIND, FIBERMPI_SHM_PUT, FIBERMPI_TRANSPORT and
// FIBERMPI_TRACE (checked too). Init rejects a bad value with an *EnvError
// naming the variable. The table of every
// FIBERMPI_ variable is doc/ENVIRONMENT.md in the repository.
//
// # Requests and statuses: this is the low-level shape
//
// This package's Request and Status are the byte-level ones, for layers
// built on it: a Status counts bytes and carries ranks as int32 (the
// packet header's fields); the waits take the caller's *fiber.Waiter
// (WaitFor, WaitAll(w, ...)) because a layer's helper goroutine may wait
// on another caller's behalf. Programs use package comm, whose Request[T],
// CollRequest and Status are the user-facing shape: Status counts elements
// of T with int ranks, every request is a comm.Waitable with Wait(), Test,
// Done and WaitContext, and comm.WaitAll/WaitAny/WaitSome take any mix.
//
// # Matched probe
//
// Probe then Recv is racy when several callers receive on one endpoint
// (ThreadMultiple): another may take the probed message in between.
// Mprobe (and Improbe) match a message and take it out of matching at
// once, returning a *Message that only Mrecv (or Imrecv) receives, on any
// caller of the endpoint, once (MPI_Mprobe, MPI_Mrecv).
//
// # Failures end the job
//
// As with errgroup and MPI_Abort, the first failure ends the job: a rank of
// Run that returns an error or panics (in fibers and goroutines alike),
// Endpoint.Abort, Process.Abort (a failure found outside the ranks, such
// as another process lost), the context of RunContext, or a deadlock. From
// then on every blocked call of every rank of the process returns an
// *AbortError (errors.Is(err, ErrAborted)) that names the rank and wraps
// the failure, and so does every later call; Run returns the failure
// itself, first. Finalize ends the calls the same way, with ErrFinalized.
//
// In a job of several processes each process also watches the others
// from Init to Finalize (peerwatch.go): those of its node through a pidfd
// each, those of other nodes through their TCP connections. One found
// gone ends the job here as Process.Abort would, with a
// *bootstrap.PeerError naming its rank (errors.Is(err,
// bootstrap.ErrPeerLost)), printed once on standard error, within
// milliseconds and whatever the launcher does (Hydra and srun kill the
// rest of the job, or, with mpiexec -disable-auto-cleanup or srun
// --kill-on-bad-exit=0, tell nobody). A process that has neither
// finalized nor exited a second later ends itself with status 1.
//
// A deadlock — every registered caller blocked in a fibermpi call, with
// nothing in flight, for Options.Watch.Deadlock (1.5 s by default) — fails
// the job with a *DeadlockError that lists, for each blocked rank, the
// call, the receives or sends it waits for (communicator, peer, tag), the
// unmatched messages queued at it, the ranks that have returned, and the
// wait-for cycle if there is one. Watching costs the message path nothing:
// the watchdog marks the events the callers wait on (fiber.Event.Mark) and
// looks again later. In a job of several processes, process 0 decides from
// every process's report (quiet or not, and the messages each sent to and
// took from the others, so that none is in flight) and every deadlocked
// process fails its own ranks, each report listing that process's ranks; a
// rank that waits for a rank whose process has finalized is deadlocked too.
// See deadlock.go and deadlock_job.go for the limits.
//
// # Errors
//
// Bad input gets a sentinel that errors.Is recognises (ErrRank, ErrTag,
// ErrTruncate, ErrNotRegistered, ErrFinalized, ErrThreadLevel, ErrNilRequest,
// ErrRequestActive, ErrEndpoints, ErrOptions), checked before anything is
// sent, so nothing in flight is lost or delivered twice and the endpoint
// stays usable. The end of the job gives ErrAborted (an *AbortError),
// ErrDeadlock (a *DeadlockError) and ErrTimeout (WaitTimeout).
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
