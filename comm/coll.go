package comm

import (
	"fmt"

	"github.com/fibermpi/fibermpi/trace"
)

// Collectives. Every rank of the communicator calls the same collectives
// in the same order, with consistent arguments (the same root, matching
// counts), as in MPI. Each blocking collective is its nonblocking I-form
// followed by Wait; the I-forms return a *CollRequest.
//
// A collective with erroneous arguments ends the job, as MPI's default
// error handler (MPI_ERRORS_ARE_FATAL) does, because the ranks' collectives
// can no longer line up and the others would wait forever:
//
//   - Arguments a rank can check alone (a root out of range, a buffer whose
//     length does not fit the counts and the communicator's size, a zero or
//     non-commutative Op where a commutative one is needed, overlapping
//     buffers) give that rank the error (ErrRoot, a *CountError, ErrOp,
//     ErrNotCommutative, ErrOverlap) before anything is sent;
//   - arguments only the ranks together could check (counts that differ
//     between ranks) give the rank that receives a message of the wrong
//     size a *MismatchError (ErrMismatch), whether the message is longer or
//     shorter than it expected.
//
// Either way that rank ends the job (endpoint.Endpoint.Abort): every other
// rank's blocked or later call returns an *endpoint.AbortError that names
// it and wraps its error, so errors.Is(err, ErrMismatch) (or ErrCount, ...)
// holds at every rank, in the collective or, for a rank that had already
// finished it, in its next call.

// checkRoot validates a root rank.
func checkRoot(root, p int) error {
	if root < 0 || root >= p {
		return fmt.Errorf("%w: root %d of a communicator of %d", ErrRoot, root, p)
	}
	return nil
}

func checkLen(arg string, have, want int) error {
	if have != want {
		return &CountError{Arg: arg, Have: have, Want: want}
	}
	return nil
}

func checkOp[T any](op Op[T]) error {
	if !op.valid() {
		return ErrOp
	}
	return nil
}

func checkDisjoint[T any](a, c []T) error {
	if _, partial := overlap(a, c); partial {
		return ErrOverlap
	}
	return nil
}

// checkV validates counts and displacements against a buffer of n elements.
func checkV(arg string, counts, displs []int, p, n int) error {
	if len(counts) != p {
		return &CountError{Arg: arg + " counts", Have: len(counts), Want: p}
	}
	if len(displs) != p {
		return &CountError{Arg: arg + " displacements", Have: len(displs), Want: p}
	}
	for i := range p {
		if counts[i] < 0 || displs[i] < 0 || displs[i]+counts[i] > n {
			return fmt.Errorf("%w: %s block %d (displacement %d, count %d) outside a buffer of %d",
				ErrCount, arg, i, displs[i], counts[i], n)
		}
	}
	return nil
}

// launch builds a collective's schedule and runs it (blocking) or starts
// it (nonblocking, holding a reference to the communicator until done).
// name names the collective in a trace.
func (c *Comm[T]) launch(name string, nb bool, check func() error, build func(s *sched)) (*CollRequest, error) {
	st, err := c.live()
	if err != nil {
		return nil, err
	}
	if err := check(); err != nil {
		// The other ranks would wait for this one: end the job instead
		// (see the top of this file).
		c.ep.Abort(err)
		return nil, err
	}
	s := newSched(&st.coll)
	build(s)
	if !nb {
		if tr := c.ep.Tracer(); tr != nil {
			return nil, tracedRun(tr, name, s)
		}
		return nil, s.run()
	}
	q := &CollRequest{op: s, eng: st.coll.eng, w: c.ep.Waiter()}
	if st.owned {
		st.refs.Add(1)
		q.st = st
	}
	s.start()
	return q, nil
}

func noCheck() error { return nil }

// tracedRun runs a blocking collective's schedule as a span of the trace.
func tracedRun(tr *trace.Rank, name string, s *sched) error {
	sp := tr.Begin("fibermpi." + name)
	err := s.run()
	sp.End(trace.KindColl, trace.NoPeer, 0, s.x.comm.Context, 0, name)
	return err
}

func scanName(ex bool) string {
	if ex {
		return "Exscan"
	}
	return "Scan"
}

// Barrier returns once every rank has called it (through memory: a
// counter; by messages: dissemination, ⌈log2 p⌉ rounds).
func (c *Comm[T]) Barrier() error {
	_, err := c.barrier(false)
	return err
}

// Ibarrier starts a barrier.
func (c *Comm[T]) Ibarrier() (*CollRequest, error) { return c.barrier(true) }

func (c *Comm[T]) barrier(nb bool) (*CollRequest, error) {
	if x, err := c.now(nb, noCheck); x != nil {
		if err == nil {
			err = barrierNow(x)
		}
		return nil, err
	}
	if q, ok, err := c.viaShm("Barrier", nb, noCheck, &shmColl[T]{kind: kBarrier}); ok {
		return q, err
	}
	if q, ok, err := c.viaTwoLevel("Barrier", nb, noCheck, tlArgs[T]{kind: kBarrier}); ok {
		return q, err
	}
	return c.launch("Barrier", nb, noCheck, buildBarrier)
}

// Bcast copies root's buf into every rank's buf (through memory: staged
// in the shared area up to 16 KiB, read from root's buf above; by
// messages: a binomial tree). Every rank's buf has the same length.
func (c *Comm[T]) Bcast(buf []T, root int) error {
	_, err := c.bcast(false, buf, root)
	return err
}

// Ibcast starts a Bcast; buf must not be touched until it completes.
func (c *Comm[T]) Ibcast(buf []T, root int) (*CollRequest, error) { return c.bcast(true, buf, root) }

func (c *Comm[T]) bcast(nb bool, buf []T, root int) (*CollRequest, error) {
	check := func() error { return checkRoot(root, c.Size()) }
	if x, err := c.now(nb, check); x != nil {
		if err == nil {
			err = c.bcastNow(x, buf, root)
		}
		return nil, err
	}
	if q, ok, err := c.viaShm("Bcast", nb, check, &shmColl[T]{kind: kBcast, send: buf, recv: buf, root: root}); ok {
		return q, err
	}
	if q, ok, err := c.viaTwoLevel("Bcast", nb, check, tlArgs[T]{kind: kBcast, send: buf, recv: buf, root: root}); ok {
		return q, err
	}
	return c.launch("Bcast", nb, check, func(s *sched) { buildBcast(s, buf, root) })
}

// Reduce combines every rank's send with op into root's recv (through
// memory: combined by the last rank to arrive up to 16 KiB, reduce-scattered
// into root's recv above; by messages: a binomial tree). recv is used at
// root only (len(send) elements; nil elsewhere is fine); send and recv may
// be the same slice.
func (c *Comm[T]) Reduce(send, recv []T, op Op[T], root int) error {
	_, err := c.reduce(false, send, recv, op, root)
	return err
}

// Ireduce starts a Reduce.
func (c *Comm[T]) Ireduce(send, recv []T, op Op[T], root int) (*CollRequest, error) {
	return c.reduce(true, send, recv, op, root)
}

func (c *Comm[T]) reduce(nb bool, send, recv []T, op Op[T], root int) (*CollRequest, error) {
	check := func() error {
		if err := checkRoot(root, c.Size()); err != nil {
			return err
		}
		if err := checkOp(op); err != nil {
			return err
		}
		if c.rank == root {
			if err := checkLen("Reduce recv", len(recv), len(send)); err != nil {
				return err
			}
			return checkDisjoint(send, recv)
		}
		return nil
	}
	if x, err := c.now(nb, check); x != nil {
		if err == nil {
			err = c.reduceNow(x, send, recv, op, root)
		}
		return nil, err
	}
	if q, ok, err := c.viaShm("Reduce", nb, check, &shmColl[T]{kind: kReduce, send: send, recv: recv, op: op, root: root}); ok {
		return q, err
	}
	if q, ok, err := c.viaTwoLevel("Reduce", nb, check, tlArgs[T]{kind: kReduce, send: send, recv: recv, op: op, root: root}); ok {
		return q, err
	}
	return c.launch("Reduce", nb, check, func(s *sched) { buildReduce(s, send, recv, op, root) })
}

// Allreduce combines every rank's send with op into every rank's recv.
// Through memory: combined by the last rank to arrive up to 16 KiB, a
// reduce-scatter in place then an allgather above. By messages: recursive
// doubling; ring reduce-scatter and allgather for vectors of 64 KiB and
// more with a commutative op. send and recv have the same length and may
// be the same slice.
func (c *Comm[T]) Allreduce(send, recv []T, op Op[T]) error {
	_, err := c.allreduce(false, send, recv, op)
	return err
}

// Iallreduce starts an Allreduce.
func (c *Comm[T]) Iallreduce(send, recv []T, op Op[T]) (*CollRequest, error) {
	return c.allreduce(true, send, recv, op)
}

func (c *Comm[T]) allreduce(nb bool, send, recv []T, op Op[T]) (*CollRequest, error) {
	check := func() error { return checkReduceArgs(send, recv, op, "Allreduce") }
	if x, err := c.now(nb || ringAllreduce(c.Size(), send, op), check); x != nil {
		if err == nil {
			err = c.allreduceNow(x, send, recv, op)
		}
		return nil, err
	}
	if q, ok, err := c.viaShm("Allreduce", nb, check, &shmColl[T]{kind: kAllreduce, send: send, recv: recv, op: op}); ok {
		return q, err
	}
	if q, ok, err := c.viaTwoLevel("Allreduce", nb, check, tlArgs[T]{kind: kAllreduce, send: send, recv: recv, op: op}); ok {
		return q, err
	}
	return c.launch("Allreduce", nb, check, func(s *sched) { buildAllreduce(s, send, recv, op) })
}

func checkReduceArgs[T any](send, recv []T, op Op[T], name string) error {
	if err := checkOp(op); err != nil {
		return err
	}
	if len(recv) != len(send) {
		return &CountError{Arg: name + " recv", Have: len(recv), Want: len(send)}
	}
	return checkDisjoint(send, recv)
}

// Scan sets rank r's recv to send₀ ∘ send₁ ∘ … ∘ send_r (inclusive
// prefix, recursive doubling). send and recv may be the same slice.
func (c *Comm[T]) Scan(send, recv []T, op Op[T]) error {
	_, err := c.scan(false, send, recv, op, false)
	return err
}

// Iscan starts a Scan.
func (c *Comm[T]) Iscan(send, recv []T, op Op[T]) (*CollRequest, error) {
	return c.scan(true, send, recv, op, false)
}

// Exscan sets rank r's recv to send₀ ∘ … ∘ send_{r−1} (exclusive prefix);
// rank 0's recv is left as it was.
func (c *Comm[T]) Exscan(send, recv []T, op Op[T]) error {
	_, err := c.scan(false, send, recv, op, true)
	return err
}

// Iexscan starts an Exscan.
func (c *Comm[T]) Iexscan(send, recv []T, op Op[T]) (*CollRequest, error) {
	return c.scan(true, send, recv, op, true)
}

func (c *Comm[T]) scan(nb bool, send, recv []T, op Op[T], ex bool) (*CollRequest, error) {
	check := func() error { return checkReduceArgs(send, recv, op, "Scan") }
	if q, ok, err := c.viaShm(scanName(ex), nb, check, &shmColl[T]{kind: kScan, send: send, recv: recv, op: op, ex: ex}); ok {
		return q, err
	}
	return c.launch(scanName(ex), nb, check, func(s *sched) { buildScan(s, send, recv, op, ex) })
}

// ReduceScatterBlock combines every rank's send (Size()·n elements) with op
// and leaves block r (elements r·n to (r+1)·n) in rank r's recv (n
// elements). A commutative op runs a ring; a non-commutative one a Reduce
// then a Scatter.
func (c *Comm[T]) ReduceScatterBlock(send, recv []T, op Op[T]) error {
	_, err := c.reduceScatterBlock(false, send, recv, op)
	return err
}

// IreduceScatterBlock starts a ReduceScatterBlock.
func (c *Comm[T]) IreduceScatterBlock(send, recv []T, op Op[T]) (*CollRequest, error) {
	return c.reduceScatterBlock(true, send, recv, op)
}

func (c *Comm[T]) reduceScatterBlock(nb bool, send, recv []T, op Op[T]) (*CollRequest, error) {
	p := c.Size()
	check := func() error {
		if err := checkOp(op); err != nil {
			return err
		}
		if err := checkLen("ReduceScatterBlock send", len(send), p*len(recv)); err != nil {
			return err
		}
		return checkDisjoint(send, recv)
	}
	if q, ok, err := c.viaShm("ReduceScatterBlock", nb, check, &shmColl[T]{kind: kReduceScatter, send: send, recv: recv, op: op}); ok {
		return q, err
	}
	return c.launch("ReduceScatterBlock", nb, check, func(s *sched) {
		if op.commutative {
			buildRingReduceScatter(s, send, recv, op)
			return
		}
		n := len(recv)
		counts, displs := make([]int, p), make([]int, p)
		for i := range p {
			counts[i], displs[i] = n, i*n
		}
		buildReduceScatterV(s, send, recv, counts, displs, op)
	})
}

// ReduceScatter combines every rank's send (sum of counts elements) with
// op and leaves rank r's block (counts[r] elements, after those of lower
// ranks) in its recv. It runs a Reduce to rank 0 then a Scatterv.
func (c *Comm[T]) ReduceScatter(send, recv []T, counts []int, op Op[T]) error {
	_, err := c.reduceScatter(false, send, recv, counts, op)
	return err
}

// IreduceScatter starts a ReduceScatter.
func (c *Comm[T]) IreduceScatter(send, recv []T, counts []int, op Op[T]) (*CollRequest, error) {
	return c.reduceScatter(true, send, recv, counts, op)
}

func (c *Comm[T]) reduceScatter(nb bool, send, recv []T, counts []int, op Op[T]) (*CollRequest, error) {
	p := c.Size()
	displs := make([]int, len(counts))
	total := 0
	for i, n := range counts {
		displs[i] = total
		total += n
	}
	check := func() error {
		if err := checkOp(op); err != nil {
			return err
		}
		if err := checkV("ReduceScatter", counts, displs, p, total); err != nil {
			return err
		}
		if err := checkLen("ReduceScatter send", len(send), total); err != nil {
			return err
		}
		if err := checkLen("ReduceScatter recv", len(recv), counts[c.rank]); err != nil {
			return err
		}
		return checkDisjoint(send, recv)
	}
	if q, ok, err := c.viaShm("ReduceScatter", nb, check, &shmColl[T]{kind: kReduceScatter, send: send, recv: recv, op: op, counts: counts, displs: displs}); ok {
		return q, err
	}
	return c.launch("ReduceScatter", nb, check, func(s *sched) { buildReduceScatterV(s, send, recv, counts, displs, op) })
}

func buildReduceScatterV[T any](s *sched, send, recv []T, counts, displs []int, op Op[T]) {
	var all []T
	if s.x.rank == 0 {
		all = make([]T, len(send))
	}
	buildReduce(s, send, all, op, 0)
	buildScatterv(s, all, counts, displs, recv, 0)
}
