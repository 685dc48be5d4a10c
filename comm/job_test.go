package comm_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/fibermpi/fibermpi/comm"
	"github.com/fibermpi/fibermpi/endpoint"
	"github.com/fibermpi/fibermpi/internal/jobtest"
)

// The comm tests that make sense for several processes, under every job
// layout of internal/jobtest (in process, with rdma.Local hidden, 2 and 3
// processes): collectives against their serial results, and communicator
// creation, whose context ids the processes must agree on (Gropp and Thakur 2007 Fig. 3).
func TestJobCollectives(t *testing.T) {
	for _, ranks := range []int{3, 4} {
		t.Run(fmt.Sprint("ranks=", ranks), func(t *testing.T) {
			jobtest.Run(t, ranks, endpoint.ThreadSingle, func(ep *endpoint.Endpoint) error {
				c, err := comm.World[int64](ep)
				if err != nil {
					return err
				}
				me, n := int64(c.Rank()), int64(c.Size())
				if err := c.Barrier(); err != nil {
					return err
				}
				// Allreduce, eager and rendezvous sizes.
				for _, size := range []int{1, 3000} {
					send := make([]int64, size)
					for i := range send {
						send[i] = me*1000 + int64(i)
					}
					recv := make([]int64, size)
					if err := c.Allreduce(send, recv, comm.Sum[int64]()); err != nil {
						return err
					}
					for i, v := range recv {
						if want := 1000*n*(n-1)/2 + n*int64(i); v != want {
							return fmt.Errorf("Allreduce of %d: element %d is %d, want %d", size, i, v, want)
						}
					}
				}
				// A blocking Allreduce, Reduce or Bcast run straight from
				// the caller meets one run as a schedule (coll_now.go): the
				// odd ranks keep an Ibarrier pending across them.
				q, err := c.Ibarrier()
				if err != nil {
					return err
				}
				if me%2 == 0 {
					if err := q.Wait(); err != nil {
						return err
					}
				}
				sum := []int64{0}
				if err := c.Allreduce([]int64{me}, sum, comm.Sum[int64]()); err != nil {
					return err
				}
				if sum[0] != n*(n-1)/2 {
					return fmt.Errorf("Allreduce beside an Ibarrier: %d", sum[0])
				}
				if err := c.Reduce([]int64{me}, sum, comm.Sum[int64](), 1); err != nil {
					return err
				}
				if me == 1 && sum[0] != n*(n-1)/2 {
					return fmt.Errorf("Reduce beside an Ibarrier: %d", sum[0])
				}
				sum[0] = me
				if err := c.Bcast(sum, 2); err != nil {
					return err
				}
				if sum[0] != 2 {
					return fmt.Errorf("Bcast beside an Ibarrier: %d", sum[0])
				}
				if me%2 == 1 {
					if err := q.Wait(); err != nil {
						return err
					}
				}
				// Bcast from the last rank, Gather and Scatter at rank 1.
				b := []int64{me, me}
				if err := c.Bcast(b, int(n-1)); err != nil {
					return err
				}
				if b[0] != n-1 || b[1] != n-1 {
					return fmt.Errorf("Bcast: got %v", b)
				}
				all := make([]int64, n)
				if err := c.Gather([]int64{me * me}, all, 1); err != nil {
					return err
				}
				if me == 1 {
					for i, v := range all {
						if v != int64(i*i) {
							return fmt.Errorf("Gather: %v", all)
						}
					}
				}
				one := []int64{-1}
				if err := c.Scatter(all, one, 1); err != nil {
					return err
				}
				if one[0] != me*me {
					return fmt.Errorf("Scatter: got %d, want %d", one[0], me*me)
				}
				// Allgather, Alltoall-like exchange through Scan.
				ag := make([]int64, n)
				if err := c.Allgather([]int64{me + 10}, ag); err != nil {
					return err
				}
				for i, v := range ag {
					if v != int64(i)+10 {
						return fmt.Errorf("Allgather: %v", ag)
					}
				}
				sc := []int64{0}
				if err := c.Scan([]int64{me + 1}, sc, comm.Sum[int64]()); err != nil {
					return err
				}
				if sc[0] != (me+1)*(me+2)/2 {
					return fmt.Errorf("Scan: got %d", sc[0])
				}
				return nil
			})
		})
	}
}

func TestJobCommunicators(t *testing.T) {
	jobtest.Run(t, 4, endpoint.ThreadSingle, func(ep *endpoint.Endpoint) error {
		w, err := comm.World[int32](ep)
		if err != nil {
			return err
		}
		me := w.Rank()
		// Several communicators at once: a Dup and a Split by parity,
		// each used for a collective; the ids must not mix traffic.
		d, err := w.Dup()
		if err != nil {
			return err
		}
		s, err := w.Split(me%2, -me)
		if err != nil {
			return err
		}
		if s.Size() != 2 || s.Rank() != 1-me/2 {
			return fmt.Errorf("Split: rank %d of %d", s.Rank(), s.Size())
		}
		got := make([]int32, 2)
		if err := s.Allgather([]int32{int32(me)}, got); err != nil {
			return err
		}
		want := []int32{int32(me%2 + 2), int32(me % 2)}
		if !slices.Equal(got, want) {
			return fmt.Errorf("Split's Allgather: %v, want %v", got, want)
		}
		sum := []int32{0}
		if err := d.Allreduce([]int32{int32(me)}, sum, comm.Sum[int32]()); err != nil {
			return err
		}
		if sum[0] != 6 {
			return fmt.Errorf("Dup's Allreduce: %d", sum[0])
		}
		// Free and make again: ids are reused consistently everywhere.
		for range 3 {
			if err := d.Free(); err != nil {
				return err
			}
			if d, err = w.Dup(); err != nil {
				return err
			}
		}
		if err := d.Barrier(); err != nil {
			return err
		}
		if err := s.Free(); err != nil {
			return err
		}
		return d.Free()
	})
}
