// Package mpi is the rdma.Transport over a production MPI (MPICH, Open MPI;
// UCX or libfabric underneath), in builds with the tag mpi (cgo; see
// internal/mpi for -tags mpi,ompi and mpi_nopkgconfig). Without the tag the
// package is empty: the default build needs no C compiler. Under an MPI
// launcher the bootstrap is MPI itself (package bootstrap, backend "mpi"),
// and endpoint.Init routes the pairs of processes on different nodes here;
// FIBERMPI_TRANSPORT=mpi routes every pair here (by default the pairs of
// one node use rdma/shm).
//
// # Threads
//
// MPI runs at MPI_THREAD_SERIALIZED: initialized and finalized on one
// locked OS thread, and called by whichever worker or goroutine polls,
// under one lock (internal/mpi says why not FUNNELED). Fibers never block
// in C: every MPI call here is nonblocking, and waits test with the lock
// released between tests.
//
// # Messages
//
// Each transport posts Config.Ring receives from MPI_ANY_SOURCE on its
// control tag into C buffers (a ring); messages of one source complete in
// ring order, and the ring is consumed in order, so packets between a pair
// arrive in send order. A packet is a message: a 64-byte head (kind,
// the destination's generation and address, the packet header) and the
// payload, copied by one cgo call into a send buffer and sent with
// MPI_Isend; Send returns the packet to its pool at once. A packet longer
// than Config.Whole (by default 8192 bytes under MPICH and 4032 under Open
// MPI, each just under that MPI's eager limit here) goes as several
// messages back to back, and the receiver joins them: a full 8 KiB eager
// message then stays out of the MPI's rendezvous, in which it took about
// twice as long over MPICH (7.0 against 3.7 µs one-way) and 2.6 times as
// long over Open MPI (10.0 against 3.8; BENCHMARKS.md, issue 17, sessions
// 23 and 24). An eager
// message needs no packet on either side (rdma.EagerSender,
// rdma.EagerReceiver): SendEager copies the caller's bytes by that same
// cgo call, and an eager arrival for a receive already posted goes from
// its ring slot straight into the receive's buffer when nothing that came
// before it waits for delivery. A blocking Recv of a fiber alone on its
// worker may also poll itself and take such an arrival for its own
// envelope before any receive is posted (rdma.EagerTaker; the
// endpoint's take path): the arrival then skips the receive's post and
// completion. A hot operation is one cgo call (a send;
// a Progress with nothing new, which also takes no lock but MPI's and
// allocates nothing). A send is not tested after MPI_Isend: a poll
// retires completed sends with one MPI_Testsome once 16 are active. A
// Progress that follows two empty ones tests the ring's head up to
// Config.Spin more times inside its cgo call, returning as soon as a
// message is in: a waiting caller then sees a message within one
// MPI_Test of its arrival, not within one round of the Go side and a cgo
// transition.
//
// Put and Get are MPI point-to-point, straight from and into the pinned Go
// buffers (no copy on either side; MPI's own rendezvous moves large ones
// in one copy). A Put sends its head on the control tag and the bytes on
// the owner's data tag; the owner posts the receive into the
// registration and answers at once, so the answer travels while the
// bytes do. The Put returns when the answer is there and its MPI_Isend
// has completed (src may be reused). What the sender sends after it (the
// endpoint layer's Done, which tells the owner the bytes are there) waits
// at the owner, in its ring, until the receives of that sender's Puts
// posted before it have completed. A Get asks, the owner answers and
// sends the bytes on the caller's data tag. Heads and bytes pair up
// because a process sends each pair under the lock and MPI keeps the
// order of one source and tag.
//
// StartPut (rdma.PutStarter) is a Put nobody waits for, and its bytes go
// only once their receive is posted: it sends the head (kPutAsk); the
// owner posts the receive into the registration on its put tag and
// answers kPutGo; the poll that finds kPutGo starts the bytes' MPI_Isend;
// the owner answers again once the bytes are in, and the Progress that
// finds that answer and the send complete calls the Put's PutDone (src
// stays pinned until then). A Put the owner refuses (no such
// registration) sends no bytes. The endpoint layer starts each
// rendezvous Put from the RTR's delivery this way and sends the Done from
// PutDone, so a window of large sends has all its transfers in flight at
// once, as raw MPI's does. Sending the bytes only after kPutGo costs a
// control message per Put and keeps them from reaching the owner's MPI
// before their receive (an unexpected message); BENCHMARKS.md (issue 17)
// has what each way measured.
//
// # Moved messages
//
// A large message between endpoints needs none of the above by default:
// the transport is an rdma.Mover. The endpoint layer's SendMoved sends
// the RTS as a packet and, at once, the bytes with MPI_Isend on a tag of
// their own (one counter per process, above every control, data and put
// tag; the tag travels in the RTS). When a receive matches the RTS, the
// receiver's TakeMoved posts MPI_Irecv on that tag straight into the
// receive's buffer (into a buffer of the message's size when the receive
// is shorter, truncating), and MPI's own rendezvous moves the bytes.
// Under MPICH by default, a message of at most Config.MovedPieces×Whole
// bytes (32 KiB) goes instead as MPI messages of Whole bytes, each under
// MPICH's eager limit: UCX's
// rendezvous took 12.8 µs one-way at 16 KiB here, the pieces 7.9. The
// RTS tells the receiver which way the sender chose.
//
// Unlike over the other transports, a receive posted before its message
// does not offer its buffer to the sender (Moves): with an offer the
// sender would Put, which took 10–20 % longer at 16–64 KiB here. The
// send completes when MPI completes the sends, the receive when MPI
// completes the receive: one control message per large message instead of
// six (RTS, RTR, kPutAsk, kPutGo, the answer, Done), and none of the
// endpoint layer's registrations. A message that waits unexpected stays in
// MPI, at the sender (at the receiver if it went in pieces, as an eager
// message does), until its receive is posted, as in MPI itself. The tag
// makes the order of the bytes free of every other message's: receives
// may be posted in any order. Synchronous sends, sends while
// packets wait in the endpoint layer's backlog, and endpoints of this
// same MPI process keep the RTR and Put; so does every message with
// Config.NoMove (FIBERMPI_MPI_RENDEZVOUS=put). BENCHMARKS.md (issue 17,
// session 22) has what each way measured.
//
// MPI-3 RMA (a dynamic window, MPI_Win_attach per registration, MPI_Put +
// MPI_Win_flush) is not built. Measured in C beside point-to-point over
// the same MPI (bench/osu-c's osu_rv_put against osu_bw, 1 MiB;
// BENCHMARKS.md, issue 17, 2026-11-27): MPICH 4.0.2 puts into a dynamic
// window at 0.075× its point-to-point bandwidth, Open MPI 4.1.4 at 1.10×
// with one flush per window of 64, where fibermpi would need a flush (or
// a batched notification) per message besides. Point-to-point already
// moves the bytes in one copy between the pinned buffers.
//
// # Lanes
//
// Several transports of one process (the tests) each get a lane: control
// tag 2·lane; the data and put tags are per transport, 4·generation+1
// and 4·generation+3, so that the bytes of a Put a closed transport never
// took cannot match a receive of the next. Started Puts' bytes have a tag
// of their own because they go in the order of the owner's kPutGo
// answers, not of the heads: on the data tag they could pair with the
// receive of a Get's answer from the same process. A closed transport's
// ring keeps its receives posted (cancelling them was unsafe on MPICH
// 4.0.2: receives posted later matched wrong messages) and passes with its
// lane to the next transport the process makes, with a new generation:
// messages for an earlier generation are dropped. Finalize cancels every
// ring's receives right before its MPI_Finalize, so that MPI finds none
// pending (UCX warns about each); when the program initialized MPI and
// finalizes it itself, they stay posted. Sends and transfers a closed
// transport leaves unfinished are not MPI_Request_free'd but kept and
// tested until done (internal/mpi's Orphan, Reap): MPICH 4.0.2 loses a
// freed send to this process itself (internal/mpi/testdata has a C
// reproducer: the receive that should match it never completes), and the
// suite's crash in MPI_Irecv, inside MPICH's request allocator, followed
// such a free and is gone without it — most likely the freed request
// reused while still queued. While a call of the process waits for an
// answer, every transport's poller polls at its shortest period, since
// the answer may be another transport's of the same process to give.
//
// # Offloading matching to MPI (a design note)
//
// Today MPI matches only fibermpi's own tags (one ring per transport);
// fibermpi's matching table does the real matching. The next step, for
// hardware tag matching (UCX on InfiniBand, Slingshot's and Omni-Path's
// NICs), is to post the application's receives as MPI receives: one MPI
// communicator per fibermpi endpoint (MPI_Comm_dup'd per endpoint, so that
// an endpoint's receives never match another's), the fibermpi
// (communicator context, tag) folded into the MPI tag, the source endpoint
// mapped to the owner's rank plus a field of the tag. What that costs:
//
//   - Wildcards: AnySource over endpoints becomes MPI_ANY_SOURCE on the
//     endpoint's communicator, fine; but AnyTag cannot be expressed once
//     the context id and the source endpoint share the tag bits, and a
//     receive that names an endpoint of a process with several endpoints
//     needs the tag to carry it, halving the tag space again. MPI_TAG_UB
//     is 2^28−1 on MPICH here (2^31−1 on Open MPI): 16 bits of context and
//     12 of source endpoint leave nothing for the user's tag.
//   - Endpoints: a communicator per endpoint means MPI_Comm_dup per
//     CreateEndpoints (collective, 10–100 µs each) and per-communicator
//     state in MPI (and in the NIC's matching lists, which are small).
//   - Fibers: a posted MPI receive completes only when someone tests it,
//     so a blocked fiber's wake-up would depend on a poll over every
//     posted request (MPI_Testsome over thousands), instead of one signal
//     from the matching table.
//   - Ordering with shared memory: a job mixing rdma/shm and MPI would
//     match in two places; non-overtaking across them needs sequence
//     numbers the MPI side does not have.
//
// So offload pays when receives name their source and tag, endpoints are
// few and long-lived, and wildcards are rare — the case MPI 4.0's
// mpi_assert_no_any_source / no_any_tag hints describe; fibermpi's
// match.Config has the same hints, which could select it per
// communicator.
//
// # Errors
//
// MPI runs with MPI_ERRORS_RETURN; a failed call is an error matching
// ErrMPI with MPI_Error_string's text. A process that dies ends the job
// through the MPI launcher (MPI reports no failure of a peer itself).
package mpi
