package comm

import (
	"bytes"
	"context"
	"encoding/gob"
	"fmt"

	"github.com/fibermpi/fibermpi/endpoint"
	"github.com/fibermpi/fibermpi/fiber"
)

// Object messages. Send, Recv and the collectives move fixed-size elements
// as they lie in memory, without a copy. A string, a map, a struct with a
// slice or any other Go value travels instead through SendValue,
// RecvValue and their kin, which encode it with the communicator's Codec
// (encoding/gob unless SetCodec chose another) into one message: the
// receiver needs no size in advance (RecvValue sizes its buffer with
// Mprobe, so threads sharing an endpoint cannot take each other's
// message). It costs an encoding, a decoding and allocations per message:
// keep the typed path for arrays of numbers (BenchmarkValue compares).

// A Codec turns values into bytes and back. Both sides of a message must
// use the same one. Implementations must be safe for concurrent use.
type Codec interface {
	// Marshal returns v's encoding.
	Marshal(v any) ([]byte, error)
	// Unmarshal decodes data into the value ptr points to.
	Unmarshal(data []byte, ptr any) error
}

// Gob is the default Codec: encoding/gob, one self-describing stream per
// message (so each message carries its type description).
var Gob Codec = gobCodec{}

type gobCodec struct{}

func (gobCodec) Marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func (gobCodec) Unmarshal(data []byte, ptr any) error {
	return gob.NewDecoder(bytes.NewReader(data)).Decode(ptr)
}

// SetCodec sets the Codec of the caller's views of the communicator (nil
// restores Gob). Every rank must use the same one.
func (c *Comm[T]) SetCodec(cd Codec) { c.st().codec = cd }

func (c *Comm[T]) codec() Codec {
	if c.x != nil && c.x.codec != nil {
		return c.x.codec
	}
	return Gob
}

// encode marshals v with c's codec, naming the codec in the error.
func encode[T any](c *Comm[T], v any) ([]byte, error) {
	data, err := c.codec().Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("comm: encoding a %T: %w", v, err)
	}
	return data, nil
}

func decode[T, V any](c *Comm[T], data []byte, ptr *V) error {
	if err := c.codec().Unmarshal(data, ptr); err != nil {
		return fmt.Errorf("comm: decoding a %T: %w", *ptr, err)
	}
	return nil
}

// SendValue sends v, a Go value of any type the codec can encode, to rank
// dst of c with tag, as one message; the receiver takes it with RecvValue
// (or IrecvValue) into a value of the same type. It returns when the
// encoding may be dropped; v may be changed at once. A fiber yields while
// it waits, a goroutine parks.
func SendValue[T, V any](c *Comm[T], v V, dst, tag int) error {
	if c.freed() {
		return ErrFreed
	}
	data, err := encode(c, v)
	if err != nil {
		return err
	}
	return c.ep.Send(c.c, c.rank, dst, tag, data)
}

// IsendValue starts a send of v; it is encoded before IsendValue returns,
// so v may be changed at once. The request's Status counts bytes.
func IsendValue[T, V any](c *Comm[T], v V, dst, tag int) (*Request[byte], error) {
	if c.freed() {
		return nil, ErrFreed
	}
	data, err := encode(c, v)
	if err != nil {
		return nil, err
	}
	r, err := c.ep.Isend(c.c, c.rank, dst, tag, data)
	if err != nil {
		return nil, err
	}
	return &Request[byte]{p2p{r: r, w: c.ep.Waiter(), size: 1}}, nil
}

// RecvValue receives a value that SendValue sent, from src (or AnySource)
// with tag (or AnyTag), into *ptr; Status.Count and Bytes are the
// encoding's size in bytes. A fiber yields while it waits, a goroutine
// parks. A message that does not decode into *ptr is an error naming the
// type; the message is consumed.
func RecvValue[T, V any](c *Comm[T], ptr *V, src, tag int) (Status, error) {
	return RecvValueContext(context.Background(), c, ptr, src, tag)
}

// RecvValueContext is RecvValue until ctx ends; then it returns ctx's
// error and no message is taken.
func RecvValueContext[T, V any](ctx context.Context, c *Comm[T], ptr *V, src, tag int) (Status, error) {
	if c.freed() {
		return Status{}, ErrFreed
	}
	var m *endpoint.Message
	var err error
	if ctx.Done() == nil {
		m, err = c.ep.Mprobe(c.c, src, tag)
	} else {
		m, err = c.mprobeContext(ctx, src, tag)
	}
	if err != nil {
		return Status{}, err
	}
	data := make([]byte, m.Status().Count)
	est, err := c.ep.Mrecv(m, data)
	st := statusOf(est, 1)
	if err != nil {
		return st, err
	}
	return st, decode(c, data, ptr)
}

// mprobeContext waits for a message by Improbe until ctx ends, yielding a
// fiber (a goroutine pauses) between looks.
func (c *Comm[T]) mprobeContext(ctx context.Context, src, tag int) (*endpoint.Message, error) {
	for {
		m, ok, err := c.ep.Improbe(c.c, src, tag)
		if err != nil || ok {
			return m, err
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		c.ep.Progress()
		pause(c.ep.Waiter())
	}
}

// IrecvValue returns a request for a value that SendValue or IsendValue
// sent, from src (or AnySource) with tag (or AnyTag), into *ptr. The size
// of a value is not known before its message arrives, so no buffer is
// posted: the message is matched by the request's first Test or Wait that
// finds one (with Improbe, race-free), not by IrecvValue itself, and a
// receive posted meanwhile on the same source and tag may take it first.
// It is not a Waitable; Wait it on its own.
func IrecvValue[T, V any](c *Comm[T], ptr *V, src, tag int) (*ValueRequest[V], error) {
	if c.freed() {
		return nil, ErrFreed
	}
	q := &ValueRequest[V]{w: c.ep.Waiter(), progress: c.ep.Progress}
	q.try = func() (bool, error) {
		m, ok, err := c.ep.Improbe(c.c, src, tag)
		if err != nil || !ok {
			return false, err
		}
		data := make([]byte, m.Status().Count)
		est, err := c.ep.Mrecv(m, data)
		q.st = statusOf(est, 1)
		if err == nil {
			err = decode(c, data, ptr)
		}
		return true, err
	}
	return q, nil
}

// A ValueRequest is a pending IrecvValue. It belongs to its caller.
type ValueRequest[V any] struct {
	w        *fiber.Waiter
	progress func() bool
	try      func() (bool, error)
	done     bool
	st       Status
	err      error
}

// Test looks for the message once and, if it has come, receives and
// decodes it; it reports whether the request is complete. It never blocks.
func (q *ValueRequest[V]) Test() (Status, bool, error) {
	if !q.done {
		q.done, q.err = q.try()
	}
	return q.st, q.done, q.err
}

// Wait waits for the value and returns its status and error. A fiber
// yields between looks, a goroutine lets others run.
func (q *ValueRequest[V]) Wait() (Status, error) {
	return q.WaitContext(context.Background())
}

// WaitContext is Wait until ctx ends: then it returns ctx's error and the
// request stays pending (no message is taken).
func (q *ValueRequest[V]) WaitContext(ctx context.Context) (Status, error) {
	for {
		if st, done, err := q.Test(); done {
			return st, err
		}
		if err := ctx.Err(); err != nil {
			return Status{}, err
		}
		q.progress()
		pause(q.w)
	}
}

// BcastValue copies root's *ptr to every rank's *ptr. Collective: every
// rank calls it with the same root. It is two broadcasts (the size, then
// the encoding).
func BcastValue[T, V any](c *Comm[T], ptr *V, root int) error {
	lc, err := As[int64](c)
	if err != nil {
		return err
	}
	bc, err := As[byte](c)
	if err != nil {
		return err
	}
	var data []byte
	n := []int64{0}
	if c.rank == root {
		if data, err = encode(c, *ptr); err != nil {
			return err
		}
		n[0] = int64(len(data))
	}
	if err := lc.Bcast(n, root); err != nil {
		return err
	}
	if c.rank != root {
		data = make([]byte, n[0])
	}
	if err := bc.Bcast(data, root); err != nil {
		return err
	}
	if c.rank == root {
		return nil
	}
	return decode(c, data, ptr)
}

// GatherValue collects every rank's v at root, which gets them in rank
// order (the others get nil). Collective: every rank calls it with the
// same root. It is a Gather of the sizes, then a Gatherv of the encodings.
func GatherValue[T, V any](c *Comm[T], v V, root int) ([]V, error) {
	lc, err := As[int64](c)
	if err != nil {
		return nil, err
	}
	bc, err := As[byte](c)
	if err != nil {
		return nil, err
	}
	data, err := encode(c, v)
	if err != nil {
		return nil, err
	}
	var sizes []int64
	if c.rank == root {
		sizes = make([]int64, c.Size())
	}
	if err := lc.Gather([]int64{int64(len(data))}, sizes, root); err != nil {
		return nil, err
	}
	var all []byte
	var counts, displs []int
	if c.rank == root {
		counts, displs = make([]int, len(sizes)), make([]int, len(sizes))
		total := 0
		for i, s := range sizes {
			counts[i], displs[i] = int(s), total
			total += int(s)
		}
		all = make([]byte, total)
	}
	if err := bc.Gatherv(data, all, counts, displs, root); err != nil {
		return nil, err
	}
	if c.rank != root {
		return nil, nil
	}
	out := make([]V, len(sizes))
	for i := range out {
		if err := decode(c, all[displs[i]:displs[i]+counts[i]], &out[i]); err != nil {
			return nil, fmt.Errorf("rank %d's value: %w", i, err)
		}
	}
	return out, nil
}
