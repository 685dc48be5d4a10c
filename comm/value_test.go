package comm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/fibermpi/fibermpi/comm"
	"github.com/fibermpi/fibermpi/endpoint"
	"github.com/google/go-cmp/cmp"
)

type record struct {
	Name  string
	Tags  map[string][]int
	Child *record
}

func recordOf(r int) record {
	return record{Name: fmt.Sprint("rank ", r), Tags: map[string][]int{"r": {r, r * r}}, Child: &record{Name: "child"}}
}

// jsonCodec is a Codec other than gob, to check SetCodec.
type jsonCodec struct{}

func (jsonCodec) Marshal(v any) ([]byte, error)        { return json.Marshal(v) }
func (jsonCodec) Unmarshal(data []byte, ptr any) error { return json.Unmarshal(data, ptr) }

// TestValues: strings, maps and pointer-holding structs travel by
// SendValue/RecvValue, IsendValue/IrecvValue, BcastValue and GatherValue,
// with gob and with a JSON codec, on fibers and goroutines; a value that
// does not decode into the receiver's type is an error naming it;
// RecvValueContext gives up with the context and takes no message.
func TestValues(t *testing.T) {
	for _, run := range []struct {
		name string
		fn   func(endpoint.ThreadLevel, endpoint.Options, int, func(*endpoint.Endpoint) error) error
	}{{"fibers", endpoint.RunWith}, {"goroutines", endpoint.RunGoroutinesWith}} {
		for _, codec := range []comm.Codec{nil, jsonCodec{}} {
			t.Run(fmt.Sprintf("%s/%T", run.name, codec), func(t *testing.T) {
				err := run.fn(endpoint.ThreadSingle, endpoint.Options{}, 3, func(ep *endpoint.Endpoint) error {
					c, err := comm.World[float64](ep)
					if err != nil {
						return err
					}
					c.SetCodec(codec)
					return valueRank(c)
				})
				if err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

func valueRank(c *comm.Comm[float64]) error {
	me, n := c.Rank(), c.Size()
	// A ring of records, blocking.
	if err := comm.SendValue(c, recordOf(me), (me+1)%n, 1); err != nil {
		return err
	}
	var got record
	st, err := comm.RecvValue(c, &got, comm.AnySource, 1)
	if err != nil {
		return err
	}
	left := (me + n - 1) % n
	if d := cmp.Diff(recordOf(left), got); d != "" || st.Source != left || st.Count == 0 {
		return fmt.Errorf("rank %d: RecvValue from %d (-want +got):\n%s", me, st.Source, d)
	}
	// Nonblocking, the other way round.
	sq, err := comm.IsendValue(c, fmt.Sprint("from ", me), left, 2)
	if err != nil {
		return err
	}
	var s string
	rq, err := comm.IrecvValue(c, &s, (me+1)%n, 2)
	if err != nil {
		return err
	}
	if _, err := rq.Wait(); err != nil {
		return err
	}
	if _, err := sq.Wait(); err != nil {
		return err
	}
	if want := fmt.Sprint("from ", (me+1)%n); s != want {
		return fmt.Errorf("rank %d: IrecvValue got %q, want %q", me, s, want)
	}
	// Collectives.
	var m map[string]int
	if me == 1 {
		m = map[string]int{"a": 1, "b": 2}
	}
	if err := comm.BcastValue(c, &m, 1); err != nil {
		return err
	}
	if d := cmp.Diff(map[string]int{"a": 1, "b": 2}, m); d != "" {
		return fmt.Errorf("rank %d: BcastValue (-want +got):\n%s", me, d)
	}
	all, err := comm.GatherValue(c, []string{fmt.Sprint(me), "x"}[:1+me%2], 2)
	if err != nil {
		return err
	}
	if me == 2 {
		if d := cmp.Diff([][]string{{"0"}, {"1", "x"}, {"2"}}, all); d != "" {
			return fmt.Errorf("GatherValue (-want +got):\n%s", d)
		}
	} else if all != nil {
		return fmt.Errorf("rank %d: GatherValue gave %v off the root", me, all)
	}
	// A type mismatch is an error, and the message is consumed.
	if me == 0 {
		if err := comm.SendValue(c, "not a number", 1, 3); err != nil {
			return err
		}
	}
	if me == 1 {
		var x struct{ A, B int }
		if _, err := comm.RecvValue(c, &x, 0, 3); err == nil {
			return errors.New("decoding a string into a struct: no error")
		}
		if _, ok, _ := c.Iprobe(0, 3); ok {
			return errors.New("the undecodable message is still there")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		if _, err := comm.RecvValueContext(ctx, c, &x, 0, 4); !errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("RecvValueContext with nothing sent: %v", err)
		}
	}
	return c.Barrier()
}

// BenchmarkValue: a ping-pong of 1024 float64 between two ranks, the
// typed path (Send/Recv, no copy) against SendValue/RecvValue (gob), in
// one run so their ratio means something.
func BenchmarkValue(b *testing.B) {
	const n = 1024
	for _, how := range []string{"typed", "gob"} {
		b.Run(how, func(b *testing.B) {
			b.SetBytes(8 * n)
			err := endpoint.Run(2, func(ep *endpoint.Endpoint) error {
				c, err := comm.World[float64](ep)
				if err != nil {
					return err
				}
				buf := make([]float64, n)
				other := 1 - c.Rank()
				if c.Rank() == 0 {
					b.ResetTimer()
				}
				for range b.N {
					if c.Rank() == 0 {
						if how == "typed" {
							err = c.Send(buf, other, 0)
						} else {
							err = comm.SendValue(c, buf, other, 0)
						}
						if err != nil {
							return err
						}
					}
					if how == "typed" {
						_, err = c.Recv(buf, other, 0)
					} else {
						_, err = comm.RecvValue(c, &buf, other, 0)
					}
					if err != nil {
						return err
					}
					if c.Rank() == 1 {
						if how == "typed" {
							err = c.Send(buf, other, 0)
						} else {
							err = comm.SendValue(c, buf, other, 0)
						}
						if err != nil {
							return err
						}
					}
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		})
	}
}

// TestContextForms: RecvContext, ProbeContext and MprobeContext return the
// context's error when nothing comes, leave no receive posted (a later
// message goes to a later Recv) and work when a message does come.
func TestContextForms(t *testing.T) {
	for _, run := range []struct {
		name string
		fn   func(endpoint.ThreadLevel, endpoint.Options, int, func(*endpoint.Endpoint) error) error
	}{{"fibers", endpoint.RunWith}, {"goroutines", endpoint.RunGoroutinesWith}} {
		t.Run(run.name, func(t *testing.T) {
			err := run.fn(endpoint.ThreadSingle, endpoint.Options{}, 2, func(ep *endpoint.Endpoint) error {
				c, err := comm.World[int](ep)
				if err != nil {
					return err
				}
				if c.Rank() == 1 {
					if _, err := c.Recv(nil, 0, 9); err != nil { // go-ahead
						return err
					}
					return c.Send([]int{5}, 0, 1)
				}
				short := func() (context.Context, context.CancelFunc) {
					return context.WithTimeout(context.Background(), 5*time.Millisecond)
				}
				ctx, cancel := short()
				defer cancel()
				buf := []int{0}
				if _, err := c.RecvContext(ctx, buf, 1, 1); !errors.Is(err, context.DeadlineExceeded) {
					return fmt.Errorf("RecvContext: %v", err)
				}
				ctx, cancel = short()
				defer cancel()
				if _, err := c.ProbeContext(ctx, 1, 1); !errors.Is(err, context.DeadlineExceeded) {
					return fmt.Errorf("ProbeContext: %v", err)
				}
				ctx, cancel = short()
				defer cancel()
				if _, _, err := c.MprobeContext(ctx, 1, 1); !errors.Is(err, context.DeadlineExceeded) {
					return fmt.Errorf("MprobeContext: %v", err)
				}
				if err := c.Send(nil, 1, 9); err != nil {
					return err
				}
				if st, err := c.ProbeContext(context.Background(), 1, 1); err != nil || st.Count != 1 {
					return fmt.Errorf("ProbeContext with a message: %+v %v", st, err)
				}
				st, err := c.RecvContext(context.Background(), buf, 1, 1) // not taken by the withdrawn ones
				if err != nil || buf[0] != 5 || st.Source != 1 {
					return fmt.Errorf("RecvContext with a message: %+v %v %v", st, err, buf)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}
