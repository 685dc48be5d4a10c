package endpoint

import (
	"errors"
	"fmt"
)

// ProcNull is the null process (MPI_PROC_NULL): a rank that every send,
// receive and probe accepts and that takes part in nothing. A send to it
// completes at once and sends nothing; a receive from it completes at once
// with Status{Source: ProcNull, Tag: AnyTag, Count: 0} and leaves its buffer
// untouched; a probe of it reports that status at once. Halo exchanges use
// it at the edges of a domain, so that the boundary ranks run the same code
// as the others: the neighbour past the edge is ProcNull.
const ProcNull = -2

// errProcNull tells checkSend's and recvKey's callers that the peer is
// ProcNull: not an error, an operation that completes at once. It never
// reaches a user.
var errProcNull = errors.New("endpoint: ProcNull")

// nullSend validates the rest of a send to ProcNull (its source rank and
// tag must still be valid, as MPI requires) and returns errProcNull.
func nullSend(c Comm, src, tag int) error {
	if src < 0 || src >= len(c.Addrs) {
		return fmt.Errorf("%w: source %d, communicator size %d", ErrRank, src, len(c.Addrs))
	}
	if tag < 0 || tag > MaxTag {
		return fmt.Errorf("%w: %d (want 0..%d)", ErrTag, tag, MaxTag)
	}
	return errProcNull
}

// nullStatus is the status of a receive from, or a probe of, ProcNull.
var nullStatus = Status{Source: ProcNull, Tag: int32(AnyTag)}

// completeNull completes receive r from ProcNull.
func completeNull(r *Request) {
	r.status = nullStatus
	r.complete()
}
