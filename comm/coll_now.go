package comm

// Small blocking collectives run on the caller's stack.
//
// A collective by messages is built as a schedule (sched.go): a list of
// rounds with closures for the local work, run by the caller's engine so
// that its other pending collectives move meanwhile. For the collectives
// whose time is their latency — a Barrier, an Allreduce of a few elements —
// building and running that list cost more than the messages between two
// processes on one node (Allreduce of 8 B: 1.6 µs, where the same exchange
// of Isend, Irecv and WaitAll took 0.65; BENCHMARKS.md, issue 12, session
// 17). So a blocking one that needs no engine runs its rounds directly: it
// sends what its schedule would send, to the same peers with the same tag
// and sizes, so ranks that run it directly and ranks that build the
// schedule (because they have other collectives pending) meet each other.
// It keeps the schedule's storage (its requests and scratch vector, kept
// by the communicator between collectives) and allocates nothing.

// now returns the collective context of c for a blocking collective (nb
// false) run directly, or nil when it must go another way: through memory
// or in two levels (area, topology: a process's fiber ranks meet there), a
// nonblocking one, a freed communicator (launch reports it), a traced
// endpoint (launch traces the schedule), or other collectives of the
// caller pending (they move only through the engine).
func (c *Comm[T]) now(nb bool) *collCtx {
	st := c.st()
	if nb || st.freed || len(st.coll.eng.active) > 0 || c.ep.Tracer() != nil || c.area() != nil || c.topology() != nil {
		return nil
	}
	return &st.coll
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
	acc, tmp, w := recv, scratch[T](s, len(recv)), x.ep.Waiter()
	for pl := newRDPlan(x.size(), x.rank); ; {
		st, ok := pl.next()
		if !ok || !s.exchange(w, st.recv, c.bytes(rdInto(st, tmp, acc)), st.send, c.bytes(acc)) {
			break
		}
		fold(st.fold, op, tmp, acc)
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
