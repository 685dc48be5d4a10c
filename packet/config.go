package packet

import (
	"errors"
	"fmt"
	"math/bits"
	"runtime"
)

// Defaults used for zero fields of Config.
const (
	// DefaultPayloadSize is the payload size when Config.PayloadSize is 0.
	DefaultPayloadSize = 8 << 10
	// DefaultPerWorker is the deque size when Config.PerWorker is 0.
	DefaultPerWorker = 64
	// DefaultShared is the shared pool's initial size when Config.Shared
	// is 0.
	DefaultShared = 256
	// MaxPayloadSize is the largest payload a packet may have.
	MaxPayloadSize = (1<<16 - 1) * CacheLine
	// MaxPackets is the most packets one pool may ever hold.
	MaxPackets = maxPackets
)

// Overflow says what Get does when every place of the pool is empty.
type Overflow uint8

const (
	// OverflowFail (the default) makes Get report exhaustion by returning
	// nil. The pool never holds more packets than it was made with; the
	// caller applies back-pressure: it makes progress (which returns
	// packets) and tries again, or waits.
	OverflowFail Overflow = iota
	// OverflowGrow makes Get allocate a new slab of GrowBy packets while
	// the pool holds fewer than MaxPackets, and report exhaustion after
	// that. Packets are never freed back to the Go heap: the pool keeps
	// its high-water mark.
	OverflowGrow
)

// String names the policy.
func (o Overflow) String() string {
	switch o {
	case OverflowFail:
		return "fail"
	case OverflowGrow:
		return "grow"
	}
	return fmt.Sprintf("overflow(%d)", uint8(o))
}

// Config describes a pool. Its zero value is valid: GOMAXPROCS workers,
// DefaultPerWorker packets for each, DefaultShared in the shared pool,
// DefaultPayloadSize-byte payloads, no growth.
type Config struct {
	// Workers is the number of private deques, one per worker (a locked
	// OS thread of the fiber scheduler). 0 means runtime.GOMAXPROCS(0).
	Workers int
	// PerWorker is the capacity of each private deque, and the number of
	// packets it starts with. 0 means DefaultPerWorker.
	PerWorker int
	// Shared is the number of packets the shared pool starts with. 0 means
	// DefaultShared; there is no way to ask for an empty shared pool
	// beyond setting it to a small number.
	Shared int
	// PayloadSize is the payload capacity of every packet in bytes, a
	// positive multiple of CacheLine up to MaxPayloadSize. 0 means
	// DefaultPayloadSize.
	PayloadSize int
	// Overflow is the policy when the pool runs dry (default
	// OverflowFail).
	Overflow Overflow
	// GrowBy is how many packets one growth step adds under OverflowGrow;
	// it is rounded up to a power of two. 0 means max(PerWorker, 64).
	// It must be 0 under OverflowFail.
	GrowBy int
	// MaxPackets bounds growth under OverflowGrow: the pool never holds
	// more packets. 0 means four times the initial size. It must be 0
	// under OverflowFail.
	MaxPackets int
}

// ErrInvalidConfig is returned (wrapped in a *ConfigError) by Validate and
// New when a Config field is out of range.
var ErrInvalidConfig = errors.New("packet: invalid config")

// ErrTooLong is returned (as a *LengthError) when data does not fit in a
// packet's payload.
var ErrTooLong = errors.New("packet: data longer than payload")

// ErrShortHeader is returned by DecodeHeader when the buffer is shorter
// than HeaderWireSize.
var ErrShortHeader = errors.New("packet: short header")

// ConfigError reports which Config field is wrong and why. It matches
// ErrInvalidConfig with errors.Is.
type ConfigError struct {
	Field  string // the Config field, e.g. "PayloadSize"
	Value  int    // its value after defaults were filled in
	Reason string // what is wrong with it
}

// Error describes the bad field.
func (e *ConfigError) Error() string {
	return fmt.Sprintf("packet: invalid config: %s = %d: %s", e.Field, e.Value, e.Reason)
}

// Is reports whether target is ErrInvalidConfig.
func (e *ConfigError) Is(target error) bool { return target == ErrInvalidConfig }

// LengthError reports data of Len bytes that does not fit in a payload of
// Cap bytes. It matches ErrTooLong with errors.Is.
type LengthError struct {
	Len int // bytes to be stored
	Cap int // payload capacity
}

// Error gives both sizes.
func (e *LengthError) Error() string {
	return fmt.Sprintf("packet: %d bytes do not fit in a %d-byte payload", e.Len, e.Cap)
}

// Is reports whether target is ErrTooLong.
func (e *LengthError) Is(target error) bool { return target == ErrTooLong }

// withDefaults returns c with every zero field replaced by its default.
// It does not validate.
func (c Config) withDefaults() Config {
	if c.Workers == 0 {
		c.Workers = runtime.GOMAXPROCS(0)
	}
	if c.PerWorker == 0 {
		c.PerWorker = DefaultPerWorker
	}
	if c.Shared == 0 {
		c.Shared = DefaultShared
	}
	if c.PayloadSize == 0 {
		c.PayloadSize = DefaultPayloadSize
	}
	if c.Overflow == OverflowGrow {
		if c.GrowBy == 0 {
			c.GrowBy = max(c.PerWorker, 64)
		}
		if c.GrowBy > 0 && c.GrowBy <= maxPackets {
			c.GrowBy = 1 << bits.Len(uint(c.GrowBy-1))
		}
		if c.MaxPackets == 0 && c.initial() > 0 && c.initial() <= maxPackets/4 {
			c.MaxPackets = 4 * c.initial()
		}
	}
	return c
}

// initial is the number of packets a pool starts with.
func (c Config) initial() int { return c.Workers*c.PerWorker + c.Shared }

// Validate reports whether c (with defaults filled in) describes a pool
// New can make. The error is a *ConfigError matching ErrInvalidConfig.
func (c Config) Validate() error {
	c = c.withDefaults()
	bad := func(field string, v int, why string) error {
		return &ConfigError{Field: field, Value: v, Reason: why}
	}
	switch {
	case c.Workers < 0 || c.Workers > 1<<16:
		return bad("Workers", c.Workers, "want 0..65536")
	case c.PerWorker < 0 || c.PerWorker > maxPackets:
		return bad("PerWorker", c.PerWorker, fmt.Sprintf("want 0..%d", maxPackets))
	case c.Shared < 0 || c.Shared > maxPackets:
		return bad("Shared", c.Shared, fmt.Sprintf("want 0..%d", maxPackets))
	case c.PayloadSize < 0 || c.PayloadSize > MaxPayloadSize:
		return bad("PayloadSize", c.PayloadSize, fmt.Sprintf("want 0..%d", MaxPayloadSize))
	case c.PayloadSize%CacheLine != 0:
		return bad("PayloadSize", c.PayloadSize, fmt.Sprintf("not a multiple of %d", CacheLine))
	case c.initial() > maxPackets:
		return bad("Workers*PerWorker+Shared", c.initial(), fmt.Sprintf("more than MaxPackets (%d)", maxPackets))
	}
	switch c.Overflow {
	case OverflowFail:
		if c.GrowBy != 0 {
			return bad("GrowBy", c.GrowBy, "set without OverflowGrow")
		}
		if c.MaxPackets != 0 {
			return bad("MaxPackets", c.MaxPackets, "set without OverflowGrow")
		}
	case OverflowGrow:
		if c.GrowBy <= 0 || c.GrowBy > maxPackets {
			return bad("GrowBy", c.GrowBy, fmt.Sprintf("want 1..%d", maxPackets))
		}
		if c.MaxPackets <= c.initial() || c.MaxPackets > maxPackets {
			return bad("MaxPackets", c.MaxPackets,
				fmt.Sprintf("want more than the initial %d packets and at most %d", c.initial(), maxPackets))
		}
	default:
		return bad("Overflow", int(c.Overflow), "unknown policy")
	}
	return nil
}

// String prints the effective configuration (defaults filled in).
func (c Config) String() string {
	c = c.withDefaults()
	s := fmt.Sprintf("packet.Config{Workers: %d, PerWorker: %d, Shared: %d, PayloadSize: %d, Overflow: %s",
		c.Workers, c.PerWorker, c.Shared, c.PayloadSize, c.Overflow)
	if c.Overflow == OverflowGrow {
		s += fmt.Sprintf(", GrowBy: %d, MaxPackets: %d", c.GrowBy, c.MaxPackets)
	}
	return s + "}"
}
