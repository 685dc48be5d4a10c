package endpoint

import (
	"errors"

	"github.com/fibermpi/fibermpi/packet"
)

// Matched probe (MPI_Mprobe, MPI_Mrecv). Probe then Recv is racy when
// several threads receive on one endpoint: between the two another thread
// may take the probed message, and the Recv then takes another one or
// blocks. Mprobe matches a message and removes it from matching at once,
// handing it to the caller as a Message that only Mrecv can receive.
//
// Mprobe posts a receive of kind reqHold, with no buffer, through the
// ordinary matching path: whichever comes first, the message or the
// receive, the table joins them once, as for any receive (so wildcards and
// the non-overtaking order hold). When they meet, matched (or
// deliverDirect) sees reqHold and parks the packet (or a copy of the data
// delivered directly) in the request instead of delivering it; Mrecv then
// finishes what matched would have done, into the buffer it is given: it
// copies an eager message, or answers the RTS of a rendezvous one.

// ErrMessageUsed is returned by Mrecv and Imrecv for a Message already
// received (a Message is received exactly once).
var (
	ErrMessageUsed = errors.New("endpoint: message already received")
	// ErrMessageEndpoint is returned by Mrecv and Imrecv called through
	// another endpoint than the one that probed the message.
	ErrMessageEndpoint = errors.New("endpoint: message probed at another endpoint")
)

// A Message is a message that Mprobe or Improbe matched and removed from
// matching: no receive but Mrecv (or Imrecv) with this handle can get it,
// whichever thread calls. Receive every Message: until then it holds a
// packet of the endpoint's pool. A Message from ProcNull (MPI's
// MPI_MESSAGE_NO_PROC) receives nothing, at once.
type Message struct {
	r    Request // the reqHold receive that matched the message
	used bool
}

// Status describes the message: its source, tag and size in bytes.
func (m *Message) Status() Status {
	st := m.r.status
	st.Err = nil
	return st
}

// hold keeps the message pk that Mprobe's receive r matched (matched
// calls it).
func (c *core) hold(r *Request, pk *packet.Packet) {
	r.held = pk
	if pk.Kind == packet.KindEager {
		r.status.Count = pk.Len()
	} else {
		r.status.Count = int(pk.Size)
	}
	r.complete()
}

// Mprobe waits for a message from src (or AnySource) with tag (or AnyTag)
// on c, removes it from matching and returns it, for Mrecv. A fiber yields
// while it waits, a goroutine parks. Unlike Probe, no other caller can
// receive the message in between: with several threads receiving on one
// endpoint, it is the race-free way to learn a message's size before
// receiving it.
func (e *Endpoint) Mprobe(c Comm, src, tag int) (*Message, error) {
	if err := e.enter(); err != nil {
		return nil, err
	}
	defer e.leave()
	m := &Message{}
	r := &m.r
	r.kind, r.ep, r.owner = reqHold, e.c, e.rec
	key, err := recvKey(c, src, tag)
	if err != nil {
		if err == errProcNull {
			completeNull(r)
			return m, nil
		}
		return nil, err
	}
	r.key = key
	pk, _, ok, err := e.c.table.Post(key, r)
	if err != nil {
		return nil, err
	}
	if ok {
		r.status.Source, r.status.Tag = pk.Source, pk.Tag
		e.c.hold(r, pk)
		return m, nil
	}
	if err := r.WaitFor(e.waiter); err != nil { // the job ended (sweep)
		return nil, err
	}
	return m, nil
}

// Improbe is Mprobe that does not wait: it returns the message and true if
// one matches now, else nil and false, and then changes nothing.
func (e *Endpoint) Improbe(c Comm, src, tag int) (*Message, bool, error) {
	if err := e.enter(); err != nil {
		return nil, false, err
	}
	defer e.leave()
	m := &Message{}
	r := &m.r
	r.kind, r.ep, r.owner = reqHold, e.c, e.rec
	key, err := recvKey(c, src, tag)
	if err != nil {
		if err == errProcNull {
			completeNull(r)
			return m, true, nil
		}
		return nil, false, err
	}
	if _, _, ok, err := e.c.table.Probe(key); err != nil || !ok {
		return nil, false, err
	}
	// A message matched a moment ago; post to take it (or another one
	// that matches, if another caller took that one).
	r.key = key
	pk, _, ok, err := e.c.table.Post(key, r)
	if err != nil {
		return nil, false, err
	}
	if ok {
		r.status.Source, r.status.Tag = pk.Source, pk.Tag
		e.c.hold(r, pk)
		return m, true, nil
	}
	if e.c.table.Cancel(key, r) {
		return nil, false, nil // another caller took it, and none is left
	}
	// A message arrived and matched r between Post and Cancel: it is
	// ours once its arrival has finished completing r, which it is doing.
	if err := r.WaitFor(e.waiter); err != nil {
		return nil, false, err
	}
	return m, true, nil
}

// Mrecv receives the message m into buf and returns its status, as Recv
// would have: a message longer than buf is truncated (a *TruncateError).
// Any caller registered with the endpoint that probed m may call it, once.
// A fiber yields while a large message is transferred, a goroutine parks.
func (e *Endpoint) Mrecv(m *Message, buf []byte) (Status, error) {
	r, err := e.Imrecv(m, buf)
	if err != nil {
		return Status{}, err
	}
	err = r.WaitFor(e.waiter)
	return r.status, err
}

// Imrecv starts the receive of the message m into buf and returns its
// request; an eager message is complete when it returns.
func (e *Endpoint) Imrecv(m *Message, buf []byte) (*Request, error) {
	if m == nil {
		return nil, ErrNilRequest
	}
	if err := e.enter(); err != nil {
		return nil, err
	}
	defer e.leave()
	h := &m.r
	if m.used {
		return nil, ErrMessageUsed
	}
	if h.ep != e.c {
		return nil, ErrMessageEndpoint
	}
	m.used = true
	r := &Request{kind: reqRecv, ep: e.c, owner: e.rec, key: h.key, buf: buf}
	switch pk := h.held; {
	case h.status.Source == ProcNull:
		completeNull(r)
	case pk != nil:
		h.held = nil
		e.c.matched(e.worker, r, pk)
	default: // delivered directly: the data is in h.buf
		r.status.Source, r.status.Tag = h.status.Source, h.status.Tag
		n := copy(buf, h.buf)
		r.status.Count = n
		if n < len(h.buf) {
			r.status.Err = &TruncateError{Have: len(buf), Got: len(h.buf)}
		}
		h.buf = nil
		r.complete()
	}
	return r, nil
}
