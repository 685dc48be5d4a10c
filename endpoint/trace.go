package endpoint

import (
	"fmt"
	"os"

	"github.com/fibermpi/fibermpi/fiber"
	"github.com/fibermpi/fibermpi/packet"
	"github.com/fibermpi/fibermpi/rdma"
	"github.com/fibermpi/fibermpi/trace"
)

// This file holds the tracer's side of the endpoint (package trace): the
// hot paths test core.tr for nil and come here only when tracing is on.

// EnvTrace names the environment variable that turns tracing on at Init
// when Options.Trace is empty: its value is the trace file's path.
const EnvTrace = "FIBERMPI_TRACE"

// tracePath returns where the process writes its trace ("" for nowhere):
// the path asked for in a job of one process, its part's path in a job of
// several (trace.PartPath; cmd/fmpi-trace merges the parts).
func (p *Process) tracePath() string {
	path := p.opts.Trace
	if path == "" {
		path = os.Getenv(EnvTrace)
	}
	if path == "" || p.procs == 1 {
		return path
	}
	return trace.PartPath(path, p.rank)
}

// Trace returns the process's trace recorder, nil when tracing is off
// (Options.Trace and FIBERMPI_TRACE both empty). Its Data is what
// Finalize writes.
func (p *Process) Trace() *trace.Recorder { return p.rec }

// Tracer returns the recorder of the handle's endpoint, nil when tracing
// is off; layers above record their own spans (collectives) with it.
func (e *Endpoint) Tracer() *trace.Rank { return e.c.tr }

// writeTrace ends the recording and writes it to the trace file.
func (p *Process) writeTrace() error {
	if p.rec == nil {
		return nil
	}
	p.rec.Stop()
	if p.traceFile == "" {
		return nil
	}
	if err := p.rec.Data().WriteFile(p.traceFile); err != nil {
		return fmt.Errorf("endpoint: writing the trace: %w", err)
	}
	return nil
}

func (e *Endpoint) tracedIsend(r *Request, c Comm, me, dst, tag int, data []byte, sync bool) (*Request, error) {
	t0 := trace.Now()
	e.tracing = true
	q, err := e.isendInto(r, c, me, dst, tag, data, sync)
	e.tracing = false
	if err == nil && dst != ProcNull {
		e.c.tr.Sent(t0, int32(c.Addrs[dst]), int32(tag), c.Context, len(data))
	}
	return q, err
}

func (e *Endpoint) tracedSend(c Comm, me, dst, tag int, data []byte, sync bool) error {
	t0 := trace.Now()
	e.tracing = true
	err := e.blockingSend(c, me, dst, tag, data, sync)
	e.tracing = false
	if err == nil && dst != ProcNull {
		e.c.tr.Sent(t0, int32(c.Addrs[dst]), int32(tag), c.Context, len(data))
	}
	return err
}

// tracedRecv is Recv with a span around it.
func (e *Endpoint) tracedRecv(c Comm, src, tag int, buf []byte) (Status, error) {
	if err := e.enter(); err != nil {
		return Status{}, err
	}
	defer e.leave()
	sp := e.c.tr.Begin("fibermpi.Recv")
	r := e.scratch
	r.reset(reqRecv, e.c, e.waiter)
	if err := e.post(c, src, tag, buf, r); err != nil {
		return Status{}, err
	}
	_ = r.WaitFor(e.waiter)
	peer := int32(trace.NoPeer)
	if s := int(r.status.Source); r.status.Err == nil && s >= 0 && s < len(c.Addrs) {
		peer = int32(c.Addrs[s])
	}
	sp.End(trace.KindRecv, peer, r.status.Tag, c.Context, r.status.Count, "")
	return r.status, r.status.Err
}

// tracedWait is WaitFor's wait, recorded: the caller is parked (a fiber
// yields, a goroutine parks) from the start of the span to its end.
func (r *Request) tracedWait(w *fiber.Waiter) {
	sp := r.ep.tr.Begin("fibermpi.Wait")
	if r.ep.p.opts.Progress == ProgressCaller {
		r.poll(w)
	} else {
		r.ev.Wait(w)
	}
	sp.End(trace.KindWait, trace.NoPeer, 0, 0, 0, "")
}

// traceMatched records a receive meeting an eager packet or an RTS.
func (c *core) traceMatched(pk *packet.Packet) {
	n := pk.Len()
	if pk.Kind == packet.KindRTS {
		n = int(pk.Size)
	}
	c.tr.Instant(trace.KindMatch, int32(pk.From), pk.Tag, pk.Context, n)
}

// tracedPut is the transport's Put of a rendezvous send's data, recorded.
func (c *core) tracedPut(to rdma.Addr, region rdma.Region, data []byte) error {
	sp := c.tr.Begin("fibermpi.Put")
	err := c.p.tr.Put(to, region, 0, data)
	sp.End(trace.KindPut, int32(to), 0, 0, len(data), "")
	return err
}

// traceDone records a rendezvous Done; for an offered receive, whose
// sender matched it, it is also the match.
func (c *core) traceDone(r *Request, from rdma.Addr, offered bool, n uint64) {
	k := r.key
	c.tr.Instant(trace.KindDone, int32(from), k.Tag(), k.Context(), int(n))
	if offered {
		c.tr.Instant(trace.KindMatch, int32(from), k.Tag(), k.Context(), int(n))
	}
}
