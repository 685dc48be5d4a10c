package comm

import "github.com/fibermpi/fibermpi/endpoint"

// Message is a message that Mprobe or Improbe matched and removed from
// matching, for Mrecv or Imrecv (see endpoint.Message).
type Message = endpoint.Message

// Mprobe waits for a message from src (or AnySource) with tag (or AnyTag),
// removes it from matching and returns it with its status (Count in
// elements of T), for Mrecv: no other caller can receive it in between, so
// with several threads receiving on one endpoint it is the race-free way
// to size a buffer first (Probe then Recv is not). A fiber yields while it
// waits, a goroutine parks. Receive every Message it returns.
func (c *Comm[T]) Mprobe(src, tag int) (*Message, Status, error) {
	if c.freed() {
		return nil, Status{}, ErrFreed
	}
	m, err := c.ep.Mprobe(c.c, src, tag)
	if err != nil {
		return nil, Status{}, err
	}
	return m, statusOf(m.Status(), c.size), nil
}

// Improbe is Mprobe that does not wait: ok is false, and nothing changes,
// when no message matches now.
func (c *Comm[T]) Improbe(src, tag int) (m *Message, st Status, ok bool, err error) {
	if c.freed() {
		return nil, Status{}, false, ErrFreed
	}
	m, ok, err = c.ep.Improbe(c.c, src, tag)
	if err != nil || !ok {
		return nil, Status{}, false, err
	}
	return m, statusOf(m.Status(), c.size), true, nil
}

// Mrecv receives the message m, which Mprobe or Improbe returned on this
// communicator, into buf, as Recv would. Any caller of the endpoint that
// probed it may call it, once (endpoint.ErrMessageUsed the second time).
// A fiber yields while a large message is transferred, a goroutine parks.
func (c *Comm[T]) Mrecv(m *Message, buf []T) (Status, error) {
	q, err := c.Imrecv(m, buf)
	if err != nil {
		return Status{}, err
	}
	return q.Wait()
}

// Imrecv starts the receive of the message m into buf; the buffer belongs
// to the request until it completes.
func (c *Comm[T]) Imrecv(m *Message, buf []T) (*Request[T], error) {
	if c.freed() {
		return nil, ErrFreed
	}
	r, err := c.ep.Imrecv(m, c.bytes(buf))
	if err != nil {
		return nil, err
	}
	return c.request(r, nil), nil
}
