//go:build race

package tcp

import (
	"sync"
	"sync/atomic"
)

// The race detector does not see the order a socket makes: bytes written
// by one goroutine and read by another (a Put's source read by the
// sender's writer, then written into a registration by the owner's
// reader) look unordered when both ends live in one test process. In race
// builds each direction of a connection has a word on the Go heap, found
// by the pair of socket addresses, shared by the two ends when they are
// in one process: the writer Adds to it before it writes, the reader Loads
// it after it reads, which shows the detector the edge the socket makes.
// Between processes it is never shared and does nothing.

var raceWords sync.Map // "from>to" → *atomic.Uint64

func raceWordFor(from, to string) *atomic.Uint64 {
	v, _ := raceWords.LoadOrStore(from+">"+to, new(atomic.Uint64))
	return v.(*atomic.Uint64)
}
