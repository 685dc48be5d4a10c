package osu

import (
	"fmt"
	"testing"

	"github.com/fibermpi/fibermpi/comm"
	"github.com/fibermpi/fibermpi/endpoint"
)

// The measuring core as go test benchmarks, in-process (two ranks as
// fibers of one process): one op of BenchmarkLatency is one round trip
// (ns/op); one-way-us is OSU's latency, half of it. One op of BenchmarkBW is
// one window of 64 messages and its reply; MB/s is OSU's bandwidth. Both
// ranks must run the same number of iterations, so these loop b.N times
// rather than with b.Loop, which only one side could consult.
//
//	go test -run '^$' -bench 'Latency|BW' -count 6 ./internal/osu

var benchSizes = []int{8, 1 << 20}

func BenchmarkLatency(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			runPair(b, Config{Bench: Latency, MaxSize: size}, func(cl *caller) error {
				c := cl.c
				s, r := cl.sbuf[:size], cl.rbuf[:size]
				first := c.Rank() == 0
				if _, err := pingPong(c, 1-c.Rank(), tagLatency, first, s, r, 100, 0); err != nil {
					return err
				}
				if err := c.Barrier(); err != nil {
					return err
				}
				if first {
					b.ResetTimer()
				}
				d, err := pingPong(c, 1-c.Rank(), tagLatency, first, s, r, 0, b.N)
				if first {
					b.StopTimer()
					b.ReportMetric(micros(d)/(2*float64(b.N)), "one-way-us")
				}
				return err
			})
		})
	}
}

func BenchmarkBW(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			cfg := Config{Bench: BW, MaxSize: size}
			runPair(b, cfg, func(cl *caller) error {
				c := cl.c
				first := c.Rank() == 0
				w := cfg.window()
				if _, err := cl.windows(1-c.Rank(), size, w, first, 2, 0); err != nil {
					return err
				}
				if err := c.Barrier(); err != nil {
					return err
				}
				if first {
					b.SetBytes(int64(size * w))
					b.ResetTimer()
				}
				_, err := cl.windows(1-c.Rank(), size, w, first, 0, b.N)
				if first {
					b.StopTimer()
				}
				return err
			})
		})
	}
}

// runPair runs fn on both ranks of an in-process pair, each a fiber with
// its caller for cfg.
func runPair(b *testing.B, cfg Config, fn func(*caller) error) {
	b.Helper()
	err := endpoint.RunWith(endpoint.ThreadSingle, endpoint.Options{}, 2, func(ep *endpoint.Endpoint) error {
		c, err := comm.World[byte](ep)
		if err != nil {
			return err
		}
		cl, err := newCaller(c, cfg, 0, nil, nil)
		if err != nil {
			return err
		}
		cl.touch(cfg.maxSize())
		return fn(cl)
	})
	if err != nil {
		b.Fatal(err)
	}
}
