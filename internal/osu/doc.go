// Package osu measures fibermpi with the method of the OSU micro-benchmarks
// (OMB 5.x) and prints OSU's tables, so that its output sits line for line
// beside OSU's, or beside the OSU-method C programs of bench/osu-c run over
// MPICH and Open MPI. It also reads those tables back (Parse) and summarizes
// many runs of several contenders (Summarize) for `fmpi-osu compare`.
//
// # Method
//
// Each benchmark runs its message sizes in turn, doubling from the smallest
// (0 B for the latencies, 1 B for the bandwidths and bcast, 4 B — one
// float — for allreduce and reduce) to the largest (4 MiB point-to-point, 1 MiB collectives, as
// OMB). For every size it first runs warm-up iterations that are not timed,
// then the timed iterations; sizes above 8 KiB use OMB's smaller counts.
//
//   - latency: rank 0 sends and waits for the same size back; the latency is
//     the time of the timed round trips divided by twice their number.
//   - bw: rank 0 starts a window of 64 nonblocking sends, waits for them all
//     and then for a 4-byte reply that rank 1 sends once it has waited for its
//     64 receives; bandwidth is bytes sent over rank 0's time, in MB/s (10^6).
//   - bibw: both ranks post 64 receives and 64 sends per window; both
//     directions count.
//   - mbw_mr: pairs of ranks (rank i sends to rank i+pairs) run bw's window
//     at once after a barrier; the aggregate bandwidth is the total bytes over
//     the senders' mean time, and the message rate is that over the size.
//   - latency_mt: F callers (fibers, or threads in C) per rank at
//     ThreadMultiple; caller k of rank 0 ping-pongs with caller k of rank 1
//     on tag k, the iterations split among the F pairs (OMB 5.6's method); the
//     latency is rank 0's wall time over twice the round trips of one caller.
//   - allreduce, bcast, reduce, barrier: every rank times each call on its
//     own, with a barrier after each; the average (and, with Full, the
//     minimum and maximum) over ranks of the per-rank mean is printed.
//     allreduce and reduce sum floats (reduce to rank 0), bcast sends bytes
//     from rank 0.
//
// # Modes
//
// Run works in both modes of a fibermpi program. When the process was
// launched as one of several (endpoint.Init's world has more than one
// endpoint), each process is a rank, as with mpiexec — or, for the
// collectives with Ranks a multiple of the processes, each process runs
// Ranks/processes endpoints (fmpirun -n 2 fmpi-osu allreduce -n 8: 2
// processes × 4 endpoints, their collectives in two levels). Otherwise the ranks
// are endpoints of this one process (CreateEndpoints), each run by a fiber
// (or a goroutine): the embedded default. latency_mt makes two ThreadMultiple
// endpoints and registers F fibers on each, the same shape as F fibers per
// process in process mode.
package osu
