package comm

// Small blocking collectives run on the caller's stack.
//
// A collective by messages is built as a schedule (sched.go): a list of
// rounds with closures for the local work, run by the caller's engine so
// that its other pending collectives move meanwhile. For the collectives
// whose time is their latency — a Barrier; an Allreduce, Bcast or Reduce
// of a few elements — building and running that list cost more than the
// messages between two processes on one node (Allreduce of 8 B: 1.6 µs,
// where the same exchange of Isend, Irecv and WaitAll took 0.65;
// BENCHMARKS.md, issue 12, session 17). So a blocking one that needs no
// engine runs its rounds directly: it sends what its schedule would send,
// to the same peers with the same tag and sizes, so ranks that run it
// directly and ranks that build the schedule (because they have other
// collectives pending) meet each other. It keeps the schedule's storage
// (its requests and scratch vectors, kept by the communicator between
// collectives) and allocates nothing. A Bcast or Reduce runs its tree
// directly at any size (its schedule is the same tree at every size); an
// Allreduce only below the size at which the schedule takes the ring.

// now returns the collective context of c for a blocking collective run
// directly, or nil when it must go another way: skip (a nonblocking one,
// or an algorithm not run directly), through memory or in two levels
// (area, topology: a process's fiber ranks meet there), a freed
// communicator (launch reports it), a traced endpoint (launch traces the
// schedule), or other collectives of the caller pending (they move only
// through the engine). With a context it checks the collective's
// arguments: a bad one ends the job, as launch does, and is returned.
func (c *Comm[T]) now(skip bool, check func() error) (*collCtx, error) {
	st := c.st()
	if skip || st.freed || len(st.coll.eng.active) > 0 || c.ep.Tracer() != nil || c.area() != nil || c.topology() != nil {
		return nil, nil
	}
	if err := check(); err != nil {
		c.ep.Abort(err)
		return &st.coll, err
	}
	return &st.coll, nil
}

// barrierNow runs buildBarrier's dissemination rounds directly.
func barrierNow(x *collCtx) error {
	s := newSched(x)
	p, r, w := x.size(), x.rank, x.ep.Waiter()
	for k := 1; k < p; k <<= 1 {
		from, to := disseminate(p, r, k)
		if !s.exchange(w, from, nil, to, nil) {
			break
		}
	}
	return s.end()
}

// allreduceNow runs buildAllreduce's recursive doubling directly; the
// caller has checked the arguments and that the ring is not the way.
func (c *Comm[T]) allreduceNow(x *collCtx, send, recv []T, op Op[T]) error {
	s := newSched(x)
	if same, _ := overlap(send, recv); !same {
		copy(recv, send)
	}
	acc, tmp, w := recv, scratchFilled[T](s, len(recv)), x.ep.Waiter()
	for pl := newRDPlan(x.size(), x.rank); ; {
		st, ok := pl.next()
		if !ok || !s.exchange(w, st.recv, c.bytes(rdInto(st, tmp, acc)), st.send, c.bytes(acc)) {
			break
		}
		fold(st.fold, op, tmp, acc)
	}
	return s.end()
}

// bcastNow runs buildBcast's binomial tree directly: the receive from the
// parent, then the sends to the children at once.
func (c *Comm[T]) bcastNow(x *collCtx, buf []T, root int) error {
	s := newSched(x)
	p, w, data := x.size(), x.ep.Waiter(), c.bytes(buf)
	rel := (x.rank - root + p) % p
	mask := bcastParent(p, rel)
	if mask < p && !s.exchange(w, (rel-mask+root)%p, data, -1, nil) {
		return s.end()
	}
	s.begin()
	if s.xfers = bcastChildren(s.xfers, p, rel, root, mask, data); len(s.xfers) > 0 {
		s.runRound(w, round{send: s.xfers})
	}
	return s.end()
}

// reduceNow runs buildReduce's binomial tree directly; the caller has
// checked the arguments. Unlike the schedule, whose rounds bind their
// buffers when it is built, it saves copies of the vector: a rank sends
// its send buffer itself until it has folded something in, the root of a
// commutative op's tree accumulates straight into recv, and a commutative
// op folds into the accumulator (the op's second argument; a
// non-commutative one must fold into the higher ranks' side and copy
// back).
func (c *Comm[T]) reduceNow(x *collCtx, send, recv []T, op Op[T], root int) error {
	s := newSched(x)
	p, r, w, n := x.size(), x.rank, x.ep.Waiter(), len(send)
	top := root
	if !op.commutative {
		top = 0
	}
	var acc, tmp []T // acc: the partial result once something is folded into it
	part := send     // the partial result
	for t := (redTree{p: p, rel: (r - top + p) % p, mask: 1}); ; {
		peer, up, ok := t.next()
		if ok && !up && tmp == nil {
			tmp = scratchFilled[T](s, n)
		}
		switch {
		case !ok:
		case up:
			s.exchange(w, -1, nil, (peer+top)%p, c.bytes(part))
		case s.exchange(w, (peer+top)%p, c.bytes(tmp), -1, nil):
			if acc == nil {
				acc = recv
				if r != root || top != root {
					acc = scratchFilled[T](s, n)
				}
				copy(acc, send) // nothing to do if recv is send
				part = acc
			}
			if op.commutative {
				op.fn(tmp, acc)
			} else {
				reduceInto(op, acc, tmp)
			}
			continue
		}
		break
	}
	switch {
	case s.err != nil:
	case top == root && r == root:
		if acc == nil { // else acc is recv
			copy(recv, send)
		}
	case r == top:
		s.exchange(w, -1, nil, root, c.bytes(part))
	case r == root:
		s.exchange(w, top, c.bytes(recv), -1, nil)
	}
	return s.end()
}

// end ends a schedule run directly and keeps it for the next collective
// (release), unless it failed.
func (s *sched) end() error {
	s.done = true
	err := s.err
	s.release()
	return err
}
