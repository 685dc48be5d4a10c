package trace_test

import (
	"path/filepath"
	"testing"

	"github.com/fibermpi/fibermpi/endpoint"
)

// BenchmarkPingPong is one one-way 8-byte message of a ping-pong between
// two fiber ranks, with tracing off and on, in one run: off is the cost
// every program pays (a nil test per call), on what recording costs.
func BenchmarkPingPong(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := "trace=off"
		if on {
			name = "trace=on"
		}
		b.Run(name, func(b *testing.B) {
			opts := endpoint.Options{} // one worker on two cores: both ranks on it, as comm.BenchmarkPingPong/fiber
			if on {
				opts.Trace = filepath.Join(b.TempDir(), "t.json")
			}
			b.SetBytes(8)
			err := endpoint.RunWith(endpoint.ThreadSingle, opts, 2, func(ep *endpoint.Endpoint) error {
				w, me := ep.World(), ep.Rank()
				buf := make([]byte, 8)
				other := 1 - me
				if me == 1 {
					for {
						if _, err := ep.Recv(w, other, 0, buf); err != nil {
							return err
						}
						if buf[0] == 1 { // stop
							return nil
						}
						if err := ep.Send(w, me, other, 0, buf); err != nil {
							return err
						}
					}
				}
				for b.Loop() {
					if err := ep.Send(w, me, other, 0, buf); err != nil {
						return err
					}
					if _, err := ep.Recv(w, other, 0, buf); err != nil {
						return err
					}
				}
				buf[0] = 1
				return ep.Send(w, me, other, 0, buf)
			})
			if err != nil {
				b.Fatal(err)
			}
		})
	}
}
