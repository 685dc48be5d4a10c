// Package trace records what a fibermpi job's ranks do — the spans of their
// blocking calls, the protocol messages behind each send, and how many
// bytes and messages went from each endpoint to each other — and writes it
// as a Chrome/Perfetto trace that also carries the raw records, so that
// cmd/fmpi-trace can merge the parts of a job and draw its communication
// matrix.
//
// # Vocabulary
//
// A Recorder belongs to one process; it hands out one Rank per endpoint
// (the endpoint's transport address names it, and is the track of the
// timeline). A Rank collects Records: spans of calls (send, receive, wait,
// collective), instants of protocol steps (eager packet, RTS, RTR, Put,
// Done) and matches (a receive met its message). Pair counters, kept apart
// from the records, are exact even when a rank's record buffer is full.
//
// # Cost
//
// Recording is off unless a Recorder exists: the endpoint layer keeps a nil
// *Rank and tests it before every hook, one load and one branch on the hot
// path. When on, every record takes a mutex of its rank and appends to a
// slice, and a blocking call also opens a runtime/trace region, so that
// `go tool trace` shows fibermpi calls inside a fiber's goroutine.
//
// # Files
//
// Write produces a Chrome trace in the JSON object format: traceEvents (one
// process per OS process, one thread track per endpoint, flow arrows from
// each send to the receive that matched it), and a "fibermpi" member with
// the records. A job of several processes writes one part per process;
// Read and Merge put the parts back together, and pair the sends of one
// process with the receives of another by MPI's non-overtaking order: the
// n-th message from a to b with a given communicator and tag is the one the
// n-th receive at b of that (source, communicator, tag) matched.
//
// # Rejected designs
//
// A message id carried in every packet header would pair sends and
// receives without relying on order, at the cost of header bytes when
// tracing is off; the order rule needs nothing on the wire. Timestamps are
// wall-clock nanoseconds (time.Now().UnixNano) so that parts from the
// processes of one node line up; across nodes they are as good as the
// nodes' clocks.
package trace
