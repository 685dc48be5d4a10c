package tcp

import (
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/fibermpi/fibermpi/packet"
	"github.com/fibermpi/fibermpi/rdma"
)

// Defaults of Config.
const (
	// DefaultListen is the address a transport listens on when
	// Config.Listen is empty: loopback, a port the kernel picks.
	DefaultListen = "127.0.0.1:0"
	// DefaultKeepAlive is how long a connection may carry no bytes before
	// its peer counts as lost.
	DefaultKeepAlive = 10 * time.Second
	// DefaultConnectTimeout bounds New's wait for every connection.
	DefaultConnectTimeout = 30 * time.Second
	// DefaultMaxQueue is how many bytes may wait to be written to one
	// peer before Send returns rdma.ErrAgain, and how many bytes of
	// undelivered arrivals one connection holds before its reader stops
	// reading (back-pressure on the sender).
	DefaultMaxQueue = 4 << 20
)

// Config describes a transport. Exchange and Layout are required; every
// other zero field takes its default.
type Config struct {
	// Exchange is the job's bootstrap: New publishes this process's
	// listening address under "fibermpi/tcp" and fences once.
	Exchange rdma.Exchange
	// Layout maps every address of the job to its process; it may grow
	// while the transport runs.
	Layout *rdma.Layout
	// Peers are the processes this transport reaches, one connection
	// each; sends to others fail with rdma.ErrNoPeer. Every process must
	// list the processes that list it.
	Peers []int
	// Pool is the process's packet pool, the pool of packets sent before
	// any Bind. It may be nil if every sender binds first.
	Pool *packet.Pool
	// PayloadSize is the largest packet payload, the same at every
	// process (the handshake checks); 0 means Pool's, or
	// packet.DefaultPayloadSize.
	PayloadSize int
	// Listen is the host:port to listen on; "" means DefaultListen. The
	// address published to peers is the one the listener got; for an
	// unspecified host ("0.0.0.0:0", ":0") it is this host's first
	// non-loopback interface address.
	Listen string
	// KeepAlive: a connection that carries no bytes for this long fails
	// (a network partition, a peer frozen); an idle connection sends a
	// ping every KeepAlive/4. 0 means DefaultKeepAlive.
	KeepAlive time.Duration
	// ConnectTimeout bounds New's wait for its connections; 0 means
	// DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// MaxQueue bounds the bytes waiting per connection, outbound and
	// inbound; 0 means DefaultMaxQueue.
	MaxQueue int
	// Logf logs what the transport refuses (a foreign connection, bad
	// bytes) and lost peers, once each; nil means log.Printf.
	Logf func(format string, args ...any)
}

// ErrInvalidConfig is returned (wrapped) by New for a Config that cannot
// work.
var ErrInvalidConfig = errors.New("tcp: invalid config")

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidConfig, fmt.Sprintf(format, args...))
}

func (c Config) withDefaults() Config {
	if c.PayloadSize == 0 {
		if c.Pool != nil {
			c.PayloadSize = c.Pool.PayloadSize()
		} else {
			c.PayloadSize = packet.DefaultPayloadSize
		}
	}
	if c.Listen == "" {
		c.Listen = DefaultListen
	}
	if c.KeepAlive == 0 {
		c.KeepAlive = DefaultKeepAlive
	}
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = DefaultConnectTimeout
	}
	if c.MaxQueue == 0 {
		c.MaxQueue = DefaultMaxQueue
	}
	if c.Logf == nil {
		c.Logf = log.Printf
	}
	return c
}

// Validate reports whether c (with defaults) can make a transport.
func (c Config) Validate() error {
	c = c.withDefaults()
	if c.Exchange == nil {
		return invalid("no Exchange")
	}
	if c.Layout == nil {
		return invalid("no Layout")
	}
	size, rank := c.Exchange.Size(), c.Exchange.Rank()
	if c.Layout.Procs() != size {
		return invalid("the Layout has %d processes, the Exchange %d", c.Layout.Procs(), size)
	}
	if rank < 0 || rank >= size {
		return invalid("rank %d of %d", rank, size)
	}
	if id := c.Exchange.JobID(); id == "" || len(id) > 255 {
		return invalid("job id of %d bytes (1 to 255)", len(id))
	}
	seen := make(map[int]bool, len(c.Peers))
	for _, p := range c.Peers {
		switch {
		case p < 0 || p >= size:
			return invalid("peer %d outside the job's %d processes", p, size)
		case p == rank:
			return invalid("peer %d is this process", p)
		case seen[p]:
			return invalid("peer %d listed twice", p)
		}
		seen[p] = true
	}
	if c.PayloadSize <= 0 || c.PayloadSize > packet.MaxPayloadSize {
		return invalid("PayloadSize %d", c.PayloadSize)
	}
	if c.Pool != nil && c.Pool.PayloadSize() < c.PayloadSize {
		return invalid("the Pool's payloads (%d bytes) are smaller than PayloadSize %d", c.Pool.PayloadSize(), c.PayloadSize)
	}
	if c.KeepAlive < 0 || c.ConnectTimeout < 0 {
		return invalid("negative KeepAlive or ConnectTimeout")
	}
	if c.MaxQueue < packetHead+c.PayloadSize {
		return invalid("MaxQueue %d holds no packet of %d bytes", c.MaxQueue, c.PayloadSize)
	}
	return nil
}
