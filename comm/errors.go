package comm

import (
	"errors"
	"fmt"
	"strings"

	"github.com/fibermpi/fibermpi/endpoint"
)

// The errors a program using this package tests for, in one place. The
// sentinels and error types of package endpoint that this package's calls
// return are re-exported here (the same values, so errors.Is and errors.As
// match either name): a program that uses Comm needs no endpoint import to
// test its errors.
var (
	// ErrRank is returned for a rank outside the communicator (and not
	// ProcNull, AnySource where a receive allows it).
	ErrRank = endpoint.ErrRank
	// ErrTag is returned for a tag outside 0..MaxTag (and not AnyTag
	// where a receive allows it).
	ErrTag = endpoint.ErrTag
	// ErrTruncate is matched by a *TruncateError: a message longer than
	// the receive buffer.
	ErrTruncate = endpoint.ErrTruncate
	// ErrCancelled is the status error of a receive withdrawn by Cancel.
	ErrCancelled = endpoint.ErrCancelled
	// ErrNilRequest is returned by waits on nil requests only.
	ErrNilRequest = endpoint.ErrNilRequest
	// ErrRequestActive is returned by IsendInto and IrecvInto given a
	// request that is still pending.
	ErrRequestActive = endpoint.ErrRequestActive
	// ErrMessageUsed is returned by Mrecv and Imrecv for a Message
	// already received.
	ErrMessageUsed = endpoint.ErrMessageUsed
	// ErrNotRegistered is returned by calls through a handle not
	// registered with a caller (or no longer).
	ErrNotRegistered = endpoint.ErrNotRegistered
	// ErrFinalized is returned by calls after the process finalized.
	ErrFinalized = endpoint.ErrFinalized
	// ErrAborted is matched by an *AbortError: the job ended (a rank
	// failed, panicked or called Abort, or the run's context ended).
	ErrAborted = endpoint.ErrAborted
	// ErrDeadlock is matched by a *DeadlockError: every rank waits for
	// another and nothing is in flight.
	ErrDeadlock = endpoint.ErrDeadlock
	// ErrTimeout is matched by the error of Request.WaitTimeout when the
	// time passes first.
	ErrTimeout = endpoint.ErrTimeout
)

// Error types of package endpoint that this package's calls return.
type (
	// TruncateError reports a message longer than the receive buffer;
	// errors.Is(err, ErrTruncate) holds.
	TruncateError = endpoint.TruncateError
	// AbortError is what every rank's call returns once the job has
	// ended; it names the rank that ended it and wraps the cause.
	AbortError = endpoint.AbortError
	// RankError is a rank's error as endpoint.Run returns it.
	RankError = endpoint.RankError
	// DeadlockError says who waits for whom in a deadlocked job.
	DeadlockError = endpoint.DeadlockError
)

// Errors of collectives and communicator management, this package's own.
var (
	// ErrRoot is returned when a root rank is outside the communicator.
	ErrRoot = errors.New("comm: root out of range")
	// ErrCount is matched by a *CountError: a buffer's length does not
	// fit the counts and the communicator's size.
	ErrCount = errors.New("comm: buffer length inconsistent with counts")
	// ErrMismatch is matched by a *MismatchError: a collective message had
	// a different size than this rank expected, because ranks passed
	// inconsistent counts.
	ErrMismatch = errors.New("comm: ranks disagree on a collective's sizes")
	// ErrNotCommutative is returned for a non-commutative operation where
	// the call requires a commutative one.
	ErrNotCommutative = errors.New("comm: operation is not commutative")
	// ErrOp is returned for the zero Op.
	ErrOp = errors.New("comm: invalid operation (zero Op)")
	// ErrOverlap is returned when a send and a receive buffer overlap
	// without being the same slice (the same slice means in place).
	ErrOverlap = errors.New("comm: send and receive buffers overlap")
	// ErrPath is returned by SetCollPath for an unknown path, or for a
	// communicator whose collectives have started on another.
	ErrPath = errors.New("comm: cannot set the collective path")
	// ErrFreed is returned by calls on a freed communicator.
	ErrFreed = errors.New("comm: communicator freed")
	// ErrNotFreeable is returned by Free on a world or other communicator
	// this package did not create.
	ErrNotFreeable = errors.New("comm: communicator not created by Dup, Split or Create")
	// ErrGroup is returned for a group rank out of range or repeated, or a
	// group that is not a subset of the communicator.
	ErrGroup = errors.New("comm: bad group")
	// ErrPartial is matched by a *PartialError: a message that is not a
	// whole number of elements.
	ErrPartial = errors.New("comm: message is not a whole number of elements")
)

// CountError reports a buffer whose length does not fit the counts.
type CountError struct {
	Arg        string // which buffer or count
	Have, Want int
}

// Error describes the count that does not fit.
func (e *CountError) Error() string {
	return fmt.Sprintf("comm: %s has %d elements, want %d", e.Arg, e.Have, e.Want)
}

// Is makes errors.Is(err, ErrCount) true.
func (e *CountError) Is(target error) bool { return target == ErrCount }

// MismatchError reports a collective message from Peer of Got bytes where
// this rank expected Want: the ranks passed inconsistent counts.
type MismatchError struct {
	Peer      int
	Want, Got int
}

// Error describes what the ranks disagreed on.
func (e *MismatchError) Error() string {
	return fmt.Sprintf("comm: collective message from rank %d has %d bytes, this rank expected %d (inconsistent counts)", e.Peer, e.Got, e.Want)
}

// Is makes errors.Is(err, ErrMismatch) true.
func (e *MismatchError) Is(target error) bool { return target == ErrMismatch }

// WaitError reports the requests of WaitAll or WaitAllContext that
// completed with an error: Errs[i] is request i's error, nil for those that
// succeeded. errors.Is and errors.As look into every request's error. The
// statuses stay with the requests (Request.Test returns each one's).
type WaitError struct {
	Errs []error
}

// Error lists the failed requests by index.
func (e *WaitError) Error() string {
	var b strings.Builder
	n := 0
	for i, err := range e.Errs {
		if err == nil {
			continue
		}
		if n > 0 {
			b.WriteString("; ")
		}
		n++
		fmt.Fprintf(&b, "request %d: %v", i, err)
	}
	return fmt.Sprintf("comm: %d of %d requests failed: %s", n, len(e.Errs), b.String())
}

// Unwrap returns the requests' errors, without the nils.
func (e *WaitError) Unwrap() []error {
	var errs []error
	for _, err := range e.Errs {
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}
