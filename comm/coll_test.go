package comm

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/fibermpi/fibermpi/endpoint"
)

func val(r, i int) int64 { return int64(r*1000003+i*7919) ^ int64(i%5) }

func TestBarrier(t *testing.T) {
	forEachSize(t, func(c *Comm[int64]) error {
		for range 3 {
			if err := c.Barrier(); err != nil {
				return err
			}
		}
		q, err := c.Ibarrier()
		if err != nil {
			return err
		}
		return q.Wait()
	})
}

// TestBarrierOrders checks that a barrier really separates: each rank adds
// itself to a counter before, and everyone sees p after.
func TestBarrierOrders(t *testing.T) {
	for _, m := range rankModes {
		for _, k := range []int{2, 5, 8} {
			t.Run(fmt.Sprintf("%s/p=%d", m.name, k), func(t *testing.T) {
				var arrived atomic.Int32
				err := m.run(k, func(ep *endpoint.Endpoint) error {
					c, err := World[int64](ep)
					if err != nil {
						return err
					}
					usePath(c, m.path)
					arrived.Add(1)
					if err := c.Barrier(); err != nil {
						return err
					}
					if n := int(arrived.Load()); n != k {
						return fmt.Errorf("after the barrier %d of %d ranks had arrived", n, k)
					}
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

func TestBcast(t *testing.T) {
	forEachSize(t, func(c *Comm[int64]) error {
		p, r := c.Size(), c.Rank()
		for _, n := range sizes() {
			for root := range p {
				if root > 2 && root != p-1 {
					continue
				}
				buf := make([]int64, n)
				if r == root {
					for i := range buf {
						buf[i] = val(root, i)
					}
				}
				if err := c.Bcast(buf, root); err != nil {
					return err
				}
				want := vecOf(1, n, func(_, i int) int64 { return val(root, i) })[0]
				if err := diff(fmt.Sprintf("Bcast n=%d root=%d", n, root), buf, want); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// checkAllreduce checks Allreduce out of place and in place, and
// Iallreduce, of in (one vector per rank) with op against refFold.
func checkAllreduce[T comparable](c *Comm[T], op Op[T], in [][]T, name string) error {
	r := c.Rank()
	want := refFold(op, in)
	n := len(in[0])
	got := make([]T, n)
	if err := c.Allreduce(in[r], got, op); err != nil {
		return err
	}
	if err := diff(name+" Allreduce", got, want); err != nil {
		return err
	}
	inplace := slices.Clone(in[r])
	if err := c.Allreduce(inplace, inplace, op); err != nil {
		return err
	}
	if err := diff(name+" Allreduce in place", inplace, want); err != nil {
		return err
	}
	got2 := make([]T, n)
	q, err := c.Iallreduce(in[r], got2, op)
	if err != nil {
		return err
	}
	for {
		done, err := q.Test()
		if err != nil {
			return err
		}
		if done {
			break
		}
		if err := q.Wait(); err != nil {
			return err
		}
	}
	return diff(name+" Iallreduce", got2, want)
}

// checkReductions checks every reduction of in (one vector per rank) with
// op against refFold.
func checkReductions[T comparable](c *Comm[T], op Op[T], in [][]T, name string) error {
	p, r := c.Size(), c.Rank()
	want := refFold(op, in)
	n := len(in[0])
	if err := checkAllreduce(c, op, in, name); err != nil {
		return err
	}
	// Reduce to every root (a few, for large p).
	for root := range p {
		if p > 6 && root%3 != 1 {
			continue
		}
		var out []T
		if r == root {
			out = make([]T, n)
		}
		if err := c.Reduce(in[r], out, op, root); err != nil {
			return err
		}
		if r == root {
			if err := diff(fmt.Sprintf("%s Reduce root=%d", name, root), out, want); err != nil {
				return err
			}
		}
	}
	// Scan and Exscan.
	scan := make([]T, n)
	if err := c.Scan(in[r], scan, op); err != nil {
		return err
	}
	if err := diff(name+" Scan", scan, refFold(op, in[:r+1])); err != nil {
		return err
	}
	ex := make([]T, n)
	var zero T
	for i := range ex {
		ex[i] = zero
	}
	if err := c.Exscan(in[r], ex, op); err != nil {
		return err
	}
	wantEx := make([]T, n)
	if r > 0 {
		wantEx = refFold(op, in[:r])
	}
	if err := diff(name+" Exscan", ex, wantEx); err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	// ReduceScatterBlock: vectors of p·m, blocks of m = n/p (at least 1).
	m := max(n/p, 1)
	big := make([][]T, p)
	for q := range p {
		big[q] = make([]T, p*m)
		for i := range big[q] {
			big[q][i] = in[q][i%n]
		}
	}
	wantBig := refFold(op, big)
	blk := make([]T, m)
	if err := c.ReduceScatterBlock(big[r], blk, op); err != nil {
		return err
	}
	if err := diff(name+" ReduceScatterBlock", blk, wantBig[r*m:(r+1)*m]); err != nil {
		return err
	}
	// ReduceScatter with uneven counts (rank i gets i%3 elements).
	counts := make([]int, p)
	total := 0
	for i := range counts {
		counts[i] = i % 3
		total += counts[i]
	}
	vs := make([][]T, p)
	for q := range p {
		vs[q] = big[q][:min(total, len(big[q]))]
		for len(vs[q]) < total {
			vs[q] = append(vs[q], in[q][len(vs[q])%n])
		}
	}
	wantV := refFold(op, vs)
	mine := make([]T, counts[r])
	if err := c.ReduceScatter(vs[r], mine, counts, op); err != nil {
		return err
	}
	off := 0
	for i := range r {
		off += counts[i]
	}
	return diff(name+" ReduceScatter", mine, wantV[off:off+counts[r]])
}

func TestReductionsInt64(t *testing.T) {
	forEachSize(t, func(c *Comm[int64]) error {
		p := c.Size()
		for _, n := range sizes() {
			in := vecOf(p, n, func(r, i int) int64 { return val(r, i) % 1000 })
			ops := []Op[int64]{Sum[int64](), Prod[int64](), Min[int64](), Max[int64](), Band[int64](), Bor[int64](), Bxor[int64]()}
			for _, op := range ops {
				if err := checkReductions(c, op, in, fmt.Sprintf("%s n=%d", op.Name(), n)); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

func TestReductionsFloat64(t *testing.T) {
	forEachSize(t, func(c *Comm[float64]) error {
		p := c.Size()
		for _, n := range sizes() {
			// Integers in float64 add exactly in any order.
			in := vecOf(p, n, func(r, i int) float64 { return float64((r*31 + i*17) % 1024) })
			for _, op := range []Op[float64]{Sum[float64](), Max[float64](), Min[float64]()} {
				if err := checkReductions(c, op, in, fmt.Sprintf("%s n=%d", op.Name(), n)); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// TestRingAllreduce: vectors above ringAllreduceMin take the ring
// (reduce-scatter, then allgather; sizes() stays below it under -race and
// -short), out of place, in place and nonblocking, in chunks that do not
// divide evenly.
func TestRingAllreduce(t *testing.T) {
	forEachSize(t, func(c *Comm[float64]) error {
		n := ringAllreduceMin/8 + 13
		in := vecOf(c.Size(), n, func(r, i int) float64 { return float64((r*29 + i*13) % 2048) })
		for _, op := range []Op[float64]{Sum[float64](), Max[float64]()} {
			if err := checkAllreduce(c, op, in, fmt.Sprintf("%s n=%d", op.Name(), n)); err != nil {
				return err
			}
		}
		return nil
	})
}

func TestReductionsNonCommutative(t *testing.T) {
	forEachSize(t, func(c *Comm[affine]) error {
		p := c.Size()
		for _, n := range sizes() {
			in := vecOf(p, n, func(r, i int) affine { return affine{A: int64(2*r + 3 + i%4), B: int64(r - i)} })
			if err := checkReductions(c, compose, in, fmt.Sprintf("compose n=%d", n)); err != nil {
				return err
			}
		}
		return nil
	})
}

func TestReductionsLogical(t *testing.T) {
	forEachSize(t, func(c *Comm[bool]) error {
		p := c.Size()
		in := vecOf(p, 40, func(r, i int) bool { return (r+1)*(i+3)%(i%5+2) != 0 || r == i })
		for _, op := range []Op[bool]{Land[bool](), Lor[bool](), Lxor[bool]()} {
			if err := checkReductions(c, op, in, op.Name()); err != nil {
				return err
			}
		}
		return nil
	})
}

func TestReductionsLoc(t *testing.T) {
	forEachSize(t, func(c *Comm[ValueIndex[float64]]) error {
		p := c.Size()
		// Few distinct values, so ties (broken by the smaller index) occur.
		in := vecOf(p, 50, func(r, i int) ValueIndex[float64] {
			return ValueIndex[float64]{Value: float64((r*7 + i*3) % 4), Index: r}
		})
		for _, op := range []Op[ValueIndex[float64]]{MinLoc[float64](), MaxLoc[float64]()} {
			if err := checkReductions(c, op, in, op.Name()); err != nil {
				return err
			}
		}
		return nil
	})
}

func TestGatherScatter(t *testing.T) {
	forEachSize(t, func(c *Comm[int64]) error {
		p, r := c.Size(), c.Rank()
		for _, n := range sizes() {
			in := vecOf(p, n, val)
			flat := slices.Concat(in...)
			for _, root := range []int{0, p / 2, p - 1} {
				var all []int64
				if r == root {
					all = make([]int64, p*n)
				}
				if err := c.Gather(in[r], all, root); err != nil {
					return err
				}
				if r == root {
					if err := diff(fmt.Sprintf("Gather n=%d root=%d", n, root), all, flat); err != nil {
						return err
					}
				}
				mine := make([]int64, n)
				if err := c.Scatter(all, mine, root); err != nil {
					return err
				}
				if err := diff(fmt.Sprintf("Scatter n=%d root=%d", n, root), mine, in[r]); err != nil {
					return err
				}
			}
			all := make([]int64, p*n)
			if err := c.Allgather(in[r], all); err != nil {
				return err
			}
			if err := diff(fmt.Sprintf("Allgather n=%d", n), all, flat); err != nil {
				return err
			}
			// Alltoall: block j of rank i's send is val(i*p+j, ·).
			send := make([]int64, p*n)
			want := make([]int64, p*n)
			for j := range p {
				for i := range n {
					send[j*n+i] = val(r*p+j, i)
					want[j*n+i] = val(j*p+r, i)
				}
			}
			recv := make([]int64, p*n)
			if err := c.Alltoall(send, recv); err != nil {
				return err
			}
			if err := diff(fmt.Sprintf("Alltoall n=%d", n), recv, want); err != nil {
				return err
			}
		}
		return nil
	})
}

// vlayout makes counts (rank i has (i·s+n)%(n+3) elements, so some have
// none) and gapped displacements (in reverse rank order).
func vlayout(p, n, seed int) (counts, displs []int, total int) {
	counts, displs = make([]int, p), make([]int, p)
	for i := range p {
		counts[i] = (i*seed + n) % (n + 3)
	}
	off := 0
	for i := p - 1; i >= 0; i-- {
		displs[i] = off
		off += counts[i] + 1 // a gap element
	}
	return counts, displs, off
}

func TestVariants(t *testing.T) {
	forEachSize(t, func(c *Comm[int64]) error {
		p, r := c.Size(), c.Rank()
		for _, n := range sizes() {
			counts, displs, total := vlayout(p, n, 5)
			mine := make([]int64, counts[r])
			for i := range mine {
				mine[i] = val(r, i)
			}
			want := make([]int64, total)
			for i := range want {
				want[i] = -1
			}
			for q := range p {
				for i := range counts[q] {
					want[displs[q]+i] = val(q, i)
				}
			}
			// Allgatherv into a buffer whose gaps must stay untouched.
			all := make([]int64, total)
			for i := range all {
				all[i] = -1
			}
			if err := c.Allgatherv(mine, all, counts, displs); err != nil {
				return err
			}
			if err := diff(fmt.Sprintf("Allgatherv n=%d", n), all, want); err != nil {
				return err
			}
			for _, root := range []int{0, p - 1} {
				var g []int64
				if r == root {
					g = make([]int64, total)
					for i := range g {
						g[i] = -1
					}
				}
				if err := c.Gatherv(mine, g, counts, displs, root); err != nil {
					return err
				}
				if r == root {
					if err := diff(fmt.Sprintf("Gatherv n=%d root=%d", n, root), g, want); err != nil {
						return err
					}
				}
				back := make([]int64, counts[r])
				if err := c.Scatterv(g, counts, displs, back, root); err != nil {
					return err
				}
				if err := diff(fmt.Sprintf("Scatterv n=%d root=%d", n, root), back, mine); err != nil {
					return err
				}
			}
			// Alltoallv: rank i sends (i+j+n)%4 elements to rank j.
			cnt := func(i, j int) int { return (i + j + n) % 4 }
			sc, sd, rc, rd := make([]int, p), make([]int, p), make([]int, p), make([]int, p)
			soff, roff := 0, 0
			for j := range p {
				sc[j], sd[j] = cnt(r, j), soff
				rc[j], rd[j] = cnt(j, r), roff
				soff += sc[j]
				roff += rc[j]
			}
			send := make([]int64, soff)
			for j := range p {
				for i := range sc[j] {
					send[sd[j]+i] = val(r*p+j, i)
				}
			}
			recv := make([]int64, roff)
			if err := c.Alltoallv(send, sc, sd, recv, rc, rd); err != nil {
				return err
			}
			wantA := make([]int64, roff)
			for j := range p {
				for i := range rc[j] {
					wantA[rd[j]+i] = val(j*p+r, i)
				}
			}
			if err := diff(fmt.Sprintf("Alltoallv n=%d", n), recv, wantA); err != nil {
				return err
			}
		}
		return nil
	})
}

// TestNonblockingOverlap starts several nonblocking collectives before
// waiting for any, in a rank-dependent order of waits: their tags keep
// them apart.
func TestNonblockingOverlap(t *testing.T) {
	forEachSize(t, func(c *Comm[int64]) error {
		p, r := c.Size(), c.Rank()
		a := []int64{int64(r)}
		sum := make([]int64, 1)
		b := make([]int64, 3)
		if r == p-1 {
			b = []int64{7, 8, 9}
		}
		all := make([]int64, p)
		q1, err := c.Iallreduce(a, sum, Sum[int64]())
		if err != nil {
			return err
		}
		q2, err := c.Ibcast(b, p-1)
		if err != nil {
			return err
		}
		q3, err := c.Iallgather(a, all)
		if err != nil {
			return err
		}
		q4, err := c.Ibarrier()
		if err != nil {
			return err
		}
		qs := []*CollRequest{q1, q2, q3, q4}
		rng := rand.New(rand.NewPCG(uint64(r), 1))
		rng.Shuffle(len(qs), func(i, j int) { qs[i], qs[j] = qs[j], qs[i] })
		for _, q := range qs {
			if err := q.Wait(); err != nil {
				return err
			}
		}
		if sum[0] != int64(p*(p-1)/2) {
			return fmt.Errorf("Iallreduce sum %d", sum[0])
		}
		if err := diff("Ibcast", b, []int64{7, 8, 9}); err != nil {
			return err
		}
		want := make([]int64, p)
		for i := range want {
			want[i] = int64(i)
		}
		return diff("Iallgather", all, want)
	})
}

// reduceAndBcast checks a Reduce of in to root with a non-commutative op
// (a tree rooted at 0, then a message to root), the same as a commutative
// one (of the A fields, through an int64 view: a tree rooted at root), and
// a Bcast of root's result.
func reduceAndBcast(c *Comm[affine], in [][]affine, root int) error {
	r, n := c.Rank(), len(in[0])
	var got []affine
	if r == root {
		got = make([]affine, n)
	}
	if err := c.Reduce(in[r], got, compose, root); err != nil {
		return err
	}
	want := refFold(compose, in)
	if r == root {
		if err := diff("Reduce", got, want); err != nil {
			return err
		}
	}
	ints, err := As[int64](c)
	if err != nil {
		return err
	}
	mine, sums, wantSums := make([]int64, n), make([]int64, n), make([]int64, n)
	for i := range n {
		mine[i] = in[r][i].A
		for _, v := range in {
			wantSums[i] += v[i].A
		}
	}
	if err := ints.Reduce(mine, sums, Sum[int64](), root); err != nil {
		return err
	}
	if r == root {
		if err := diff("Reduce Sum", sums, wantSums); err != nil {
			return err
		}
	}
	// In place at the root (send and recv the same slice).
	var into []int64
	if r == root {
		into = mine
	}
	if err := ints.Reduce(mine, into, Sum[int64](), root); err != nil {
		return err
	}
	if r == root {
		if err := diff("Reduce Sum in place", mine, wantSums); err != nil {
			return err
		}
	}
	buf := make([]affine, n)
	if r == root {
		copy(buf, got)
	}
	if err := c.Bcast(buf, root); err != nil {
		return err
	}
	return diff("Bcast", buf, want)
}

// TestBlockingMeetsScheduled: a blocking Barrier, Allreduce, Reduce or
// Bcast by messages runs on the caller's stack when the caller has no
// other collective pending (coll_now.go), and as a schedule through its
// engine when it has one. Both send the same messages, so ranks that go
// different ways meet: here the even ranks keep an Ibarrier pending across
// an Allreduce and Reduces (by a non-commutative op, so that an operand out
// of rank order shows), Bcasts and Barriers, while the odd ranks finish
// theirs first.
func TestBlockingMeetsScheduled(t *testing.T) {
	forEachSize(t, func(c *Comm[affine]) error {
		p, r := c.Size(), c.Rank()
		q, err := c.Ibarrier()
		if err != nil {
			return err
		}
		if r%2 == 1 {
			if err := q.Wait(); err != nil {
				return err
			}
		}
		for _, n := range []int{1, 5} {
			in := vecOf(p, n, func(r, i int) affine { return affine{A: int64(r + 2 + i), B: int64(3*r - i)} })
			got := make([]affine, n)
			if err := c.Allreduce(in[r], got, compose); err != nil {
				return err
			}
			if err := diff(fmt.Sprintf("Allreduce n=%d", n), got, refFold(compose, in)); err != nil {
				return err
			}
			if err := c.Barrier(); err != nil {
				return err
			}
			for _, root := range []int{0, p - 1, p / 2} {
				if err := reduceAndBcast(c, in, root); err != nil {
					return fmt.Errorf("n=%d root %d: %w", n, root, err)
				}
			}
		}
		if r%2 == 0 {
			return q.Wait()
		}
		return nil
	})
}
