package comm

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/fibermpi/fibermpi/endpoint"
)

func TestDimsCreate(t *testing.T) {
	for _, tc := range []struct {
		n, nd int
		want  []int
	}{
		{1, 1, []int{1}}, {6, 2, []int{3, 2}}, {12, 2, []int{4, 3}}, {16, 2, []int{4, 4}},
		{8, 3, []int{2, 2, 2}}, {7, 2, []int{7, 1}}, {24, 3, []int{4, 3, 2}}, {1, 3, []int{1, 1, 1}},
	} {
		got, err := DimsCreate(tc.n, tc.nd)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("DimsCreate(%d, %d) = %v, %v; want %v", tc.n, tc.nd, got, err, tc.want)
		}
	}
	if _, err := DimsCreate(0, 2); !errors.Is(err, ErrDims) {
		t.Errorf("DimsCreate(0, 2): %v", err)
	}
}

// refNeighbors is the reference: the neighbours of rank r by brute force
// over the coordinates.
func refNeighbors(r int, dims []int, periods []bool) []int {
	coords := make([]int, len(dims))
	for i, x := len(dims)-1, r; i >= 0; i-- {
		coords[i] = x % dims[i]
		x /= dims[i]
	}
	rankAt := func(c []int) int {
		n := 0
		for i, d := range dims {
			x := c[i]
			if x < 0 || x >= d {
				if !periods[i] {
					return ProcNull
				}
				x = (x + d) % d
			}
			n = n*d + x
		}
		return n
	}
	var out []int
	for d := range dims {
		for _, step := range []int{-1, 1} {
			c := slices.Clone(coords)
			c[d] += step
			out = append(out, rankAt(c))
		}
	}
	return out
}

// TestNeighborCollectives checks Shift, Neighbors, NeighborAllgather and
// NeighborAlltoall against the reference at several shapes, periodic or
// not (sizes 1 and 2 make a rank its own or its only neighbour), on fibers
// and goroutines.
func TestNeighborCollectives(t *testing.T) {
	shapes := []struct {
		dims    []int
		periods []bool
	}{
		{[]int{4}, []bool{false}}, {[]int{4}, []bool{true}}, {[]int{2}, []bool{true}},
		{[]int{1}, []bool{true}}, {[]int{3, 2}, []bool{false, true}}, {[]int{2, 2, 2}, []bool{true, false, true}},
		{[]int{1, 3}, nil},
	}
	for _, m := range rankModes {
		for _, sh := range shapes {
			n := 1
			for _, d := range sh.dims {
				n *= d
			}
			t.Run(fmt.Sprintf("%s/%v%v", m.name, sh.dims, sh.periods), func(t *testing.T) {
				periods := sh.periods
				if periods == nil {
					periods = make([]bool, len(sh.dims))
				}
				err := m.run(n, func(ep *endpoint.Endpoint) error {
					c, err := World[int32](ep)
					if err != nil {
						return err
					}
					g, err := CartCreate(c, sh.dims, sh.periods)
					if err != nil {
						return err
					}
					me := c.Rank()
					nb := g.Neighbors()
					if want := refNeighbors(me, sh.dims, periods); !slices.Equal(nb, want) {
						return fmt.Errorf("rank %d: Neighbors %v, want %v", me, nb, want)
					}
					if got := g.RankOf(g.Coords(me)); got != me {
						return fmt.Errorf("RankOf(Coords(%d)) = %d", me, got)
					}
					k := len(nb)
					const blk = 700 // a few KiB a block: rendezvous in some modes
					send := make([]int32, blk)
					for i := range send {
						send[i] = int32(me*10000 + i)
					}
					recv := make([]int32, k*blk)
					for i := range recv {
						recv[i] = -7
					}
					if err := g.NeighborAllgather(send, recv); err != nil {
						return err
					}
					for j, p := range nb {
						for i := range blk {
							want := int32(-7)
							if p != ProcNull {
								want = int32(p*10000 + i)
							}
							if got := recv[j*blk+i]; got != want {
								return fmt.Errorf("rank %d: allgather block %d[%d] = %d, want %d", me, j, i, got, want)
							}
						}
					}
					// Alltoall: block j carries (me, j); neighbour j's block
					// for me is the one it sends the opposite way (j^1).
					send = make([]int32, k*blk)
					for j := range k {
						for i := range blk {
							send[j*blk+i] = int32(me*100 + j)
						}
					}
					for i := range recv {
						recv[i] = -7
					}
					q, err := g.INeighborAlltoall(send, recv)
					if err != nil {
						return err
					}
					if err := q.Wait(); err != nil {
						return err
					}
					for j, p := range nb {
						want := int32(-7)
						if p != ProcNull {
							want = int32(p*100 + (j ^ 1))
						}
						if got := recv[j*blk]; got != want || recv[(j+1)*blk-1] != want {
							return fmt.Errorf("rank %d: alltoall block %d = %d, want %d", me, j, got, want)
						}
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

func TestCartCreateErrors(t *testing.T) {
	err := endpoint.Run(4, func(ep *endpoint.Endpoint) error {
		c, err := World[int](ep)
		if err != nil {
			return err
		}
		for _, tc := range []struct {
			dims    []int
			periods []bool
		}{{[]int{3}, nil}, {[]int{2, 0}, nil}, {[]int{2, 2}, []bool{true}}} {
			if _, err := CartCreate(c, tc.dims, tc.periods); !errors.Is(err, ErrDims) {
				return fmt.Errorf("CartCreate(%v, %v): %v, want ErrDims", tc.dims, tc.periods, err)
			}
		}
		g, err := CartCreate(c, []int{2, 2}, []bool{false, false})
		if err != nil {
			return err
		}
		// A NeighborAlltoall whose send does not hold one block per
		// neighbour ends the job (a collective's bad argument).
		if g.Rank() == 0 {
			err := g.NeighborAlltoall(make([]int, 3), make([]int, 4))
			if !errors.Is(err, ErrCount) {
				return fmt.Errorf("NeighborAlltoall with 3 of 4 blocks: %v", err)
			}
			return nil
		}
		if err := g.Barrier(); !errors.Is(err, ErrCount) {
			return fmt.Errorf("the others' next collective: %v, want the abort wrapping ErrCount", err)
		}
		return nil
	})
	if !errors.Is(err, ErrCount) {
		t.Fatalf("Run: %v, want ErrCount", err)
	}
}
