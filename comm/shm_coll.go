package comm

import "github.com/fibermpi/fibermpi/endpoint"

// The collectives through memory, one protocol per kind, each a state
// machine that step advances as far as it can without blocking (so that a
// nonblocking collective progresses in Test and Wait, and a blocking one
// is step and sleep in a loop). See shm.go for the cell protocol they
// share.

// shmKind is a collective, as the shared path runs it.
type shmKind uint8

const (
	kBarrier shmKind = iota + 1
	kBcast
	kReduce
	kAllreduce
	kGather // and Gatherv
	kScatter
	kAllgather
	kAlltoall
	kAlltoallv
	kReduceScatter // and ReduceScatterBlock
	kScan          // and Exscan
)

// shmColl is one rank's collective through memory.
type shmColl[T any] struct {
	shmBase
	kind       shmKind
	size       int // bytes per element
	send, recv []T
	op         Op[T]
	root       int
	// counts and displs: the root's (Gatherv: receive side, Scatterv: send
	// side) or the caller's (Allgatherv, Alltoallv receive side,
	// ReduceScatter); nil for the block forms, whose blocks are equal.
	counts, displs   []int
	scounts, sdispls []int // Alltoallv: send side
	ex               bool  // Exscan
	inl              bool  // this rank's contribution went inline
}

// step advances the collective; it reports whether it is done. When it is
// not, the rank waits for the condition it recorded (await).
func (x *shmColl[T]) step() bool {
	if x.done {
		return true
	}
	var done bool
	switch x.kind {
	case kBarrier:
		done = x.barrier()
	case kBcast:
		done = x.bcast()
	case kReduce:
		done = x.reduce()
	case kAllreduce:
		done = x.allreduce()
	case kGather:
		done = x.gather()
	case kScatter:
		done = x.scatter()
	case kAllgather:
		done = x.allgather()
	case kAlltoall:
		done = x.alltoall()
	case kAlltoallv:
		done = x.alltoallv()
	case kReduceScatter:
		done = x.reduceScatter()
	case kScan:
		done = x.scan()
	default:
		panic("comm: unknown shared collective")
	}
	return done || x.blocked()
}

// The collOp interface (sched.go).

func (x *shmColl[T]) advance() { x.step() }

func (x *shmColl[T]) finished() bool { return x.done }

func (x *shmColl[T]) failure() error { return x.err }

func (x *shmColl[T]) block() {
	for !x.step() {
		x.sleep()
	}
}

func (x *shmColl[T]) endpoint() *endpoint.Endpoint { return nil }

func (x *shmColl[T]) unprepare() { x.disarm() }

func (x *shmColl[T]) prepare(reqs []*endpoint.Request) ([]*endpoint.Request, bool, bool) {
	return reqs, true, x.arm()
}

// fail records that the ranks disagree on the collective's sizes: the
// rank gets a *MismatchError and the job ends (see coll.go).
func (x *shmColl[T]) fail(peer, want, got int) {
	if x.err == nil {
		x.err = &MismatchError{Peer: peer, Want: want, Got: got}
		x.abort(x.err)
	}
}

// badMode is the error of a rank that learns from the cell that the
// decider found a mismatch (and ended the job).
func (x *shmColl[T]) badMode() error {
	if err := x.proc.Halted(); err != nil {
		return err
	}
	b := x.cl.bad
	return &b
}

// src returns rank j's contribution (its send buffer or the inline copy).
func (x *shmColl[T]) src(j int) []T {
	p := &x.cl.pub[j]
	if p.inline {
		return words[T](p.buf, p.n/x.size)
	}
	return view[T](p.send, p.n/x.size)
}

// pubSend publishes the rank's send buffer, or a copy of it.
func (x *shmColl[T]) pubSend(inline bool) *shmPub {
	p := &x.cl.pub[x.me]
	p.kind = x.kind
	p.n = len(x.send) * x.size
	p.inline = inline
	x.inl = inline
	if inline {
		p.buf = grow(p.buf, p.n)
		copy(words[T](p.buf, len(x.send)), x.send)
		p.send = nil
	} else {
		p.send = ptrOf(x.send)
	}
	return p
}

// pubRecv publishes the rank's receive buffer.
func (x *shmColl[T]) pubRecv(p *shmPub) {
	p.recv, p.rn = ptrOf(x.recv), len(x.recv)*x.size
}

// blk returns the count and displacement of rank j's block in the
// caller's counts (equal blocks of per elements when they are nil).
func (x *shmColl[T]) blk(j, per int) (cnt, off int) {
	if x.counts == nil {
		return per, j * per
	}
	return x.counts[j], x.displs[j]
}

// sameSlice reports whether a and b are the same memory (in place).
func sameSlice[T any](a, b []T) bool {
	s, _ := overlap(a, b)
	return s
}

// fold sets dst to x₀ ∘ x₁ ∘ … ∘ x_{n−1} over elements [lo, hi) of every
// rank's contribution, in rank order. alias is the rank whose contribution
// dst is (in place), or −1.
func (x *shmColl[T]) fold(dst []T, lo, hi, alias int) {
	n := x.a.n
	if alias >= 0 && alias != n-1 {
		if x.op.commutative {
			// dst holds x_alias already; the order does not matter.
			for j := range n {
				if j != alias {
					x.op.fn(x.src(j)[lo:hi], dst)
				}
			}
			return
		}
		tmp := words[T](x.scratch((hi-lo)*x.size), hi-lo)
		copy(tmp, x.src(n - 1)[lo:hi])
		for j := n - 2; j >= 0; j-- {
			x.op.fn(x.src(j)[lo:hi], tmp)
		}
		copy(dst, tmp)
		return
	}
	copy(dst, x.src(n - 1)[lo:hi])
	for j := n - 2; j >= 0; j-- {
		x.op.fn(x.src(j)[lo:hi], dst)
	}
}

// checkKinds, in the invariants build, checks that every rank that arrived
// runs the same collective.
func (x *shmColl[T]) checkKinds() {
	for j := range x.cl.pub {
		if k := x.cl.pub[j].kind; k != x.kind {
			panicKinds(j, k, x.me, x.kind)
		}
	}
}

// exchange runs the shape the all-to-all kinds share: publish the rank's
// part (publish), wait for every rank's, read them (compute), then — unless
// the rank's part went inline (x.inl) — wait for every rank to have read
// it before the send buffer is the caller's again.
func (x *shmColl[T]) exchange(publish, compute func()) bool {
	for {
		switch x.pc {
		case 0:
			if !x.free() {
				return false
			}
			publish()
			x.pc = 1
			x.arrive(&x.cl.arr.v)
		case 1:
			if !x.await(&x.cl.arr.v, uint64(x.a.n)) {
				return false
			}
			if invariantsOn {
				x.checkKinds()
			}
			compute()
			x.exit()
			if x.inl {
				return x.end()
			}
			x.pc = 2
		case 2:
			if !x.over() {
				return false
			}
			return x.end()
		}
	}
}

func (x *shmColl[T]) barrier() bool {
	cl := x.cl
	for {
		switch x.pc {
		case 0:
			if !x.free() {
				return false
			}
			cl.pub[x.me].kind = kBarrier
			x.pc = 1
			x.arrive(&cl.arr.v)
		case 1:
			if !x.await(&cl.arr.v, uint64(x.a.n)) {
				return false
			}
			x.exit()
			return x.end()
		}
	}
}

// decideReduce is the last arrival's choice for Allreduce (root −1: the
// result goes to the cell) and Reduce: a mismatch, a combination by this
// rank (done here), or a reduce-scatter by every rank.
func (x *shmColl[T]) decideReduce(root int) {
	cl, n := x.cl, x.a.n
	if invariantsOn {
		x.checkKinds()
	}
	nb := cl.pub[x.me].n
	inPlace := true
	for j := range n {
		p := &cl.pub[j]
		if p.n != nb {
			cl.mode, cl.bad = shmBad, MismatchError{Peer: j, Want: nb, Got: p.n}
			b := cl.bad
			x.err = &b
			x.abort(x.err)
			return
		}
		if p.inline {
			inPlace = false
		}
	}
	if nb > shmCombineMax && inPlace && n > 1 {
		cl.mode = shmLarge
		return
	}
	cl.mode = shmSmall
	elems := nb / x.size
	if root < 0 {
		cl.res = grow(cl.res, nb)
		cl.resN = nb
		x.fold(words[T](cl.res, elems), 0, elems, -1)
		return
	}
	rp := &cl.pub[root]
	alias := -1
	if rp.send == rp.recv {
		alias = root
	}
	x.fold(view[T](rp.recv, elems), 0, elems, alias)
}

func (x *shmColl[T]) allreduce() bool {
	cl, n := x.cl, x.a.n
	for {
		switch x.pc {
		case 0:
			if !x.free() {
				return false
			}
			x.pubRecv(x.pubSend(false))
			x.pc = 1
			if x.arrive(&cl.arr.v) {
				x.decideReduce(-1)
				x.publish()
			}
		case 1:
			if !x.published() {
				return false
			}
			switch cl.mode {
			case shmSmall:
				copy(x.recv, words[T](cl.res, cl.resN/x.size))
				x.exit()
				return x.end()
			case shmBad:
				if x.err == nil {
					x.err = x.badMode()
				}
				x.exit()
				return x.end()
			}
			// Reduce-scatter: chunk me of every rank's vector into ours.
			lo, hi := chunk(len(x.recv), n, x.me)
			alias := -1
			if sameSlice(x.send, x.recv) {
				alias = x.me
			}
			x.fold(x.recv[lo:hi], lo, hi, alias)
			x.pc = 2
			x.arrive(&cl.mid.v)
		case 2:
			if !x.await(&cl.mid.v, uint64(n)) {
				return false
			}
			// Allgather: the other chunks from their owners.
			for j := range n {
				if j == x.me {
					continue
				}
				lo, hi := chunk(len(x.recv), n, j)
				copy(x.recv[lo:hi], view[T](cl.pub[j].recv, hi)[lo:hi])
			}
			x.pc = 3
			x.exit()
		case 3:
			if !x.over() {
				return false
			}
			return x.end()
		}
	}
}

func (x *shmColl[T]) bcast() bool {
	cl := x.cl
	for {
		switch x.pc {
		case 0:
			if !x.free() {
				return false
			}
			if x.me != x.root {
				x.pc = 2
				continue
			}
			nb := len(x.send) * x.size
			cl.resN = nb
			mode := shmLarge
			if nb <= shmStageMax {
				cl.res = grow(cl.res, nb)
				copy(words[T](cl.res, len(x.send)), x.send)
				mode = shmSmall
			} else {
				p := &cl.pub[x.me]
				p.send, p.n = ptrOf(x.send), nb
			}
			cl.mode = mode
			x.publish()
			x.exit()
			if mode == shmSmall {
				return x.end()
			}
			x.pc = 1
		case 1:
			if !x.over() {
				return false
			}
			return x.end()
		case 2:
			if !x.published() {
				return false
			}
			nb := cl.resN
			var src []T
			if cl.mode == shmSmall {
				src = words[T](cl.res, nb/x.size)
			} else {
				src = view[T](cl.pub[x.root].send, nb/x.size)
			}
			if want := len(x.recv) * x.size; nb != want {
				x.fail(x.root, want, nb)
			}
			copy(x.recv, src)
			x.exit()
			return x.end()
		}
	}
}

func (x *shmColl[T]) reduce() bool {
	cl, n := x.cl, x.a.n
	for {
		switch x.pc {
		case 0:
			if !x.free() {
				return false
			}
			inline := x.me != x.root && len(x.send)*x.size <= shmInlineMax
			p := x.pubSend(inline)
			if x.me == x.root {
				x.pubRecv(p)
			}
			x.pc = 1
			if x.arrive(&cl.arr.v) {
				x.decideReduce(x.root)
				x.publish()
			}
			if inline {
				x.exit()
				return x.end()
			}
		case 1:
			if !x.published() {
				return false
			}
			switch cl.mode {
			case shmSmall:
				x.exit()
				return x.end()
			case shmBad:
				if x.err == nil {
					x.err = x.badMode()
				}
				x.exit()
				return x.end()
			}
			// Reduce-scatter into the root's buffer: chunk me.
			rp := &cl.pub[x.root]
			elems := rp.rn / x.size
			lo, hi := chunk(elems, n, x.me)
			alias := -1
			if rp.send == rp.recv {
				alias = x.root
			}
			x.fold(view[T](rp.recv, elems)[lo:hi], lo, hi, alias)
			x.exit()
			x.pc = 2
		case 2:
			if !x.over() {
				return false
			}
			return x.end()
		}
	}
}

func (x *shmColl[T]) allgather() bool {
	n := x.a.n
	return x.exchange(func() {
		x.pubSend(len(x.send)*x.size <= shmInlineMax)
	}, func() {
		per := 0
		if n > 0 {
			per = len(x.recv) / n
		}
		for j := range n {
			cnt, off := x.blk(j, per)
			dst := x.recv[off : off+cnt]
			if j == x.me {
				if !sameSlice(dst, x.send) {
					copy(dst, x.send)
				}
				continue
			}
			src := x.src(j)
			if len(src) != cnt {
				x.fail(j, cnt*x.size, len(src)*x.size)
			}
			copy(dst, src)
		}
	})
}

func (x *shmColl[T]) gather() bool {
	cl, n := x.cl, x.a.n
	for {
		switch x.pc {
		case 0:
			if !x.free() {
				return false
			}
			if x.me == x.root {
				p := &cl.pub[x.me]
				p.kind, p.n, p.inline = kGather, len(x.send)*x.size, false
				x.pubRecv(p)
				p.counts, p.displs = x.counts, x.displs
				x.publish()
				cnt, off := x.blk(x.me, len(x.recv)/n)
				if dst := x.recv[off : off+cnt]; !sameSlice(dst, x.send) {
					copy(dst, x.send)
				}
				x.pc = 3
				x.arrive(&cl.arr.v)
				continue
			}
			if len(x.send)*x.size <= shmInlineMax {
				x.pubSend(true)
				x.arrive(&cl.arr.v)
				x.exit()
				return x.end()
			}
			x.pubSend(false)
			x.pc = 1
		case 1:
			// A large block goes straight into the root's buffer.
			if !x.published() {
				return false
			}
			rp := &cl.pub[x.root]
			all := view[T](rp.recv, rp.rn/x.size)
			var cnt, off int
			if rp.counts == nil {
				cnt = len(all) / n
				off = x.me * cnt
			} else {
				cnt, off = rp.counts[x.me], rp.displs[x.me]
			}
			if cnt != len(x.send) {
				x.fail(x.root, cnt*x.size, len(x.send)*x.size)
			}
			copy(all[off:off+cnt], x.send)
			x.arrive(&cl.arr.v)
			x.exit()
			return x.end()
		case 3:
			// The root, once every block is in or inline.
			if !x.await(&cl.arr.v, uint64(n)) {
				return false
			}
			if invariantsOn {
				x.checkKinds()
			}
			per := len(x.recv) / n
			for j := range n {
				if j == x.me {
					continue
				}
				p := &cl.pub[j]
				cnt, off := x.blk(j, per)
				if p.n != cnt*x.size {
					x.fail(j, cnt*x.size, p.n)
				}
				if p.inline {
					copy(x.recv[off:off+cnt], words[T](p.buf, p.n/x.size))
				}
			}
			x.exit()
			return x.end()
		}
	}
}

func (x *shmColl[T]) scatter() bool {
	cl, n := x.cl, x.a.n
	for {
		switch x.pc {
		case 0:
			if !x.free() {
				return false
			}
			if x.me != x.root {
				x.pc = 1
				continue
			}
			per := len(x.send) / n
			total := len(x.send)
			if x.counts != nil {
				total = 0
				for _, c := range x.counts {
					total += c
				}
			}
			mode := shmLarge
			if total*x.size <= shmStageMax {
				mode = shmSmall
				cl.res = grow(cl.res, total*x.size)
				res := words[T](cl.res, total)
				if cap(cl.offs) < n+1 {
					cl.offs = make([]int, n+1)
				}
				cl.offs = cl.offs[:n+1]
				at := 0
				for j := range n {
					cnt, off := x.blk(j, per)
					cl.offs[j] = at
					copy(res[at:at+cnt], x.send[off:off+cnt])
					at += cnt
				}
				cl.offs[n] = at
			} else {
				p := &cl.pub[x.me]
				p.send, p.n = ptrOf(x.send), len(x.send)*x.size
				p.counts, p.displs = x.counts, x.displs
			}
			cl.mode = mode
			x.publish()
			cnt, off := x.blk(x.me, per)
			if src := x.send[off : off+cnt]; !sameSlice(src, x.recv) {
				copy(x.recv, src)
			}
			x.exit()
			if mode == shmSmall {
				return x.end()
			}
			x.pc = 2
		case 1:
			if !x.published() {
				return false
			}
			var src []T
			if cl.mode == shmSmall {
				src = words[T](cl.res, cl.offs[n])[cl.offs[x.me]:cl.offs[x.me+1]]
			} else {
				rp := &cl.pub[x.root]
				all := view[T](rp.send, rp.n/x.size)
				if rp.counts == nil {
					per := len(all) / n
					src = all[x.me*per : (x.me+1)*per]
				} else {
					src = all[rp.displs[x.me] : rp.displs[x.me]+rp.counts[x.me]]
				}
			}
			if len(src) != len(x.recv) {
				x.fail(x.root, len(x.recv)*x.size, len(src)*x.size)
			}
			copy(x.recv, src)
			x.exit()
			return x.end()
		case 2:
			if !x.over() {
				return false
			}
			return x.end()
		}
	}
}

func (x *shmColl[T]) alltoall() bool {
	n := x.a.n
	return x.exchange(func() {
		x.pubSend(len(x.send)*x.size <= shmInlineMax)
	}, func() {
		per := len(x.recv) / n
		for j := range n {
			src := x.src(j)
			sper := len(src) / n
			if sper != per {
				x.fail(j, per*x.size, sper*x.size)
			}
			copy(x.recv[j*per:(j+1)*per], src[x.me*sper:(x.me+1)*sper])
		}
	})
}

func (x *shmColl[T]) alltoallv() bool {
	cl, n := x.cl, x.a.n
	return x.exchange(func() {
		p := x.pubSend(false)
		p.counts, p.displs = x.scounts, x.sdispls
	}, func() {
		for j := range n {
			p := &cl.pub[j]
			sc, sd := p.counts[x.me], p.displs[x.me]
			src := view[T](p.send, p.n/x.size)[sd : sd+sc]
			dst := x.recv[x.displs[j] : x.displs[j]+x.counts[j]]
			if sc != len(dst) {
				x.fail(j, len(dst)*x.size, sc*x.size)
			}
			copy(dst, src)
		}
	})
}

func (x *shmColl[T]) reduceScatter() bool {
	cl, n := x.cl, x.a.n
	return x.exchange(func() {
		x.pubSend(len(x.send)*x.size <= shmInlineMax)
	}, func() {
		nb := len(x.send) * x.size
		ok := true
		for j := range n {
			if p := &cl.pub[j]; p.n != nb {
				x.fail(j, nb, p.n)
				ok = false
				break
			}
		}
		if ok {
			cnt, off := x.blk(x.me, len(x.recv))
			alias := -1
			if !x.inl && sameSlice(x.recv, x.send[off:off+cnt]) {
				alias = x.me
			}
			x.fold(x.recv, off, off+cnt, alias)
		}
	})
}

// scan: every rank publishes both buffers; rank c computes chunk c of
// every rank's prefix, in rank order, so the work is spread and each
// element is read and written by one rank.
func (x *shmColl[T]) scan() bool {
	cl, n := x.cl, x.a.n
	return x.exchange(func() {
		x.pubRecv(x.pubSend(false))
	}, func() {
		nb := len(x.send) * x.size
		ok := true
		for j := range n {
			if p := &cl.pub[j]; p.n != nb || p.rn != nb {
				x.fail(j, nb, p.n)
				ok = false
				break
			}
		}
		if lo, hi := chunk(len(x.send), n, x.me); ok && lo < hi {
			if x.ex {
				x.exscanChunk(lo, hi)
			} else {
				x.scanChunk(lo, hi)
			}
		}
	})
}

func (x *shmColl[T]) scanChunk(lo, hi int) {
	var prev []T
	for j := range x.a.n {
		p := &x.cl.pub[j]
		dst := view[T](p.recv, hi)[lo:hi]
		if p.send != p.recv {
			copy(dst, view[T](p.send, hi)[lo:hi])
		}
		if j > 0 {
			x.op.fn(prev, dst) // P_j = P_{j−1} ∘ x_j
		}
		prev = dst
	}
}

func (x *shmColl[T]) exscanChunk(lo, hi int) {
	n, m := x.a.n, hi-lo
	both := words[T](x.scratch(2*m*x.size), 2*m)
	acc, tmp := both[:m], both[m:]
	copy(acc, view[T](x.cl.pub[0].send, hi)[lo:hi])
	for j := 1; j < n; j++ {
		p := &x.cl.pub[j]
		if j < n-1 {
			copy(tmp, view[T](p.send, hi)[lo:hi]) // before an in-place recv is overwritten
		}
		copy(view[T](p.recv, hi)[lo:hi], acc)
		if j < n-1 {
			x.op.fn(acc, tmp) // P_j = P_{j−1} ∘ x_j
			acc, tmp = tmp, acc
		}
	}
}
