package comm

import (
	"context"

	"github.com/fibermpi/fibermpi/endpoint"
)

// The ctx forms of blocking calls. A deadline is plausible where the
// caller waits for something that may never come and can walk away
// cleanly: a receive (withdrawn with Cancel), a probe (nothing to
// withdraw). Sends have none: a send that has started cannot be withdrawn
// (Cancel refuses sends), so after a deadline the data would still be
// owed; bound them with RunContext, which ends the job. Blocking
// collectives have none either: a rank that leaves a collective early
// leaves the others inside it, and the next collective on the communicator
// would meet the wrong one. For a collective with a deadline, start the
// nonblocking form and use CollRequest.WaitContext, knowing that the
// request must still complete (or the job end) before its buffers are
// free.

// RecvContext is Recv until ctx ends: then the receive is withdrawn and
// it returns ctx's error, unless a message matched first (then it
// receives it as Recv would). A fiber yields, a goroutine parks.
func (c *Comm[T]) RecvContext(ctx context.Context, buf []T, src, tag int) (Status, error) {
	if ctx.Done() == nil {
		return c.Recv(buf, src, tag)
	}
	q, err := c.Irecv(buf, src, tag)
	if err != nil {
		return Status{}, err
	}
	_, err = q.WaitContext(ctx)
	if _, done := q.Test(); done {
		return q.Wait() // complete: its own status and error
	}
	if q.Cancel() {
		q.Wait() // complete at once, cancelled
		return Status{}, err
	}
	return q.Wait() // matched as ctx ended: the message is ours
}

// ProbeContext is Probe until ctx ends: then it returns ctx's error. A
// fiber yields between looks, a goroutine lets others run.
func (c *Comm[T]) ProbeContext(ctx context.Context, src, tag int) (Status, error) {
	if c.freed() {
		return Status{}, ErrFreed
	}
	for {
		st, ok, err := c.Iprobe(src, tag)
		if err != nil || ok {
			return st, err
		}
		if err := ctx.Err(); err != nil {
			return Status{}, err
		}
		c.ep.Progress()
		pause(c.ep.Waiter())
	}
}

// MprobeContext is Mprobe until ctx ends: then it returns ctx's error and
// no message is taken. A fiber yields between looks, a goroutine lets
// others run.
func (c *Comm[T]) MprobeContext(ctx context.Context, src, tag int) (*Message, Status, error) {
	if c.freed() {
		return nil, Status{}, ErrFreed
	}
	var m *endpoint.Message
	var err error
	if ctx.Done() == nil {
		m, err = c.ep.Mprobe(c.c, src, tag)
	} else {
		m, err = c.mprobeContext(ctx, src, tag)
	}
	if err != nil {
		return nil, Status{}, err
	}
	return m, statusOf(m.Status(), c.size), nil
}
