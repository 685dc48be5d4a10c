package main

import (
	"testing"
	"time"
)

// benchCase is one contender of the benchmarks: a variant and its layout.
type benchCase struct {
	name    string
	variant string
	ranks   int
	threads int
	eps     int
}

// benchCases are the contenders: seq, and the parallel variants with 4
// fibers each on the 2 workers — threads with 4 fibers on one grid, mpi with
// 4 ranks, hybrid (2 or 1 endpoints per process) and funneled with 2
// processes of 2 fibers.
var benchCases = []benchCase{
	{"seq", "seq", 1, 1, 1},
	{"threads", "threads", 1, 4, 1},
	{"mpi", "mpi", 4, 1, 1},
	{"hybrid", "hybrid", 2, 2, 2},
	{"hybrid-1ep", "hybrid", 2, 2, 1},
	{"funneled", "funneled", 2, 2, 1},
}

// BenchmarkRedBlack runs every variant on a 2048×2048 grid for 40 iterations
// on 2 fiber workers that spin 20µs when idle (the command's default, see
// Config.Spin). ns/iter is the time of one iteration (a red and a black
// sweep) without the set-up (allocation and initialisation of the grid,
// start of the fibers); sec/op includes it. cpu-ns/iter is the process's CPU
// time per iteration, all threads together: on a shared machine it varies
// less than the wall time, which waits for cores that other programs hold.
//
//	go test -run '^$' -bench 'BenchmarkRedBlack$' -count 6 ./examples/redblack
func BenchmarkRedBlack(b *testing.B) {
	n, iters := 2048, 40
	if testing.Short() {
		n, iters = 256, 10
	}
	benchVariants(b, n, iters)
}

// BenchmarkRedBlackSmall is BenchmarkRedBlack on a 512×512 grid for 200
// iterations, where a sweep is short enough (about 0.1 ms per fiber) for the
// synchronization of the variants to show.
func BenchmarkRedBlackSmall(b *testing.B) {
	benchVariants(b, 512, 200)
}

func benchVariants(b *testing.B, n, iters int) {
	for _, c := range benchCases {
		v, err := Lookup(c.variant)
		if err != nil {
			b.Fatal(err)
		}
		cfg := Config{Rows: n, Cols: n, Iters: iters, Ranks: c.ranks, Threads: c.threads, Endpoints: c.eps,
			Workers: 2, Spin: 20 * time.Microsecond}
		b.Run(c.name, func(b *testing.B) {
			var run, cpu time.Duration
			ops := 0
			for b.Loop() {
				r, err := v.Run(cfg)
				if err != nil {
					b.Fatal(err)
				}
				run += r.Elapsed
				cpu += r.CPU
				ops++
			}
			b.ReportMetric(float64(run.Nanoseconds())/float64(ops*iters), "ns/iter")
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(ops*iters), "cpu-ns/iter")
		})
	}
}
