package endpoint_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"testing"

	"github.com/fibermpi/fibermpi/endpoint"
	"github.com/fibermpi/fibermpi/fiber"
	"github.com/fibermpi/fibermpi/internal/jobtest"
)

// TestJobPointToPoint: every rank sends to every other, eager and
// rendezvous sizes, with exact and wildcard receives, under every layout.
func TestJobPointToPoint(t *testing.T) {
	for _, c := range []struct {
		ranks int
		level endpoint.ThreadLevel
	}{{2, endpoint.ThreadSingle}, {5, endpoint.ThreadSingle}, {3, endpoint.ThreadMultiple}} {
		ranks := c.ranks
		t.Run(fmt.Sprintf("ranks=%d/%v", ranks, c.level), func(t *testing.T) {
			jobtest.Run(t, ranks, c.level, func(ep *endpoint.Endpoint) error {
				w := ep.World()
				me, n := ep.Rank(), ep.Size()
				if n != ranks {
					return fmt.Errorf("world size %d, want %d", n, ranks)
				}
				for _, size := range []int{0, 8, 20_000, 300_017} {
					for d := 1; d < n; d++ {
						to, from := (me+d)%n, (me-d+n)%n
						msg := bytes.Repeat([]byte{byte(me + size)}, size)
						tag := 16*(size%1000) + d // one sender per tag and round: a wildcard takes the round's message
						r, err := ep.Isend(w, me, to, tag, msg)
						if err != nil {
							return err
						}
						buf := make([]byte, size)
						src := from
						if d%2 == 0 {
							src = endpoint.AnySource
						}
						st, err := ep.Recv(w, src, tag, buf)
						if err != nil {
							return err
						}
						if int(st.Source) != from && src != endpoint.AnySource {
							return fmt.Errorf("message from %d, want %d", st.Source, from)
						}
						if want := bytes.Repeat([]byte{byte(int(st.Source) + size)}, size); !bytes.Equal(buf, want) {
							return fmt.Errorf("%d bytes from %d: data differs", size, st.Source)
						}
						if err := ep.Wait(r); err != nil {
							return err
						}
					}
				}
				return nil
			})
		})
	}
}

// TestJobCreateEndpointsUneven: three processes ask for 1, 2 and 3
// endpoints; the new world holds all six, process 0's first; each
// endpoint's Process communicator holds its process's endpoints, under a
// context of its own; and a message goes round the whole world.
func TestJobCreateEndpointsUneven(t *testing.T) {
	const procs = 3
	boots := jobtest.NewMemJob(procs)
	wire := jobtest.NewWire(8)
	errs := make(chan error, procs)
	for i := range procs {
		go func() {
			errs <- func() error {
				p, err := endpoint.Init(endpoint.ThreadSingle, endpoint.Options{Workers: 1, Bootstrap: boots[i], Remote: wire.Port()})
				if err != nil {
					return err
				}
				defer p.Finalize()
				if p.Rank() != i || p.Procs() != procs || p.World().Rank() != i || p.World().Size() != procs {
					return fmt.Errorf("process %d: Rank %d Procs %d, world rank %d of %d", i, p.Rank(), p.Procs(), p.World().Rank(), p.World().Size())
				}
				if pc := p.World().Process(); pc.Size() != 1 || pc.Addrs[0] != p.World().Addr() || pc.Context == p.World().World().Context {
					return fmt.Errorf("process %d: Init world's process communicator %+v", i, pc)
				}
				eps, err := p.CreateEndpoints(i + 1)
				if err != nil {
					return err
				}
				first := i * (i + 1) / 2 // 0, 1, 3
				for j, ep := range eps {
					if ep.Size() != 6 || ep.Rank() != first+j {
						return fmt.Errorf("process %d endpoint %d: rank %d of %d, want %d of 6", i, j, ep.Rank(), ep.Size(), first+j)
					}
					pc := ep.Process()
					if pc.Size() != i+1 || pc.Addrs[j] != ep.Addr() || pc.Context == ep.World().Context {
						return fmt.Errorf("process %d endpoint %d: process communicator %+v", i, j, pc)
					}
				}
				ring := make(chan error, len(eps))
				for _, ep := range eps {
					if err := p.Scheduler().Spawn(func(f *fiber.Fiber) {
						h, err := ep.Register(f.Waiter())
						if err != nil {
							ring <- err
							return
						}
						defer h.Unregister()
						w, me, n := h.World(), h.Rank(), h.Size()
						buf := make([]byte, 1)
						if me != 0 {
							if _, err := h.Recv(w, me-1, 0, buf); err != nil {
								ring <- err
								return
							}
						}
						buf[0]++
						if err := h.Send(w, me, (me+1)%n, 0, buf); err != nil {
							ring <- err
							return
						}
						if me == 0 {
							if _, err := h.Recv(w, n-1, 0, buf); err != nil {
								ring <- err
								return
							}
							if buf[0] != byte(n) {
								ring <- fmt.Errorf("the token came back as %d, want %d", buf[0], n)
								return
							}
						}
						ring <- nil
					}); err != nil {
						return err
					}
				}
				for range eps {
					if err := <-ring; err != nil {
						return fmt.Errorf("process %d: %w", i, err)
					}
				}
				return nil
			}()
		}()
	}
	for range procs {
		if err := <-errs; err != nil {
			jobtest.Fail(boots, err)
			t.Error(err)
		}
	}
}

// TestJobFlood: every rank sends a window of 10^4 messages to the next
// rank before receiving any from the previous one, so queues fill both ways
// (rings refuse with ErrAgain, backlogs keep order, progress drains them);
// every message must arrive once, in order, with its checksum.
func TestJobFlood(t *testing.T) {
	const n = 10_000
	jobtest.Run(t, 2, endpoint.ThreadSingle, func(ep *endpoint.Endpoint) error {
		w := ep.World()
		me, size := ep.Rank(), ep.Size()
		to, from := (me+1)%size, (me-1+size)%size
		msg := func(src, i int) []byte {
			b := binary.LittleEndian.AppendUint32(nil, uint32(src))
			b = binary.LittleEndian.AppendUint32(b, uint32(i))
			b = append(b, bytes.Repeat([]byte{byte(i)}, i%40)...)
			return binary.LittleEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
		}
		sends := make([]*endpoint.Request, 0, n)
		for i := range n {
			r, err := ep.Isend(w, me, to, 3, msg(me, i))
			if err != nil {
				return err
			}
			sends = append(sends, r)
		}
		buf := make([]byte, 64)
		for i := range n {
			st, err := ep.Recv(w, from, 3, buf)
			if err != nil {
				return err
			}
			if want := msg(from, i); !bytes.Equal(buf[:st.Count], want) {
				return fmt.Errorf("message %d from %d: got %x, want %x", i, from, buf[:st.Count], want)
			}
		}
		return endpoint.WaitAll(ep.Waiter(), sends...)
	})
}

// TestJobLargeMessages: rendezvous messages between two processes in the
// cases a transport that moves their bytes itself (rdma/mpi, rdma.Mover)
// handles apart from a plain match, checked over every transport: a
// message that waits unexpected until its receive is posted, a receive
// shorter than the message (and a message after it), Mprobe and Mrecv,
// order among large, eager and synchronous sends under one tag, and a
// window of large messages posted for after they arrived.
func TestJobLargeMessages(t *testing.T) {
	jobtest.Run(t, 2, endpoint.ThreadSingle, func(ep *endpoint.Endpoint) error {
		w, me := ep.World(), ep.Rank()
		peer := 1 - me
		fill := func(n, seed int) []byte {
			b := make([]byte, n)
			for i := range b {
				b[i] = byte(i*7 + seed)
			}
			return b
		}
		check := func(what string, got []byte, n, seed int) error {
			if want := fill(n, seed); !bytes.Equal(got, want) {
				return fmt.Errorf("%s: %d bytes differ from what was sent", what, n)
			}
			return nil
		}
		const big, mid = 300_017, 20_000
		var sends []*endpoint.Request
		isend := func(tag int, msg []byte) error {
			r, err := ep.Isend(w, me, peer, tag, msg)
			sends = append(sends, r)
			return err
		}
		if me == 0 {
			// Unexpected: the RTS is in before the receive.
			if err := isend(1, fill(big, 1)); err != nil {
				return err
			}
			if err := ep.Ssend(w, me, peer, 2, []byte("go")); err != nil {
				return err
			}
			// Truncated, then a message after it.
			if err := isend(3, fill(big, 3)); err != nil {
				return err
			}
			if err := isend(3, fill(mid, 4)); err != nil {
				return err
			}
			// Mprobe.
			if err := isend(4, fill(mid, 5)); err != nil {
				return err
			}
			// Order under one tag: large, eager, synchronous large, large.
			if err := isend(5, fill(big, 6)); err != nil {
				return err
			}
			if err := isend(5, fill(8, 7)); err != nil {
				return err
			}
			if err := ep.Ssend(w, me, peer, 5, fill(mid, 8)); err != nil {
				return err
			}
			if err := isend(5, fill(big, 9)); err != nil {
				return err
			}
			// A mid-size message truncated: over MPICH it moves in
			// pieces (rdma/mpi's Config.MovedPieces).
			if err := isend(8, fill(mid, 30)); err != nil {
				return err
			}
			// A window, received once all of it has been sent.
			for i := range 16 {
				if err := isend(6, fill(windowSize(i), 10+i)); err != nil {
					return err
				}
			}
			if err := ep.Ssend(w, me, peer, 7, nil); err != nil {
				return err
			}
			for _, r := range sends {
				if err := ep.Wait(r); err != nil {
					return err
				}
			}
			return nil
		}
		if _, err := ep.Recv(w, peer, 2, make([]byte, 2)); err != nil {
			return err
		}
		buf := make([]byte, big)
		if st, err := ep.Recv(w, peer, 1, buf); err != nil || st.Count != big {
			return fmt.Errorf("unexpected large message: count %d, %v", st.Count, err)
		}
		if err := check("unexpected large message", buf, big, 1); err != nil {
			return err
		}
		short := make([]byte, 1000)
		st, err := ep.Recv(w, peer, 3, short)
		var te *endpoint.TruncateError
		if !errors.As(err, &te) || te.Have != len(short) || te.Got != big {
			return fmt.Errorf("truncated receive: %v, want a TruncateError of %d into %d", err, big, len(short))
		}
		if st.Count != len(short) {
			return fmt.Errorf("truncated receive: count %d, want %d", st.Count, len(short))
		}
		if err := check("truncated receive", short, len(short), 3); err != nil {
			return err
		}
		if st, err := ep.Recv(w, peer, 3, buf); err != nil || st.Count != mid {
			return fmt.Errorf("message after a truncated one: count %d, %v", st.Count, err)
		}
		if err := check("message after a truncated one", buf[:mid], mid, 4); err != nil {
			return err
		}
		m, err := ep.Mprobe(w, peer, 4)
		if err != nil {
			return err
		}
		if st, err := ep.Mrecv(m, buf); err != nil || st.Count != mid {
			return fmt.Errorf("Mrecv: count %d, %v", st.Count, err)
		}
		if err := check("Mrecv", buf[:mid], mid, 5); err != nil {
			return err
		}
		for i, want := range []struct{ n, seed int }{{big, 6}, {8, 7}, {mid, 8}, {big, 9}} {
			st, err := ep.Recv(w, peer, 5, buf)
			if err != nil {
				return err
			}
			if st.Count != want.n {
				return fmt.Errorf("message %d under one tag: %d bytes, want %d (order)", i, st.Count, want.n)
			}
			if err := check(fmt.Sprintf("message %d under one tag", i), buf[:want.n], want.n, want.seed); err != nil {
				return err
			}
		}
		if _, err := ep.Recv(w, peer, 7, nil); err != nil {
			return err
		}
		st, err = ep.Recv(w, peer, 8, short)
		if !errors.As(err, &te) || te.Have != len(short) || te.Got != mid {
			return fmt.Errorf("truncated mid-size receive: %v, want a TruncateError of %d into %d", err, mid, len(short))
		}
		if err := check("truncated mid-size receive", short, len(short), 30); err != nil {
			return err
		}
		bufs := make([][]byte, 16)
		reqs := make([]*endpoint.Request, 16)
		for i := range reqs {
			bufs[i] = make([]byte, big)
			if reqs[i], err = ep.Irecv(w, peer, 6, bufs[i]); err != nil {
				return err
			}
		}
		for i, r := range reqs {
			if err := ep.Wait(r); err != nil {
				return err
			}
			n := windowSize(i)
			if st := r.Status(); st.Count != n {
				return fmt.Errorf("window message %d: %d bytes, want %d", i, st.Count, n)
			}
			if err := check(fmt.Sprintf("window message %d", i), bufs[i][:n], n, 10+i); err != nil {
				return err
			}
		}
		return nil
	})
}

// windowSize is the size of TestJobLargeMessages's window message i:
// large and mid-size in turn, the mid-size ones of 2, 3 and 4 pieces of
// 8 KiB with ragged ends (rdma/mpi moves them in pieces under MPICH) and
// of 5 (moved whole).
func windowSize(i int) int {
	if i%2 == 0 {
		return 300_017
	}
	return 8192*(i/2%4) + 9000 + i
}
