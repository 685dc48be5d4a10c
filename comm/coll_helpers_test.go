package comm

import (
	"fmt"
	"os"
	"slices"
	"testing"

	"github.com/fibermpi/fibermpi/endpoint"
	"github.com/fibermpi/fibermpi/internal/testenv"
	"github.com/fibermpi/fibermpi/rdma/inproc"
	"github.com/fibermpi/fibermpi/rdma/rdmatest"
)

// collRanks are the communicator sizes every collective is checked at.
var collRanks = []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 16}

// rankMode runs k ranks one way: fibers on endpoints (endpoint.RunWith) or
// goroutines each registered with its own endpoint of a ThreadMultiple
// process; path is how forEachSize's communicators run their collectives
// (the ranks share a process, so by default through memory).
type rankMode struct {
	name string
	run  func(k int, fn func(ep *endpoint.Endpoint) error) error
	path CollPath
}

var rankModes = []rankMode{
	{"fibers", func(k int, fn func(*endpoint.Endpoint) error) error {
		return endpoint.RunWith(endpoint.ThreadSingle, endpoint.Options{Workers: 2}, k, fn)
	}, CollAuto},
	{"goroutines-rendezvous", func(k int, fn func(*endpoint.Endpoint) error) error {
		return runGoroutines(k, endpoint.Options{Workers: 1, EagerLimit: -1}, fn)
	}, CollAuto},
	{"fibers-messages", func(k int, fn func(*endpoint.Endpoint) error) error {
		return endpoint.RunWith(endpoint.ThreadSingle, endpoint.Options{Workers: 2}, k, fn)
	}, CollMessages},
	{"fibers-remote-rendezvous-messages", func(k int, fn func(*endpoint.Endpoint) error) error {
		opts := endpoint.Options{Workers: 2, EagerLimit: -1, Transport: rdmatest.HideLocal(inproc.New())}
		return endpoint.RunWith(endpoint.ThreadSingle, opts, k, fn)
	}, CollMessages},
}

// usePath sets how c runs its collectives, even after it ran some (tests
// only: every rank must do the same between the same collectives).
func usePath[T any](c *Comm[T], p CollPath) {
	st := c.st()
	st.path, st.shm, st.shmChecked = p, nil, false
	st.topo, st.topoChecked = nil, false
}

// runGoroutines runs fn as k goroutine ranks of one ThreadMultiple process.
func runGoroutines(k int, opts endpoint.Options, fn func(*endpoint.Endpoint) error) error {
	return endpoint.RunGoroutinesWith(endpoint.ThreadMultiple, opts, k, fn)
}

// forEachSize runs fn on a world of T for every rank count and mode.
func forEachSize[T any](t *testing.T, fn func(c *Comm[T]) error) {
	t.Helper()
	for _, m := range rankModes {
		for _, k := range collRanks {
			t.Run(fmt.Sprintf("%s/p=%d", m.name, k), func(t *testing.T) {
				err := m.run(k, func(ep *endpoint.Endpoint) error {
					c, err := World[T](ep)
					if err != nil {
						return err
					}
					usePath(c, m.path)
					err = fn(c)
					if err != nil {
						// Seen at once: the other ranks may now wait forever.
						fmt.Fprintf(os.Stderr, "%s: rank %d: %v\n", t.Name(), c.Rank(), err)
					}
					return err
				})
				if err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// sizes are the vector lengths checked; the large one crosses the ring and
// rendezvous thresholds.
func sizes() []int {
	if testing.Short() || testenv.RaceEnabled {
		return []int{0, 1, 7, 300}
	}
	return []int{0, 1, 7, 300, 9000}
}

// refFold is the sequential reference of a reduction: v₀ ∘ v₁ ∘ … in rank
// order, elementwise.
func refFold[T any](op Op[T], vecs [][]T) []T {
	acc := slices.Clone(vecs[0])
	for _, v := range vecs[1:] {
		t := slices.Clone(v)
		op.Apply(acc, t)
		acc = t
	}
	return acc
}

// affine is x ↦ A·x + B over wrapping int64: composition is associative and
// not commutative, so it checks that reductions keep rank order.
type affine struct{ A, B int64 }

// compose is the non-commutative op: in then inout, applied as inout∘in.
var compose = NewOp("compose", func(in, inout []affine) {
	for i := range inout {
		f, g := in[i], inout[i]
		// (g∘f)(x) = g.A(f.A x + f.B) + g.B
		inout[i] = affine{A: g.A * f.A, B: g.A*f.B + g.B}
	}
}, false)

func vecOf[T any](p, n int, f func(r, i int) T) [][]T {
	out := make([][]T, p)
	for r := range p {
		out[r] = make([]T, n)
		for i := range n {
			out[r][i] = f(r, i)
		}
	}
	return out
}

func diff[T comparable](what string, got, want []T) error {
	if len(got) != len(want) {
		return fmt.Errorf("%s: length %d, want %d", what, len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			return fmt.Errorf("%s: element %d = %v, want %v", what, i, got[i], want[i])
		}
	}
	return nil
}
