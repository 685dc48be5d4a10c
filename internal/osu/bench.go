package osu

import (
	"time"

	"github.com/fibermpi/fibermpi/comm"
)

// run runs the benchmark cfg on this caller, over every size, and prints
// the table if the caller is the printing one. pairs is mbw_mr's.
func (cl *caller) run(cfg Config, pairs int) error {
	switch cfg.Bench {
	case Latency:
		return cl.latency(cfg)
	case BW, BiBW:
		return cl.bandwidth(cfg)
	case MbwMr:
		return cl.mbwMr(cfg, pairs)
	case LatencyMT:
		return cl.latencyMT(cfg)
	case Allreduce:
		return cl.allreduce(cfg)
	case Bcast:
		return cl.bcast(cfg)
	case Reduce:
		return cl.reduce(cfg)
	case Barrier:
		return cl.barrier(cfg)
	}
	return nil // Validate rejected the rest
}

// print reports whether this caller prints the table.
func (cl *caller) print() bool { return cl.out != nil }

// emit prints a row of a point-to-point table if this caller prints, and
// returns the printer's error: a failed write ends the run.
func (cl *caller) emit(size int, vals ...float64) error {
	if cl.out == nil {
		return nil
	}
	cl.out.row(size, vals...)
	return cl.out.error()
}

// latency: a barrier, then rank 0's round trips; latency is half a round
// trip.
func (cl *caller) latency(cfg Config) error {
	c := cl.c
	peer := 1 - c.Rank()
	for _, size := range cfg.Sizes() {
		cl.touch(size)
		iters, warm := cfg.Counts(size)
		if err := c.Barrier(); err != nil {
			return err
		}
		d, err := pingPong(c, peer, tagLatency, c.Rank() == 0, cl.sbuf[:size], cl.rbuf[:size], warm, iters)
		if err != nil {
			return err
		}
		if err := cl.emit(size, micros(d)/(2*float64(iters))); err != nil {
			return err
		}
	}
	return nil
}

// bandwidth runs bw or bibw: rank 0's bytes over its time, in MB/s.
func (cl *caller) bandwidth(cfg Config) error {
	c := cl.c
	peer := 1 - c.Rank()
	window := cfg.window()
	for _, size := range cfg.Sizes() {
		cl.touch(size)
		iters, warm := cfg.Counts(size)
		if err := c.Barrier(); err != nil {
			return err
		}
		var d time.Duration
		var err error
		bytes := float64(size) / 1e6 * float64(iters) * float64(window)
		if cfg.Bench == BiBW {
			d, err = cl.biWindows(peer, size, window, warm, iters)
			bytes *= 2
		} else {
			d, err = cl.windows(peer, size, window, c.Rank() == 0, warm, iters)
		}
		if err != nil {
			return err
		}
		if err := cl.emit(size, bytes/d.Seconds()); err != nil {
			return err
		}
	}
	return nil
}

// mbwMr: rank i < pairs sends windows to rank i+pairs; after a barrier at
// the end of the warm-up every sender times its iterations; the bandwidth
// is the total bytes over the senders' mean time.
func (cl *caller) mbwMr(cfg Config, pairs int) error {
	c := cl.c
	rank := c.Rank()
	window := cfg.window()
	var mine, sum [1]float64
	for _, size := range cfg.Sizes() {
		cl.touch(size)
		iters, warm := cfg.Counts(size)
		if err := c.Barrier(); err != nil {
			return err
		}
		var d time.Duration
		var err error
		switch {
		case rank < 2*pairs:
			sender := rank < pairs
			peer := rank + pairs
			if !sender {
				peer = rank - pairs
			}
			if warm > 0 {
				if _, err = cl.windows(peer, size, window, sender, warm, 0); err != nil {
					return err
				}
			}
			if err = c.Barrier(); err != nil {
				return err
			}
			d, err = cl.windows(peer, size, window, sender, 0, iters)
		default:
			err = c.Barrier() // the one at the end of the warm-up
		}
		if err != nil {
			return err
		}
		mine[0] = d.Seconds()
		if err := cl.f64.Reduce(mine[:], sum[:], comm.Sum[float64](), 0); err != nil {
			return err
		}
		if cl.print() {
			mean := sum[0] / float64(pairs)
			bw := float64(size) / 1e6 * float64(pairs) * float64(iters) * float64(window) / mean
			if err := cl.emit(size, bw, 1e6*bw/float64(size)); err != nil {
				return err
			}
		}
	}
	return nil
}

// latencyMT: the rank's callers meet, caller 0 takes part in a barrier of
// the ranks, and they meet again; then caller k ping-pongs with caller k of
// the other rank on tag k, iterations dealt round-robin among the callers.
// Rank 0's callers meet after the warm-up (the last to arrive starts the
// clock) and after the timed round trips (the last stops it).
func (cl *caller) latencyMT(cfg Config) error {
	c, t, k := cl.c, cl.team, cl.thread
	f := int(t.n)
	w := c.Waiter()
	first := c.Rank() == 0
	peer := 1 - c.Rank()
	start := func() { t.t0 = time.Now() }
	stop := func() { t.t1 = time.Now() }
	for _, size := range cfg.Sizes() {
		iters, warm := cfg.Counts(size)
		t.wait(k, w, nil)
		if k == 0 {
			if err := c.Barrier(); err != nil {
				return err
			}
		}
		t.wait(k, w, nil)
		cl.touch(size)
		s, r := cl.sbuf[:size], cl.rbuf[:size]
		if _, err := pingPong(c, peer, k, first, s, r, share(warm, k, f), 0); err != nil {
			return err
		}
		if first {
			t.wait(k, w, start)
		}
		if _, err := pingPong(c, peer, k, first, s, r, 0, share(iters, k, f)); err != nil {
			return err
		}
		if first {
			t.wait(k, w, stop)
		}
		if cl.print() {
			if err := cl.emit(size, micros(t.t1.Sub(t.t0))/(2*float64(iters)/float64(f))); err != nil {
				return err
			}
		}
	}
	return nil
}

// collective times each of warmup+iterations calls of op on every rank,
// with a barrier after each, and reduces the per-rank means (µs) to rank
// 0: their average, minimum and maximum.
func (cl *caller) collective(iters, warm int, op func() error) (avg, lo, hi float64, err error) {
	c := cl.c
	if err := c.Barrier(); err != nil {
		return 0, 0, 0, err
	}
	var timer time.Duration
	for i := range warm + iters {
		t0 := time.Now()
		if err := op(); err != nil {
			return 0, 0, 0, err
		}
		if i >= warm {
			timer += time.Since(t0)
		}
		if err := c.Barrier(); err != nil {
			return 0, 0, 0, err
		}
	}
	mine := []float64{micros(timer) / float64(iters)}
	var out [1]float64
	if err := cl.f64.Reduce(mine, out[:], comm.Min[float64](), 0); err != nil {
		return 0, 0, 0, err
	}
	lo = out[0]
	if err := cl.f64.Reduce(mine, out[:], comm.Max[float64](), 0); err != nil {
		return 0, 0, 0, err
	}
	hi = out[0]
	if err := cl.f64.Reduce(mine, out[:], comm.Sum[float64](), 0); err != nil {
		return 0, 0, 0, err
	}
	return out[0] / float64(c.Size()), lo, hi, nil
}

// allreduce: MPI_FLOAT and MPI_SUM, size/4 elements.
func (cl *caller) allreduce(cfg Config) error {
	sum := comm.Sum[float32]() // made once: an Op is a value to keep
	return floats(cl, cfg, func(f32 *comm.Comm[float32], send, recv []float32) error {
		return f32.Allreduce(send, recv, sum)
	})
}

// reduce: MPI_FLOAT and MPI_SUM to rank 0, size/4 elements.
func (cl *caller) reduce(cfg Config) error {
	sum := comm.Sum[float32]()
	return floats(cl, cfg, func(f32 *comm.Comm[float32], send, recv []float32) error {
		return f32.Reduce(send, recv, sum, 0)
	})
}

// floats runs a reduction op over size/4 floats at every size.
func floats(cl *caller, cfg Config, op func(f32 *comm.Comm[float32], send, recv []float32) error) error {
	f32, err := comm.As[float32](cl.c)
	if err != nil {
		return err
	}
	n := cfg.maxSize() / 4
	send, recv := make([]float32, n), make([]float32, n)
	for i := range send {
		send[i] = 1
	}
	return cl.sized(cfg, func(size int) error {
		count := size / 4
		return op(f32, send[:count], recv[:count])
	})
}

// bcast: MPI_CHAR from rank 0, size bytes.
func (cl *caller) bcast(cfg Config) error {
	return cl.sized(cfg, func(size int) error { return cl.c.Bcast(cl.sbuf[:size], 0) })
}

// sized times op at every size of cfg and prints a row for each.
func (cl *caller) sized(cfg Config, op func(size int) error) error {
	for _, size := range cfg.Sizes() {
		iters, warm := cfg.Counts(size)
		avg, lo, hi, err := cl.collective(iters, warm, func() error { return op(size) })
		if err != nil {
			return err
		}
		if cl.print() {
			cl.out.collRow(size, avg, lo, hi, iters)
			if err := cl.out.error(); err != nil {
				return err
			}
		}
		if err := cl.c.Barrier(); err != nil {
			return err
		}
	}
	return nil
}

// barrier: one line, no size.
func (cl *caller) barrier(cfg Config) error {
	iters, warm := cfg.Counts(0)
	avg, lo, hi, err := cl.collective(iters, warm, cl.c.Barrier)
	if err != nil {
		return err
	}
	if cl.print() {
		cl.out.collRow(0, avg, lo, hi, iters)
	}
	return cl.out.error()
}
