// Package shm is the transport between the processes of one node: packets
// through single-producer/single-consumer rings in shared memory, and
// rendezvous Put and Get as one copy by cross-memory attach
// (process_vm_writev/readv), or copied through the rings: where the kernel
// refuses cross-memory attach, and for Put with Config.RingPuts, which
// measured faster (a Put of 64 KiB or more then goes whichever way moved
// bytes faster lately, measured per peer).
//
// # Setting up
//
// New is collective over the job (every process calls it; it fences the
// Exchange twice). Each process creates its segment, a file
// Config.Dir/fibermpi-<jobid>-<rank> (Dir is /dev/shm by default), and
// publishes its name, pid and the address of a probe word. After the
// first fence each process maps its peers' segments (Config.Peers: the
// other processes of the node) and reads each peer's probe word with
// process_vm_readv: if that works, Put and Get towards that peer use
// cross-memory attach (Put copies through the rings instead with
// Config.RingPuts), else copies through the rings (Name reports
// "shm+cma", "shm+copy" or "shm+cma+copy", "shm+cma+ringput" with
// RingPuts, "shm+cma+ringput+split" with SplitPuts too). After the
// second fence every
// process removes the node's segment files: from then on the segments
// exist only as mappings, so nothing is left in /dev/shm however the
// processes end, kill -9 included. (A process killed between the two
// fences leaves its file; the launcher fmpirun removes
// /dev/shm/fibermpi-<jobid>* at the end of a job.)
//
// A segment holds, page-aligned: a header (layout, pid, the futex words
// of Sleep); a bitmap of the addresses its owner has bound; a table of its
// owner's registrations; and one ring per producer (each peer, and the
// owner itself for its own addresses). Peers read the bitmap and the table
// to refuse Send, Put and Get to unbound addresses and unknown or forged
// regions before touching anything: rdma.ErrNoPeer and rdma.ErrNoRegion
// come back at once, as from the in-process transport.
//
// # Rings
//
// The ring from process P to process Q lives in Q's segment; P is its only
// producer and Q its only consumer. Goroutines of P sending to Q at once
// take turns with a spinlock of P's (a short section: reserve, copy,
// publish; no system call, nothing that parks). Records are variable
// length and cache-line aligned: a 56-byte head (for a packet, the header
// as packet.EncodeHeader writes it, with the destination and the record
// type in its padding), then the payload, so an 8-byte message is one
// 64-byte line and an 8 KiB one 129 lines. A record that does not fit
// before the end of the ring is preceded by a skip record.
//
// The ring's two indices are byte positions that only grow, each on a
// cache line of its own: tail, Stored by the producer after it wrote a
// record (sync/atomic: a release), and head, Stored by the consumer once
// per batch after it copied the records out. Each side keeps a cached copy
// of the other's index and Loads the shared one only when the copy says
// the ring is empty (consumer) or full (producer). The producer's and
// consumer's private state (the send lock, the cached head; the delivery
// locks) are on lines of their own, in each process's memory.
//
// Rejected: a commit word in each record instead of a shared tail (the
// consumer polls the next record's line). It moves one line per small
// message instead of two, but old payload must never read as a commit
// word, and each way of ensuring that cost more than the line saved:
//   - the producer zeroes the next slot's word, and so writes the line the
//     consumer polls twice per message (session 3: the median one-way time
//     rose from about 255 to about 395 ns);
//   - the consumer zeroes the word of each line it consumed, or
//   - the word carries the lap and the consumer checks each line it
//     consumed against the next lap (session 14, both: the 8-byte latency
//     fell by up to 0.09 µs, but messages of 1–8 KiB lost 7–19 % of their
//     bandwidth);
//   - the word is trusted only where a record began in the last lap, and
//     the tail decides elsewhere (the message rate lost 15 %).
//
// BENCHMARKS.md (issue 12, session 14) has the figures.
//
// Eager messages need no packet at either end (rdma.EagerSender,
// rdma.EagerReceiver): SendEager writes the record straight from the
// caller's bytes, and Progress hands an eager record whose destination
// takes them to ReceiveEager, which copies it into a posted receive's
// buffer, while no packet of the same batch waits ahead of it; only an
// unexpected message (or one behind such) is built in a packet. Measured
// with endpoint's BenchmarkShmLoopback (processor time of a whole one-way
// 8-byte message, both ends): 237 ns with packets at both ends, 172 ns
// without (and with the ring's two consumer locks in one word).
//
// Records in a row that carry eager messages for one destination with one
// envelope (a window of sends to one rank and tag) go together to a
// destination that takes runs (rdma.EagerRunReceiver), once the first of
// them has found its receive: the endpoint matches up to a batch of them
// under one lock of its table. A run ends at any other record, a skip or
// the last tail seen. In osu_mbw_mr's
// pattern this took the receiver's instructions from about 1 020 to 800 a
// message (BENCHMARKS.md, issue 12, session 27).
//
// Ordering: records from one process to another are consumed in ring
// order, and a ring is delivered by one goroutine at a time (Progress
// takes it with a try-lock and keeps it across the Receive calls of a
// batch), so packets sent in order by one process arrive in order: in
// particular the packets from one endpoint to another, whose Send calls
// do not overlap.
//
// # Back-pressure
//
// Send never waits: a full ring returns rdma.ErrAgain and the caller keeps
// the packet. Progress builds each arrival in a packet of the pool its
// destination was bound with; when that pool is dry, or the destination
// is not bound (an Unbind that raced with a Send), the record stays in the
// ring, holding back the ring's later records, until the next Progress
// finds a packet or a binding. Nothing is dropped.
//
// A caller that sends new packets while earlier ones wait in its backlog
// for rdma.ErrAgain to clear must let the backlog go first: otherwise the
// answers its Receivers produce can take every packet of its pool while
// both directions' rings are full, and neither process can build an
// arrival again (rdmatest's Flood case shows it).
//
// # Memory
//
// Register pins the buffer (runtime.Pinner), records it in the segment's
// table and returns Region{Key, Addr: the buffer's address, Len}. A key is
// a table slot and the slot's generation, so a withdrawn Region does not
// reach a later registration. A peer checks a Region against the owner's
// table (key, address and length must all match), then the bounds, then
// moves the bytes:
//
//   - cross-memory attach: one process_vm_writev (Put) or readv (Get) into
//     or from the owner's buffer, looping over partial transfers. The
//     owner takes no part. A Put racing with the owner's Deregister (a
//     protocol error of the layer above, which deregisters only after the
//     peer said it is done) may still write the buffer.
//   - copy: Put writes the bytes as chunks (an eighth of a ring each) into
//     the owner's ring; the owner's Progress copies each into the
//     registration, found by key and checked again, before it delivers
//     any packet sent after the Put. Get sends a request that the owner's
//     Progress answers with chunks. Put returns once its bytes are in the
//     ring, Get once its bytes arrived. While they wait for room or for an
//     answer they drain this process's own rings into per-ring queues
//     (packets are delivered later, in order, by Progress) and apply or
//     answer the other records, without calling any Receiver: two
//     processes doing it to each other, even from inside Receive, cannot
//     deadlock. A waiting Put or Get gives up with ErrPeerGone when the
//     owner exits and with rdma.ErrClosed when the transport closes.
//     StartPut (rdma.PutStarter) does not wait: it writes the chunks
//     that fit and leaves the rest to this process's Progress, which calls
//     the Put's PutDone after its last chunk; the endpoint layer's
//     rendezvous uses it, so a window of large sends keeps the ring full
//     while the worker runs on.
//
// Config.RingPuts sends Puts through the rings even where cross-memory
// attach works (Get still attaches): the sender copies a chunk in while
// the owner copies the one before out, on two CPUs, and both copies run
// at memory speed, where process_vm_writev pins the owner's pages one by
// one. On the development machine (2 vCPUs sharing a 32 MiB L3) a 1 MiB
// Put moved at 18–24 GB/s through the rings against 9–10 GB/s attached
// (BENCHMARKS.md, issue 12). It needs the owner to run while the sender
// writes; when a ring stays full for attachAfter (50 µs: the owner is
// not running), the sender writes the rest of that Put by cross-memory
// attach itself; measured with 3, 4 and 8 processes on 2 CPUs, the rings
// stayed ahead of (or even with) attach. The endpoint layer sets it unless
// FIBERMPI_SHM_PUT=attach.
//
// With RingPuts a Put of 64 KiB or more still goes attached while that way
// measured faster towards its owner (pace.go): the rings lose when the
// host runs the two processes on CPUs far apart. Attached, a started Put
// is split (split.go): the sender writes its first half by
// process_vm_writev while the owner's Progress, told by a record in the
// ring, reads the second half out of the sender by process_vm_readv; the
// Put ends (PutDone) once both halves are in. Two copiers attached at once
// measured about twice one. While the two processes send large messages
// to each other at once, each writes its own by one process_vm_writev,
// neither split nor through the rings: both CPUs copy already.
//
// # Sleeping
//
// An idle process need not burn a core: Sleep (rdma.Sleeper) parks the
// calling thread on a futex word in the process's own segment until a
// producer wakes it or a time limit passes. The sleeper reads the futex
// word's value, adds itself to the segment's waiter count, then looks at
// its rings; a producer publishes its record, then reads the waiter count
// and, if it is not zero, bumps the futex word and calls FUTEX_WAKE for one
// sleeper (the one that delivers the arrival wakes the others' fibers). All
// four are sequentially consistent atomics on shared memory, so at least
// one side sees the other's write: either the sleeper sees the record and
// does not wait, or the producer sees the sleeper and wakes it; FUTEX_WAIT
// itself returns at once if the word changed since the sleeper read it.
// No wake-up is lost. Producers make the system call only while someone
// sleeps; otherwise the only cost is one load of a line that changes only
// when the receiver goes to sleep or wakes. Arm and Disarm are Sleep's two
// halves (rdma.Alarm), for a sleeper that also waits on a word of its own:
// a fiber worker waits on its private futex word and on this one at once,
// so that both a fiber's wake-up and an arrival end its sleep.
//
// # Using it
//
// The caller (rdma/route, the endpoint layer) owns the progress: it calls
// Progress from its progress engine (worker idle hooks, a communication
// server, or a caller waiting for a request), spins a bounded time when
// Progress finds nothing, then calls Sleep with a limit, and calls
// CheckPeers now and then to turn a dead peer into an error. It binds its
// endpoints and fences before the first Send to a peer (a Send to an
// address not bound yet fails with rdma.ErrNoPeer). At the end it stops
// its progress engine, then calls Close. Close makes the rest of the
// ring contents unreachable (packets not yet delivered are lost with the
// process, as with any process exit) and replaces the mappings with
// private zero pages, so that a call racing with Close never faults.
//
// Receivers run in Progress, on the goroutine that calls it, with its
// worker index. The hot paths, Send and the delivery in Progress, make no
// system call (except the wake-up of a sleeping receiver) and do not
// allocate.
package shm
