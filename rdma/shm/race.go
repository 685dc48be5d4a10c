//go:build linux && race

package shm

import (
	"sync"
	"sync/atomic"
)

// The race detector tracks only memory of the Go heap and data: the
// atomics on ring indices in the shared mapping order a producer's writes
// before a consumer's reads, but the detector does not see them, and
// reports copies that the rings order (a copied Put applied by one
// goroutine, read by the test that sent it) as races. In race builds
// every ring has a word on the Go heap besides, shared by the producer and
// the consumer of the ring when they live in one process (the tests that
// run several transports in one process): the producer Adds to it before
// it publishes (Stores tail), the consumer Loads it after it Loads tail, which shows
// the detector the edge the ring makes. Between processes it is never
// shared and does nothing.

type raceKey struct {
	dev, ino uint64
	ring     int
}

var raceSyncs sync.Map // raceKey → *atomic.Uint64

// raceSyncFor returns the heap word of ring ring of the segment file
// (dev, ino).
func raceSyncFor(dev, ino uint64, ring int) *atomic.Uint64 {
	v, _ := raceSyncs.LoadOrStore(raceKey{dev, ino, ring}, new(atomic.Uint64))
	return v.(*atomic.Uint64)
}
