package comm

import (
	"unsafe"

	"github.com/fibermpi/fibermpi/datatype"
)

// This file builds the schedules of the collectives: each function appends
// one algorithm's rounds for the calling rank to s. They assume validated
// arguments. p is the communicator's size, r the caller's rank.

// Size thresholds (bytes of one rank's vector) between algorithms.
const (
	ringAllreduceMin  = 64 << 10 // ring reduce-scatter + allgather at and above
	bruckAllgatherMax = 64 << 10 // Bruck below (total gathered bytes), ring above
	alltoallBurstMax  = 1 << 10  // every message at once below (per block), pairwise above
)

func b[T any](s []T) []byte { return datatype.Bytes(s) }

// overlap reports whether a and b share memory, and whether they are the
// same slice (in place).
func overlap[T any](a, c []T) (same, partial bool) {
	if len(a) == 0 || len(c) == 0 {
		return false, false
	}
	// Safety: the addresses are only compared, never dereferenced.
	pa, pc := uintptr(unsafe.Pointer(unsafe.SliceData(a))), uintptr(unsafe.Pointer(unsafe.SliceData(c)))
	sz := unsafe.Sizeof(a[0])
	ea, ec := pa+uintptr(len(a))*sz, pc+uintptr(len(c))*sz
	if pa == pc && len(a) == len(c) {
		return true, false
	}
	return false, pa < ec && pc < ea
}

// barrier: dissemination, ⌈log2 p⌉ rounds of one empty message each way.
func buildBarrier(s *sched) {
	p, r := s.x.size(), s.x.rank
	for k := 1; k < p; k <<= 1 {
		from, to := disseminate(p, r, k)
		s.add(s.one(from, nil), s.one(to, nil), nil)
	}
}

// disseminate returns the peers of rank r's dissemination round at
// distance k over p ranks: it hears from r-k and tells r+k.
func disseminate(p, r, k int) (from, to int) { return (r - k + p) % p, (r + k) % p }

// bcast: binomial tree rooted at root.
func buildBcast[T any](s *sched, buf []T, root int) {
	p, r := s.x.size(), s.x.rank
	rel := (r - root + p) % p
	mask := bcastParent(p, rel)
	if mask < p {
		s.add(s.one((rel-mask+root)%p, b(buf)), nil, nil)
	}
	if sends := bcastChildren(nil, p, rel, root, mask, b(buf)); len(sends) > 0 {
		s.add(nil, sends, nil)
	}
}

// bcastChildren appends to xs the sends of buf from rank rel (counted
// from root) to its children in the binomial tree over p ranks, the
// farthest first; mask is bcastParent's answer for rel.
func bcastChildren(xs []xfer, p, rel, root, mask int, buf []byte) []xfer {
	for mask >>= 1; mask > 0; mask >>= 1 {
		if rel+mask < p {
			xs = append(xs, xfer{peer: (rel + mask + root) % p, buf: buf})
		}
	}
	return xs
}

// bcastParent returns the place of rank rel (counted from the root) in the
// binomial broadcast tree over p ranks: the lowest set bit of rel, rel's
// parent being rel minus it, or for the root the first power of two not
// below p. bcastChildren lists rel's children.
func bcastParent(p, rel int) int {
	mask := 1
	for mask < p && rel&mask == 0 {
		mask <<= 1
	}
	return mask
}

// redTree walks one rank's part in the binomial reduction tree over p
// ranks, rel counted from the tree's top: for each power of two from 1
// up, rel receives the partial result of rel+mask (a run of higher ranks,
// if it exists) while that bit of rel is clear, and at its lowest set bit
// sends its own to rel-mask and is done.
type redTree struct{ p, rel, mask int }

// next returns rel's next step: the peer (counted from the top) and
// whether rel sends to it; ok is false when rel is done.
func (t *redTree) next() (peer int, send, ok bool) {
	for ; t.mask < t.p; t.mask <<= 1 {
		m := t.mask
		if t.rel&m != 0 {
			t.mask = t.p
			return t.rel &^ m, true, true
		}
		if t.rel|m < t.p {
			t.mask <<= 1
			return t.rel | m, false, true
		}
	}
	return 0, false, false
}

// reduce: binomial tree. A commutative op uses a tree rooted at root; a
// non-commutative one a tree rooted at 0 (each subtree is a run of
// consecutive ranks, combined lower-left), then 0 sends to root. recv is
// written at root only.
func buildReduce[T any](s *sched, send, recv []T, op Op[T], root int) {
	p, r := s.x.size(), s.x.rank
	n := len(send)
	top := root
	if !op.commutative {
		top = 0
	}
	var acc, tmp []T // acc: the partial result once a receive is folded into it
	part := send     // the partial result: a leaf sends send itself
	for t := (redTree{p: p, rel: (r - top + p) % p, mask: 1}); ; {
		peer, up, ok := t.next()
		if !ok {
			break
		}
		if up {
			s.add(nil, s.one((peer+top)%p, b(part)), nil)
			continue
		}
		if acc == nil {
			acc, tmp = scratchFilled[T](s, n), scratchFilled[T](s, n)
			copy(acc, send)
			part = acc
		}
		s.add(s.one((peer+top)%p, b(tmp)), nil, func() { reduceInto(op, acc, tmp) })
	}
	switch {
	case top == root && r == root:
		localCopy(s, recv, part)
	case r == top:
		s.add(nil, s.one(root, b(part)), nil)
	case r == root:
		s.add(s.one(top, b(recv)), nil, nil)
	}
}

// reduceInto folds tmp, the partial result of higher ranks, into acc.
func reduceInto[T any](op Op[T], acc, tmp []T) {
	op.fn(acc, tmp) // acc holds lower ranks than tmp
	copy(acc, tmp)
}

// allreduce: recursive doubling, with the ranks beyond the largest power
// of two folded into their neighbours first (any p, any op); for large
// vectors and a commutative op, a ring reduce-scatter then ring allgather.
func buildAllreduce[T any](s *sched, send, recv []T, op Op[T]) {
	p := s.x.size()
	same, _ := overlap(send, recv)
	if ringAllreduce(p, send, op) {
		if same {
			send = nil // in place: recv holds the contribution
		}
		buildRingAllreduce(s, send, recv, op)
		return
	}
	if !same {
		localCopy(s, recv, send)
	}
	if p > 1 {
		buildRecDoubling(s, recv, op)
	}
}

// ringAllreduce reports whether an Allreduce of send over p ranks takes the
// ring (else recursive doubling).
func ringAllreduce[T any](p int, send []T, op Op[T]) bool {
	n := len(send)
	return p > 1 && op.commutative && n >= p && n*int(unsafe.Sizeof(*new(T))) >= ringAllreduceMin
}

func buildRecDoubling[T any](s *sched, acc []T, op Op[T]) {
	tmp := scratchFilled[T](s, len(acc))
	for pl := newRDPlan(s.x.size(), s.x.rank); ; {
		st, ok := pl.next()
		if !ok {
			return
		}
		var recv, send []xfer
		if st.recv >= 0 {
			recv = s.one(st.recv, b(rdInto(st, tmp, acc)))
		}
		if st.send >= 0 {
			send = s.one(st.send, b(acc))
		}
		var then func()
		if f := st.fold; f != foldNone {
			then = func() { fold(f, op, tmp, acc) }
		}
		s.add(recv, send, then)
	}
}

// rdStep is one round of recursive doubling for one rank: receive from
// peer recv (-1: none) into the scratch vector, or into the accumulator
// when intoAcc; send the accumulator to peer send (-1: none); then fold
// what came into the accumulator.
type rdStep struct {
	recv, send int
	intoAcc    bool
	fold       rdFold
}

// rdInto returns the buffer step st receives into.
func rdInto[T any](st rdStep, tmp, acc []T) []T {
	if st.intoAcc {
		return acc
	}
	return tmp
}

// rdFold says how a round of recursive doubling folds what it received
// (tmp) into the accumulator (acc). The operands keep rank order, so that
// a non-commutative op reduces in rank order.
type rdFold uint8

const (
	foldNone  rdFold = iota
	foldBelow        // from a lower rank: acc = tmp ∘ acc
	foldAbove        // from a higher rank: acc = acc ∘ tmp
)

// fold applies f to the received tmp and the accumulator acc.
func fold[T any](f rdFold, op Op[T], tmp, acc []T) {
	switch f {
	case foldBelow:
		op.fn(tmp, acc)
	case foldAbove:
		op.fn(acc, tmp)
		copy(acc, tmp)
	}
}

// rdPlan gives one rank's rounds of recursive doubling over p ranks, in
// order. The p - 2^k ranks beyond the largest power of two 2^k pair up
// with their neighbours first: an even rank below 2·(p - 2^k) sends its
// vector to the odd one above it, which folds it in, takes part in the
// exchanges of the 2^k, and sends the result back at the end.
type rdPlan struct {
	r, rem, pof2 int
	newrank      int // rank among the 2^k; -1 for a rank folded in
	mask         int // the next exchange's distance among the 2^k
	phase        int // 0: the pairing, 1: the exchanges, 2: the result back, 3: done
}

func newRDPlan(p, r int) rdPlan {
	pof2 := 1
	for pof2*2 <= p {
		pof2 *= 2
	}
	rem := p - pof2
	pl := rdPlan{r: r, rem: rem, pof2: pof2, newrank: r - rem, mask: 1}
	if r < 2*rem {
		pl.newrank = -1
		if r%2 == 1 {
			pl.newrank = r / 2
		}
	}
	return pl
}

// next returns the next round; false when there is none.
func (pl *rdPlan) next() (rdStep, bool) {
	r, paired := pl.r, pl.r < 2*pl.rem
	for {
		switch pl.phase {
		case 0:
			pl.phase = 1
			if paired {
				if r%2 == 0 {
					return rdStep{recv: -1, send: r + 1}, true
				}
				return rdStep{recv: r - 1, send: -1, fold: foldBelow}, true
			}
		case 1:
			if pl.newrank < 0 || pl.mask >= pl.pof2 {
				pl.phase = 2
				continue
			}
			nd := pl.newrank ^ pl.mask
			pl.mask <<= 1
			dst := nd + pl.rem
			if nd < pl.rem {
				dst = nd*2 + 1
			}
			f := foldAbove
			if dst < r {
				f = foldBelow
			}
			return rdStep{recv: dst, send: dst, fold: f}, true
		case 2:
			pl.phase = 3
			if paired {
				if r%2 == 0 {
					return rdStep{recv: r + 1, send: -1, intoAcc: true}, true
				}
				return rdStep{recv: -1, send: r - 1}, true
			}
		default:
			return rdStep{}, false
		}
	}
}

// chunk returns the bounds of chunk i of n elements cut into p chunks.
func chunk(n, p, i int) (lo, hi int) {
	q, m := n/p, n%p
	lo = i*q + min(i, m)
	hi = lo + q
	if i < m {
		hi++
	}
	return lo, hi
}

func buildRingAllreduce[T any](s *sched, send, acc []T, op Op[T]) {
	p, r := s.x.size(), s.x.rank
	n := len(acc)
	next, prev := (r+1)%p, (r-1+p)%p
	lo0, hi0 := chunk(n, p, 0)
	tmp := scratch[T](s, hi0-lo0)
	// Reduce-scatter: after p−1 steps rank r holds chunk r+1 complete.
	// With a separate send (not in place), acc gets each chunk of send
	// only when it is reduced, in cache, and never chunk r, which is sent
	// from send and then received whole in the allgather: 1/p less
	// copying than a copy of the whole vector first.
	for k := range p - 1 {
		slo, shi := chunk(n, p, (r-k+p)%p)
		rlo, rhi := chunk(n, p, (r-k-1+2*p)%p)
		in, out := tmp[:rhi-rlo], acc[slo:shi]
		if k == 0 && send != nil {
			out = send[slo:shi]
		}
		own := send // nil in place: acc holds this rank's chunk already
		s.add(s.one(prev, b(in)), s.one(next, b(out)), func() {
			if own != nil {
				copy(acc[rlo:rhi], own[rlo:rhi])
			}
			op.fn(in, acc[rlo:rhi])
		})
	}
	// Allgather the complete chunks around the ring.
	for k := range p - 1 {
		slo, shi := chunk(n, p, (r+1-k+p)%p)
		rlo, rhi := chunk(n, p, (r-k+p)%p)
		s.add(s.one(prev, b(acc[rlo:rhi])), s.one(next, b(acc[slo:shi])), nil)
	}
}

// scan: recursive doubling (inclusive, any p, any op).
func buildScan[T any](s *sched, send, recv []T, op Op[T], exclusive bool) {
	p, r := s.x.size(), s.x.rank
	n := len(send)
	partial := scratch[T](s, n)
	copy(partial, send)
	if !exclusive {
		if same, _ := overlap(send, recv); !same {
			localCopy(s, recv, send)
		}
	}
	tmp := scratch[T](s, n)
	have := false // exclusive: recv holds something
	for mask := 1; mask < p; mask <<= 1 {
		dst := r ^ mask
		if dst >= p {
			continue
		}
		s.add(s.one(dst, b(tmp)), s.one(dst, b(partial)), func() {
			if dst < r {
				switch {
				case !exclusive:
					op.fn(tmp, recv)
				case !have:
					copy(recv, tmp)
					have = true
				default:
					op.fn(tmp, recv)
				}
				op.fn(tmp, partial)
			} else {
				op.fn(partial, tmp)
				copy(partial, tmp)
			}
		})
	}
}

// gather: every rank sends to root, which receives into place.
func buildGatherv[T any](s *sched, send, recv []T, counts, displs []int, root int) {
	p, r := s.x.size(), s.x.rank
	if r != root {
		s.add(nil, s.one(root, b(send)), nil)
		return
	}
	var recvs []xfer
	for i := range p {
		dst := recv[displs[i] : displs[i]+counts[i]]
		if i == r {
			if same, _ := overlap(send, dst); !same {
				localCopy(s, dst, send)
			}
			continue
		}
		recvs = append(recvs, xfer{peer: i, buf: b(dst)})
	}
	if len(recvs) > 0 {
		s.add(recvs, nil, nil)
	}
}

// scatter: root sends every rank its part.
func buildScatterv[T any](s *sched, send []T, counts, displs []int, recv []T, root int) {
	p, r := s.x.size(), s.x.rank
	if r != root {
		s.add(s.one(root, b(recv)), nil, nil)
		return
	}
	var sends []xfer
	for i := range p {
		src := send[displs[i] : displs[i]+counts[i]]
		if i == r {
			if same, _ := overlap(src, recv); !same {
				// After the rounds before (a Reduce that fills send).
				localCopy(s, recv, src)
			}
			continue
		}
		sends = append(sends, xfer{peer: i, buf: b(src)})
	}
	if len(sends) > 0 {
		s.add(nil, sends, nil)
	}
}

// allgather: Bruck for small totals (⌈log2 p⌉ rounds, any p), ring for
// large ones.
func buildAllgather[T any](s *sched, send, recv []T) {
	p, r := s.x.size(), s.x.rank
	n := len(send)
	if n*p*int(unsafe.Sizeof(*new(T))) < bruckAllgatherMax {
		tmp := scratch[T](s, n*p)
		copy(tmp, send)
		for k := 1; k < p; k <<= 1 {
			cnt := min(k, p-k)
			s.add(s.one((r+k)%p, b(tmp[k*n:(k+cnt)*n])), s.one((r-k+p)%p, b(tmp[:cnt*n])), nil)
		}
		s.local(func() {
			for i := range p {
				j := (r + i) % p
				copy(recv[j*n:(j+1)*n], tmp[i*n:(i+1)*n])
			}
		})
		return
	}
	counts, displs := make([]int, p), make([]int, p)
	for i := range p {
		counts[i], displs[i] = n, i*n
	}
	buildRingAllgatherv(s, send, recv, counts, displs)
}

func buildRingAllgatherv[T any](s *sched, send, recv []T, counts, displs []int) {
	p, r := s.x.size(), s.x.rank
	own := recv[displs[r] : displs[r]+counts[r]]
	if same, _ := overlap(send, own); !same {
		copy(own, send)
	}
	next, prev := (r+1)%p, (r-1+p)%p
	for k := range p - 1 {
		sb, rb := (r-k+p)%p, (r-k-1+2*p)%p
		s.add(s.one(prev, b(recv[displs[rb]:displs[rb]+counts[rb]])),
			s.one(next, b(recv[displs[sb]:displs[sb]+counts[sb]])), nil)
	}
}

// alltoallv: own block copied; small blocks all at once, larger ones
// pairwise (round i: send to r+i, receive from r−i).
func buildAlltoallv[T any](s *sched, send []T, scounts, sdispls []int, recv []T, rcounts, rdispls []int, burst bool) {
	p, r := s.x.size(), s.x.rank
	copy(recv[rdispls[r]:rdispls[r]+rcounts[r]], send[sdispls[r]:sdispls[r]+scounts[r]])
	var recvs, sends []xfer
	for i := 1; i < p; i++ {
		to, from := (r+i)%p, (r-i+p)%p
		rx := xfer{peer: from, buf: b(recv[rdispls[from] : rdispls[from]+rcounts[from]])}
		tx := xfer{peer: to, buf: b(send[sdispls[to] : sdispls[to]+scounts[to]])}
		if burst {
			recvs, sends = append(recvs, rx), append(sends, tx)
			continue
		}
		s.add([]xfer{rx}, []xfer{tx}, nil)
	}
	if burst && p > 1 {
		s.add(recvs, sends, nil)
	}
}

// reduceScatterBlock with a commutative op: a ring in which rank r ends
// with block r complete.
func buildRingReduceScatter[T any](s *sched, send, recv []T, op Op[T]) {
	p, r := s.x.size(), s.x.rank
	n := len(recv)
	acc := scratchFilled[T](s, len(send))
	copy(acc, send)
	tmp := scratchFilled[T](s, n)
	next, prev := (r+1)%p, (r-1+p)%p
	for k := range p - 1 {
		sb, rb := (r-1-k+2*p)%p, (r-2-k+3*p)%p
		blk := acc[rb*n : (rb+1)*n]
		s.add(s.one(prev, b(tmp)), s.one(next, b(acc[sb*n:(sb+1)*n])), func() { op.fn(tmp, blk) })
	}
	localCopy(s, recv, acc[r*n:(r+1)*n])
}
