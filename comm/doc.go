// Package comm is fibermpi's typed face: Comm[T], a communicator whose
// buffers are []T, and Request[T], a future of a message's Status.
//
//	err := endpoint.Run(4, func(ep *endpoint.Endpoint) error {
//		c, err := comm.World[float64](ep)
//		if err != nil {
//			return err
//		}
//		if c.Rank() == 0 {
//			return c.Send([]float64{1, 2, 3}, 1, 0)
//		}
//		...
//	})
//
// T is any fixed-size type: numbers, bool, and arrays and structs of them
// (datatype.Of says which). A []T travels as its bytes, viewed in place, so a
// contiguous send copies nothing on the way to the transport. Layouts that
// are not contiguous — every other element of a row, a column, a sub-block —
// are described with package datatype and sent with SendLayout and
// RecvLayout.
//
// Values that are not fixed-size — strings, maps, structs with slices or
// pointers — travel as objects: SendValue, RecvValue, IsendValue,
// IrecvValue, BcastValue and GatherValue encode any Go value with the
// communicator's Codec (encoding/gob unless SetCodec says otherwise), at
// the cost of an encoding, a decoding and allocations per message (about
// 18 times the typed path's time for 1024 float64s in BenchmarkValue).
//
// # Requests and statuses
//
// Request[T] (a point-to-point transfer) and CollRequest (a nonblocking
// collective) are futures of the same shape: Wait, Test, Done (a channel
// for select) and WaitContext, and both are a Waitable, so WaitAll,
// WaitAllContext, WaitAny, WaitAnyContext, WaitSome and TestAll take any
// mix of them. Status gives the source and tag as int and the size in
// elements of T (and in bytes). Package endpoint's Request and Status are
// the low-level, byte-level shape that this package is built on; programs
// need not meet them.
//
// # Deadlines
//
// Waits with a context: Request.WaitContext, CollRequest.WaitContext,
// WaitAllContext, WaitAnyContext, and the blocking calls that wait for
// something that may never come and can be walked away from cleanly:
// RecvContext (the receive is withdrawn), ProbeContext, MprobeContext and
// RecvValueContext (nothing is taken). Sends have no ctx form, since a
// started send cannot be withdrawn; blocking collectives have none, since
// a rank that leaves a collective early leaves the others inside it. Bound
// those with endpoint.RunContext, which ends the whole job, or start the
// nonblocking collective and wait with CollRequest.WaitContext (its
// buffers stay the operation's until it completes).
//
// With several threads receiving on one endpoint, learn a message's size
// with Mprobe, not Probe: it takes the message out of matching, so the
// following Mrecv gets exactly that message.
//
// # Blocking and fibers
//
// A Comm belongs to one caller, the fiber or goroutine registered with its
// endpoint handle. Every blocking method (Send, Recv, Ssend, Sendrecv,
// Probe, Mprobe, Mrecv, SendValue, RecvValue, the ctx forms, Request.Wait, WaitAll, WaitAny, WaitSome, every blocking collective
// such as Barrier or Allreduce, CollRequest.Wait, and the collective
// communicator constructors Dup, Split, Create and CreateGroup) yields a
// fiber to its worker, which runs other fibers meanwhile, and parks a
// goroutine the Go way; so do Request.WaitContext and Request.WaitTimeout,
// the waits with a limit. Nothing in this package blocks a worker's OS
// thread, except reading Request.Done, which is for goroutines (a select in
// a fiber blocks its worker). A fiber rank must not block in ordinary Go
// either (channels, mutexes, time.Sleep): use fiber.Sleep, or goroutine
// ranks (endpoint.RunGoroutines).
//
// # Ordering
//
// As in MPI: two messages from one sender with the same (communicator, tag)
// are received in the order they were sent, and two receives with the same
// signature are satisfied in the order they were posted. A receive may name
// AnySource and AnyTag; among messages from one source it still gets the
// earliest that matches. Messages from different senders have no order.
//
// # Buffer lifetimes
//
// Send, Ssend and Sendrecv return when the send buffer may be reused. The
// buffer of Isend must not change, and the buffer of Irecv must not be read
// or written, until the request completes (Wait, Test or a multi-request
// wait says so). Small messages (up to the endpoint's eager limit) are copied
// at send time, so their Isend completes at once; larger ones are copied
// once, from the send buffer straight into the receive buffer, when both
// sides are there (rendezvous).
//
// # Collectives
//
// Every rank of a communicator calls the same collectives in the same
// order, with consistent arguments, as in MPI. How they run depends on
// where the ranks live:
//
//   - All in this process (the endpoints of one process, fibers or
//     goroutines): through memory. The ranks meet in an area shared by
//     the communicator's views in this process and read and write each
//     other's buffers; no message is sent. Small reductions are combined
//     by the last rank to arrive, in rank order; large ones are
//     reduce-scattered in place (rank r reduces chunk r reading every
//     rank's buffer) then gathered; small data a rank may leave behind is
//     copied, large data is read where it lies.
//   - In several processes, some with several ranks: Barrier, Bcast,
//     Reduce and Allreduce go in two levels — through memory within each
//     process, one message schedule among one leader per process. The
//     other collectives, and a non-commutative reduction whose processes'
//     ranks are not consecutive, run as message schedules.
//   - One rank per process: message schedules (point-to-point messages
//     on the communicator's collective context). A blocking Barrier, Bcast
//     or Reduce, and a blocking Allreduce below the ring's size, run their
//     rounds straight from the caller when it has no other collective
//     pending: the same messages, without building the schedule.
//
// A rank waiting for the others yields its fiber (or parks its goroutine):
// nobody spins, so ranks on one worker hand it to each other, and the ranks
// that still compute get the cores. SetCollPath(CollMessages) makes a
// communicator run message schedules everywhere (for comparisons).
//
// # Errors
//
// Bad input — a rank or tag out of range, a receive buffer shorter than the
// message, a call after Finalize or through an unregistered handle, a nil
// request — returns an error that errors.Is matches against the sentinels of
// package endpoint (ErrRank, ErrTag, ErrTruncate, ErrFinalized,
// ErrNotRegistered, ErrNilRequest), or of this package (ErrFreed for any
// call on a freed communicator); nothing in flight is lost or delivered
// twice, and the communicator stays usable. A truncated message is consumed,
// as MPI does, and the error is a *endpoint.TruncateError with both sizes; a
// message that is not a whole number of elements of T gives a
// *PartialError.
//
// A collective with erroneous arguments — at one rank (ErrRoot, a
// *CountError, ...) or across ranks (a *MismatchError) — ends the job, as
// MPI's default error handler would, and so does Comm.Abort: every rank's
// blocked or later call then returns an *endpoint.AbortError that names
// the rank and wraps the error (see the top of coll.go). A job whose ranks
// all wait for each other fails with an *endpoint.DeadlockError.
//
// # Thread levels
//
// The endpoint's thread level (endpoint.ThreadSingle ... ThreadMultiple)
// applies per endpoint (Snir 2009): a ThreadSingle endpoint serves one
// registered caller, a ThreadMultiple one any number at once, each with its
// own Comm. The eager send and receive paths take no endpoint lock at any
// level: they touch the caller's packet deque, one matching-table bucket and
// the transport. Locks are taken only off that path: by a rendezvous (its
// request registry), towards a peer in another process that holds an
// offered receive buffer, and towards a peer whose transport queue was full
// (the backlog that keeps such packets in order).
package comm
