// Package rdmatest is the conformance suite of rdma.Transport: the tests
// every backend's own tests run, in the way gonum's blas/testblas checks
// every BLAS implementation against one set of expectations.
//
// # Using it from a backend
//
// A backend's test file passes Run a Factory that builds a fresh fabric for
// each subtest:
//
//	func TestConformance(t *testing.T) {
//		rdmatest.Run(t, func(t *testing.T, cfg rdmatest.Config) rdmatest.Fabric {
//			return rdmatest.SingleHost(inproc.New(), cfg.Endpoints)
//		})
//	}
//
// The Factory is told how many endpoint addresses the subtest uses
// (Addr(0) … Addr(Endpoints-1)) and the packet pool the subtest takes its
// packets from. It returns a Fabric: for each address the Transport that
// endpoint lives on. An in-process backend puts every endpoint on one
// Transport (SingleHost). The Receivers the suite binds are values of the
// test process, so every Transport of a Fabric is an instance in the test
// process; a backend for endpoints in different processes makes one
// instance per simulated process, connected as separate processes would be
// (through a shared-memory segment, over loopback TCP), and repeats a value
// for the endpoints one process hosts. The Factory may start helper
// processes if the backend needs them, and registers their clean-up with
// t.Cleanup; the suite's own clean-up, which closes the transports, runs
// first. A transport that builds packets on arrival takes them from
// Config.Pool.
//
// # What the suite assumes
//
// Only the rdma.Transport contract: the suite names endpoints by Addr,
// observes arrivals only through the Receivers it binds, sends, binds,
// registers and calls Put and Get for an endpoint on that endpoint's
// Transport, and never assumes delivery is synchronous: it waits for
// arrivals in loops that call Progress on every transport, bounded by
// Fabric.Timeout (a subtest that waits longer fails; it does not hang).
// Receivers return every packet to the pool with the worker index the
// transport passed them, so a wrong index shows up as a failure (and, in
// -tags invariants builds, two goroutines using one worker index at once
// are caught by the pool).
//
// A transport may refuse a Send with rdma.ErrAgain when its queue to the
// peer is full (see rdma's "Never blocking"). Outside Receive callbacks
// the suite then drives progress and sends again; inside them it never
// waits: the packet goes to a backlog, one FIFO per sending transport and
// destination, that every progress pass of the suite drains in order, as
// the endpoint layer does. New sends from outside Receive wait while the
// backlog holds packets (with one pool for all endpoints, a backlog that
// kept growing could take every packet and leave none to build arrivals
// in). A Factory may size queues small to make this happen often.
//
// # What it checks
//
//   - Delivery: every packet arrives exactly once, at the address it was
//     sent to, with every exported header field of packet.Packet (filled
//     with full-range values) and its payload (0 to Cap bytes) intact, also
//     for sends to the sender's own address.
//   - Order: packets one goroutine sends to one peer arrive in the order
//     sent, with several goroutines of one endpoint sending to one peer at
//     once, each with its own sequence, and with many endpoints sending to
//     one receiver at once; and sends to one peer that do not overlap in
//     time arrive in order even when goroutines take turns making them.
//   - Conservation: after the traffic (and after Close), every packet is
//     back in the pool; a refused Send leaves the packet with the caller,
//     intact and still usable.
//   - Eager messages without packets (transports that are rdma.EagerSenders
//     only): SendEager and Send of eager packets, mixed, arrive once each
//     and in order, with their header and bytes, at a Receiver that takes
//     some through ReceiveEager (rdma.EagerReceiver) and refuses others,
//     which then come through Receive; SendEager to an unbound address or
//     of a message longer than a packet reports false.
//   - Messages a receiver takes itself (transports that are
//     rdma.EagerTakers only): with the same traffic, a taker that takes
//     some of the eager messages TakeEager offers and refuses others, and
//     Progress after every TakeOther, every message arrives once and in
//     order, taken or delivered; TakeEager for another address is never
//     offered a message of address 0, and some messages are taken.
//   - Re-entrancy: a Receiver may Send (re-using the packet it was given),
//     Register, Put and Deregister from inside Receive; the suite runs a
//     rendezvous (RTS, RTR, Put, Done) entirely from Receivers.
//   - Started Puts (transports that implement rdma.PutStarter): the same
//     rendezvous with every RTR starting its Puts and returning, the Done
//     sent from the last PutDone, so that all transfers are in flight at
//     once; each PutDone comes once, and the bytes are in place when the
//     Done arrives; a started Put past the end or into a deregistered
//     region fails (at once or through PutDone), and one after Close
//     fails at once with rdma.ErrClosed.
//   - Addresses: Send, Put and Get to an address never bound, or unbound,
//     fail with rdma.ErrNoPeer; binding twice fails with rdma.ErrBound and
//     leaves the first Receiver in place; an address can be bound again after
//     Unbind; Bind and Unbind while other goroutines send lose nothing.
//   - Memory: Register, Put and Get round trips at many offsets and lengths
//     (empty and nil buffers included), bytes written by Put visible to the
//     owner once a later packet tells it so; accesses past the end fail with
//     rdma.ErrOutOfBounds (a *rdma.BoundsError, if the backend uses one,
//     with the access's offset and length) and write nothing — guard bytes
//     around every registered buffer stay intact, and so does the
//     destination of a failed Get; a forged or stale Region fails
//     (rdma.ErrNoRegion for a key that is not registered) and never
//     reaches another registration; Register and Deregister while others
//     Put and Get; a 4 MiB Put and Get (1 MiB under -short).
//   - Close: it succeeds once; every later call (Close included) fails with
//     rdma.ErrClosed and Progress reports nothing; Close while goroutines
//     send loses or doubles no packet.
//   - Flood: two endpoints each send windows of 10^4 packets to the other
//     before waiting, while their Receivers answer every packet with a Send
//     of their own; with bounded queues both directions are full at once,
//     and every request and answer must still arrive once, intact and in
//     order (no deadlock between Receivers that cannot wait).
//
// # Subtests
//
// Each check is a subtest of the test that calls Run, so one can be picked
// with -run (for example -run 'TestConformance/Bounds'). Each subtest gets a
// fresh fabric and a fresh pool.
package rdmatest
