package shm

import (
	"errors"
	"fmt"
)

// Errors of this package (besides rdma's).
var (
	// ErrPeerGone is returned (in a *PeerError) by CheckPeers, and by a
	// copied Put or Get waiting for a peer, when the peer process has
	// exited.
	ErrPeerGone = errors.New("shm: peer process exited")
	// ErrLimit is returned by Bind for an address beyond Config.MaxAddrs
	// and by Register when Config.MaxRegions registrations are live.
	ErrLimit = errors.New("shm: beyond a configured limit")
	// ErrForeignPacket is returned by Send for a packet of a pool the
	// transport does not know (neither Config.Pool nor bound): it could
	// not return the packet after copying it. The caller keeps it.
	ErrForeignPacket = errors.New("shm: packet of a pool not given to the transport")
	// ErrTooLong is returned by Send for a packet longer than
	// Config.PayloadSize.
	ErrTooLong = errors.New("shm: packet longer than the configured payload size")
	// ErrUnsupported is returned by New on systems other than Linux.
	ErrUnsupported = errors.New("shm: shared-memory transport needs Linux (futex, process_vm_readv, pidfd)")
)

// PeerError names the peer process an error is about.
type PeerError struct {
	Rank int
	Err  error
}

// Error describes the failure and names the process.
func (e *PeerError) Error() string { return fmt.Sprintf("shm: process %d: %v", e.Rank, e.Err) }

// Unwrap returns Err.
func (e *PeerError) Unwrap() error { return e.Err }
