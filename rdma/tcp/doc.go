// Package tcp is the rdma.Transport between processes over TCP: the
// backend for processes on different nodes (rdma/route picks it per
// destination process; endpoint.Init uses it for processes whose host
// differs, or for every pair with FIBERMPI_TRANSPORT=tcp).
//
// # Connections
//
// One connection per pair of processes (not per endpoint), made at start
// by New, which is collective: every process listens, publishes its
// address through the job's bootstrap (rdma.Exchange), fences, and the
// process of lower rank dials the other. A handshake carries the job id,
// the rank and the payload size; a connection from another job, from a
// rank that is no peer, or from something that is no fibermpi process is
// refused and logged, and the listener keeps serving the job. Sockets
// have TCP_NODELAY.
//
// # Frames
//
// A frame is a kind byte and a fixed head, then a payload for some kinds
// (frame.go). A packet travels as its destination address, the packet's
// wire header (packet.EncodeHeader) and its payload. A Put is its head and
// the source buffer, written in place by one writev (no copy on the
// sending side); the owner reads the payload from the socket straight into
// the registration and answers. A Get is a request the owner answers with
// the bytes, written in place from the registration and read straight into
// the destination. Bind and Unbind are announced to every peer, so that a
// Send to an address that is not bound fails with rdma.ErrNoPeer at once.
//
// # Progress
//
// Progress reads each socket without blocking and parses what it holds;
// a reader goroutine per connection waits for the socket to become
// readable and parses when Progress does not, so that Put, Get and Bind
// are answered without any call of the owner's code (the rdma contract).
// Both parse the same stream under one lock; a frame split across reads
// resumes where it stopped. Measured with BenchmarkPingPong (8-byte
// packets over loopback, both sides spinning on Progress): with the reader
// goroutines alone, a round trip took 52 ms, because goroutines spinning
// on Progress keep the Go scheduler from polling the network until sysmon
// does (every 10 ms); with Progress reading the sockets itself, 44 µs on
// the same loaded machine. Polling costs one read system call per
// connection per Progress call when nothing arrived.
//
// Send never blocks: with nothing queued it writes the frame itself with
// one non-blocking write; otherwise, or for what the socket did not take,
// the connection's writer goroutine writes, batching frames into one
// writev. Beyond Config.MaxQueue queued bytes Send returns rdma.ErrAgain.
// On the receiving side, beyond Config.MaxQueue bytes of undelivered
// arrivals the connection stops being read (the sender's queue then fills:
// back-pressure), except while a caller of this process waits for a peer's
// answer (Bind, Put, Get), when reading goes on so that two processes
// waiting on each other cannot deadlock. Packets between a pair of
// processes arrive in the order they were sent.
//
// # Failure
//
// A reset, a connection closed without a goodbye, a peer silent for
// Config.KeepAlive (idle connections send pings), or bytes that are no
// frame (garbage, a truncated frame, a packet for an endpoint of another
// process, a payload longer than the job's) fail the connection: every
// waiting and later call towards that process returns a *PeerError naming
// its rank (errors.Is ErrPeerGone or ErrProtocol), CheckPeers reports it,
// and it is logged once. A peer that closes its transport on purpose says
// goodbye first; calls towards it then fail with ErrPeerClosed (which
// matches rdma.ErrNoPeer). The other connections are unharmed.
package tcp
