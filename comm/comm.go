package comm

import (
	"fmt"
	"math/bits"
	"unsafe"

	"github.com/fibermpi/fibermpi/datatype"
	"github.com/fibermpi/fibermpi/endpoint"
	"github.com/fibermpi/fibermpi/fiber"
)

// Wildcards for receives, the largest tag, and the null process.
const (
	AnySource = endpoint.AnySource
	AnyTag    = endpoint.AnyTag
	MaxTag    = endpoint.MaxTag
	// ProcNull is a rank every send, receive and probe accepts and that
	// takes part in nothing (MPI_PROC_NULL): a send to it completes at
	// once; a receive from it completes at once, leaves its buffer alone
	// and has Status{Source: ProcNull, Tag: AnyTag}. The neighbour past
	// the edge of a domain, so that edge ranks need no special case.
	ProcNull = endpoint.ProcNull
)

// Status describes a received (or probed) message in elements of T.
type Status struct {
	Source int   // sender's rank
	Tag    int   // message tag
	Count  int   // whole elements of T received (Bytes/size of T, rounded down)
	Bytes  int   // bytes received
	Err    error // nil, a *endpoint.TruncateError, a *PartialError, endpoint.ErrCancelled, ...
}

// PartialError reports a message that is not a whole number of elements
// of the receiving Comm's type (a sender with another element type, or a
// layout that does not match): Status.Count counts the whole elements, and
// the bytes after them are in the buffer too. errors.Is(err, ErrPartial)
// holds. MPI's MPI_Get_count answers MPI_UNDEFINED here.
type PartialError struct {
	Bytes int // bytes received
	Size  int // bytes per element
}

// Error describes the remainder.
func (e *PartialError) Error() string {
	return fmt.Sprintf("comm: message of %d bytes is not a whole number of %d-byte elements", e.Bytes, e.Size)
}

// Is makes errors.Is(err, ErrPartial) true.
func (e *PartialError) Is(target error) bool { return target == ErrPartial }

func statusOf(st endpoint.Status, elem int) Status {
	return Status{Source: int(st.Source), Tag: int(st.Tag), Count: elements(st.Count, elem), Bytes: st.Count, Err: st.Err}
}

// elements returns how many whole elements of elem bytes n bytes hold.
func elements(n, elem int) int {
	switch elem {
	case 1:
		return n
	case 2, 4, 8, 16: // the common sizes: a shift, not a division
		return n >> bits.TrailingZeros(uint(elem))
	}
	return n / elem
}

// checkWhole sets a received message's status error to a *PartialError if
// it is not a whole number of elements (and had no error): one multiply,
// kept out of statusOf so that it inlines.
func checkWhole(s *Status, elem int) {
	if s.Err == nil && !whole(s.Count, s.Bytes, elem) {
		s.Err = &PartialError{Bytes: s.Bytes, Size: elem}
	}
}

// whole reports whether a message of bytes bytes is count whole elements
// of elem bytes, nothing left over.
func whole(count, bytes, elem int) bool { return count*elem == bytes }

// Comm is a typed view of a communicator for one registered caller: the
// ranks it reaches, the caller's rank in it, and the element type T of its
// buffers. T is a fixed-size type (numbers, bool, arrays and structs of
// them; see datatype.Of); buffers travel as their bytes, without a copy
// for contiguous data. Derived layouts (every other element, a column, a
// sub-block) go through the *Layout methods.
//
// A Comm belongs to the caller registered with its endpoint handle; other
// fibers or goroutines make their own from their own handles. Every blocking
// method yields a fiber and parks a goroutine.
type Comm[T any] struct {
	ep   *endpoint.Endpoint
	c    endpoint.Comm
	rank int
	elem datatype.Type
	size int         // bytes per element
	x    *state      // shared by As views: collectives, references, name (state.go)
	sent *Request[T] // the completed request eager Isends return
}

// World returns the typed view of ep's world communicator, in which the
// caller is rank ep.Rank(). ep must be registered (endpoint.Run's handles
// are).
func World[T any](ep *endpoint.Endpoint) (*Comm[T], error) {
	return New[T](ep, ep.World(), ep.Rank())
}

// New returns the typed view of communicator c for the caller registered
// with ep, which is rank `rank` in c.
func New[T any](ep *endpoint.Endpoint, c endpoint.Comm, rank int) (*Comm[T], error) {
	dt, err := datatype.Of[T]()
	if err != nil {
		return nil, err
	}
	if rank < 0 || rank >= c.Size() {
		return nil, fmt.Errorf("%w: rank %d of a communicator of %d", endpoint.ErrRank, rank, c.Size())
	}
	if c.Addrs[rank] != ep.Addr() {
		return nil, fmt.Errorf("%w: rank %d of the communicator is endpoint %d, not the handle's endpoint %d",
			endpoint.ErrRank, rank, c.Addrs[rank], ep.Addr())
	}
	if ep.Waiter() == nil {
		return nil, endpoint.ErrNotRegistered
	}
	return &Comm[T]{ep: ep, c: c, rank: rank, elem: dt, size: dt.Size()}, nil
}

// As returns a view of the same communicator with element type U.
func As[U, T any](c *Comm[T]) (*Comm[U], error) {
	u, err := New[U](c.ep, c.c, c.rank)
	if err == nil {
		u.x = c.st()
	}
	return u, err
}

// Rank returns the caller's rank.
func (c *Comm[T]) Rank() int { return c.rank }

// Size returns the number of ranks.
func (c *Comm[T]) Size() int { return c.c.Size() }

// Endpoint returns the handle the communicator sends and receives through.
func (c *Comm[T]) Endpoint() *endpoint.Endpoint { return c.ep }

// Info returns the communicator as the endpoint layer sees it.
func (c *Comm[T]) Info() endpoint.Comm { return c.c }

// Waiter returns the caller's waiter.
func (c *Comm[T]) Waiter() *fiber.Waiter { return c.ep.Waiter() }

// freed reports whether Free was called on the communicator (through this
// view or another view of it).
func (c *Comm[T]) freed() bool { return c.x != nil && c.x.freed }

// Send sends buf to rank dst with tag, returning when buf may be reused: at
// once for a message up to the eager limit, after the transfer into the
// receive buffer for a larger one.
func (c *Comm[T]) Send(buf []T, dst, tag int) error {
	if c.freed() {
		return ErrFreed
	}
	return c.ep.Send(c.c, c.rank, dst, tag, c.bytes(buf))
}

// Ssend sends in synchronous mode: it returns once the matching receive has
// started.
func (c *Comm[T]) Ssend(buf []T, dst, tag int) error {
	if c.freed() {
		return ErrFreed
	}
	return c.ep.Ssend(c.c, c.rank, dst, tag, c.bytes(buf))
}

// Recv receives into buf a message from src (or AnySource) with tag (or
// AnyTag). A message longer than buf is truncated: the error is a
// *endpoint.TruncateError (errors.Is endpoint.ErrTruncate) and the message
// is consumed. A message that is not a whole number of elements gives a
// *PartialError.
func (c *Comm[T]) Recv(buf []T, src, tag int) (Status, error) {
	if c.freed() {
		return Status{}, ErrFreed
	}
	st, err := c.ep.Recv(c.c, src, tag, c.bytes(buf))
	// The Status is built once, in the return: a local one whose address
	// checkWhole took was copied through the stack in 16-byte moves over
	// its 8-byte stores, a store-forwarding stall right after a fiber
	// resumes (latency_mt).
	n, e := elements(st.Count, c.size), st.Err
	if err == nil && !whole(n, st.Count, c.size) {
		e = &PartialError{Bytes: st.Count, Size: c.size}
		err = e
	}
	return Status{Source: int(st.Source), Tag: int(st.Tag), Count: n, Bytes: st.Count, Err: e}, err
}

// Sendrecv sends sendbuf to dst and receives into recvbuf from src, at
// once, so that a ring of Sendrecv calls cannot deadlock.
func (c *Comm[T]) Sendrecv(sendbuf []T, dst, sendtag int, recvbuf []T, src, recvtag int) (Status, error) {
	if c.freed() {
		return Status{}, ErrFreed
	}
	rr, err := c.Irecv(recvbuf, src, recvtag)
	if err != nil {
		return Status{}, err
	}
	if err := c.Send(sendbuf, dst, sendtag); err != nil {
		rr.Cancel()
		rr.Wait() // cancelled, or completed by a message that matched first
		return Status{}, err
	}
	return rr.Wait()
}

// Isend starts sending buf to dst. buf must not change until the request
// completes. A message up to the eager limit is copied out at once, and its
// request is already complete (it may be the same completed request as
// earlier eager sends on this Comm): eager Isends allocate nothing.
func (c *Comm[T]) Isend(buf []T, dst, tag int) (*Request[T], error) {
	return c.isend(c.bytes(buf), dst, tag)
}

// isend sends data, eagerly if it may.
func (c *Comm[T]) isend(data []byte, dst, tag int) (*Request[T], error) {
	if c.freed() {
		return nil, ErrFreed
	}
	if c.ep.Eager(len(data)) {
		r, err := c.ep.IsendInto(nil, c.c, c.rank, dst, tag, data)
		if err != nil {
			return nil, err
		}
		if c.sent == nil {
			c.sent = c.request(r, nil)
		}
		return c.sent, nil
	}
	q := c.request(nil, c.hold())
	r, err := c.ep.IsendInto(&q.p.own, c.c, c.rank, dst, tag, data)
	if err != nil {
		q.p.release()
		return nil, err
	}
	q.p.r = r
	return q, nil
}

// request makes a request of this communicator's caller for endpoint
// request r, holding hold (c.hold(), or nil).
func (c *Comm[T]) request(r *endpoint.Request, hold *state) *Request[T] {
	return &Request[T]{p2p{r: r, w: c.ep.Waiter(), size: c.size, hold: hold}}
}

// Issend is Isend in synchronous mode: the request completes once the
// matching receive has started.
func (c *Comm[T]) Issend(buf []T, dst, tag int) (*Request[T], error) {
	if c.freed() {
		return nil, ErrFreed
	}
	r, err := c.ep.Issend(c.c, c.rank, dst, tag, c.bytes(buf))
	if err != nil {
		return nil, err
	}
	return c.request(r, c.hold()), nil
}

// Irecv posts a receive into buf. buf must not be touched until the request
// completes.
func (c *Comm[T]) Irecv(buf []T, src, tag int) (*Request[T], error) {
	if c.freed() {
		return nil, ErrFreed
	}
	q := c.request(nil, c.hold())
	if err := c.ep.IrecvInto(&q.p.own, c.c, src, tag, c.bytes(buf)); err != nil {
		q.p.release()
		return nil, err
	}
	q.p.r = &q.p.own
	return q, nil
}

// IrecvInto is Irecv into a request the caller provides and reuses, so a
// loop of receives allocates nothing: q must be new (its zero value) or
// complete, and a pending q gets endpoint.ErrRequestActive. Whatever q held
// before (status, Done channel) is dropped; nothing else may use q
// meanwhile. On success q is the new receive's request.
func (c *Comm[T]) IrecvInto(q *Request[T], buf []T, src, tag int) error {
	if c.freed() {
		return ErrFreed
	}
	if q == nil {
		return endpoint.ErrNilRequest
	}
	p := &q.p
	if err := p.recycle(c.ep.Waiter(), c.size); err != nil {
		return err
	}
	if err := c.ep.IrecvInto(&p.own, c.c, src, tag, c.bytes(buf)); err != nil {
		return err // p.r stays nil: p is as new
	}
	p.r, p.hold = &p.own, c.hold()
	return nil
}

// IsendInto is Isend into a request the caller provides and reuses, on the
// same terms as IrecvInto.
func (c *Comm[T]) IsendInto(q *Request[T], buf []T, dst, tag int) error {
	if c.freed() {
		return ErrFreed
	}
	if q == nil {
		return endpoint.ErrNilRequest
	}
	p := &q.p
	if err := p.recycle(c.ep.Waiter(), c.size); err != nil {
		return err
	}
	r, err := c.ep.IsendInto(&p.own, c.c, c.rank, dst, tag, c.bytes(buf))
	if err != nil {
		return err // p.r stays nil: p is as new
	}
	p.r = r
	if r != &p.own {
		// The shared request of an eager send, complete from the start
		// with the zero status, which is what settle would make of it:
		// nothing to hold, nothing to settle.
		p.finished, p.st = true, Status{}
	} else {
		p.hold = c.hold()
	}
	return nil
}

// bytes views buf as bytes, in place.
func (c *Comm[T]) bytes(buf []T) []byte {
	if len(buf) == 0 {
		return nil
	}
	// Safety: New checked with datatype.Of that T is a fixed-size type
	// without pointers, c.size bytes long, so buf's elements are
	// len(buf)*c.size plain bytes; the view shares buf's backing array and
	// keeps it alive. (datatype.Bytes does the same after a type lookup
	// that costs a sync.Map load per call.)
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(buf))), len(buf)*c.size)
}

// Iprobe reports whether a message from src with tag has arrived, and its
// status, without receiving it.
func (c *Comm[T]) Iprobe(src, tag int) (Status, bool, error) {
	if c.freed() {
		return Status{}, false, ErrFreed
	}
	st, ok, err := c.ep.Iprobe(c.c, src, tag)
	return statusOf(st, c.size), ok, err
}

// Probe waits until a message from src with tag has arrived and returns its
// status, without receiving it.
func (c *Comm[T]) Probe(src, tag int) (Status, error) {
	if c.freed() {
		return Status{}, ErrFreed
	}
	st, err := c.ep.Probe(c.c, src, tag)
	return statusOf(st, c.size), err
}

// SendLayout sends count instances of the layout dt, read from buf: for
// example every other element of a row (datatype.Vector). dt's elements must
// be of type T. A contiguous layout is sent without a copy; any other is
// packed first.
func (c *Comm[T]) SendLayout(buf []T, count int, dt datatype.Type, dst, tag int) error {
	data, err := c.pack(buf, count, dt)
	if err != nil {
		return err
	}
	return c.ep.Send(c.c, c.rank, dst, tag, data)
}

// RecvLayout receives a message into count instances of the layout dt in
// buf; Status.Count is then in elements of T.
func (c *Comm[T]) RecvLayout(buf []T, count int, dt datatype.Type, src, tag int) (Status, error) {
	r, err := c.IrecvLayout(buf, count, dt, src, tag)
	if err != nil {
		return Status{}, err
	}
	return r.Wait()
}

// IsendLayout starts a send of count instances of dt from buf. The data is
// packed (or viewed, if contiguous) before it returns.
func (c *Comm[T]) IsendLayout(buf []T, count int, dt datatype.Type, dst, tag int) (*Request[T], error) {
	data, err := c.pack(buf, count, dt)
	if err != nil {
		return nil, err
	}
	return c.isend(data, dst, tag)
}

// IrecvLayout posts a receive into count instances of dt in buf; the data
// is unpacked when the request is waited for or tested complete.
func (c *Comm[T]) IrecvLayout(buf []T, count int, dt datatype.Type, src, tag int) (*Request[T], error) {
	if c.freed() {
		return nil, ErrFreed
	}
	if err := datatype.CheckElem[T](dt); err != nil {
		return nil, err
	}
	if view, ok, err := datatype.ContiguousView(c.bytes(buf), count, dt); err != nil {
		return nil, err
	} else if ok {
		r, err := c.ep.Irecv(c.c, src, tag, view)
		if err != nil {
			return nil, err
		}
		return c.request(r, c.hold()), nil
	}
	n, err := datatype.PackedSize(count, dt)
	if err != nil {
		return nil, err
	}
	if _, _, err := datatype.MemSpan(count, dt); err != nil {
		return nil, err
	}
	tmp := make([]byte, n)
	r, err := c.ep.Irecv(c.c, src, tag, tmp)
	if err != nil {
		return nil, err
	}
	dst := c.bytes(buf)
	q := c.request(r, c.hold())
	q.p.unpack = func(got int) error {
		// A shorter message fills the layout's first got bytes.
		u, err := datatype.NewUnpacker(dst, count, dt)
		if err != nil {
			return err
		}
		_, err = u.Write(tmp[:got])
		return err
	}
	return q, nil
}

// pack checks dt against T and returns the bytes to send.
func (c *Comm[T]) pack(buf []T, count int, dt datatype.Type) ([]byte, error) {
	if c.freed() {
		return nil, ErrFreed
	}
	if err := datatype.CheckElem[T](dt); err != nil {
		return nil, err
	}
	if view, ok, err := datatype.ContiguousView(c.bytes(buf), count, dt); err != nil || ok {
		return view, err
	}
	n, err := datatype.PackedSize(count, dt)
	if err != nil {
		return nil, err
	}
	out := make([]byte, n)
	if _, err := datatype.PackSlice(out, buf, count, dt); err != nil {
		return nil, err
	}
	return out, nil
}
