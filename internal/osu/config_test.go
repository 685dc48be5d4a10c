package osu

import (
	"errors"
	"slices"
	"testing"
)

func TestSizes(t *testing.T) {
	pow := func(lo, hi int) []int {
		var s []int
		for x := lo; x <= hi; x *= 2 {
			s = append(s, x)
		}
		return s
	}
	cases := []struct {
		cfg  Config
		want []int
	}{
		{Config{Bench: Latency}, append([]int{0}, pow(1, 1<<22)...)},
		{Config{Bench: LatencyMT, MaxSize: 8}, []int{0, 1, 2, 4, 8}},
		{Config{Bench: BW}, pow(1, 1<<22)},
		{Config{Bench: BiBW, MinSize: 0, MaxSize: 4}, []int{1, 2, 4}},
		{Config{Bench: MbwMr, MinSize: 5, MaxSize: 100}, []int{8, 16, 32, 64}},
		{Config{Bench: Latency, MinSize: 8, MaxSize: 8}, []int{8}},
		{Config{Bench: Latency, MinSize: 1 << 20, MaxSize: 1 << 20}, []int{1 << 20}},
		{Config{Bench: Allreduce}, pow(4, 1<<20)},
		{Config{Bench: Allreduce, MinSize: 1, MaxSize: 10}, []int{4, 8}},
		{Config{Bench: Allreduce, MinSize: 8, MaxSize: 1 << 22}, pow(8, 1<<22)},
		{Config{Bench: Bcast}, pow(1, 1<<20)},
		{Config{Bench: Reduce, MinSize: 1, MaxSize: 10}, []int{4, 8}},
		{Config{Bench: Barrier}, nil},
	}
	for _, c := range cases {
		if got := c.cfg.Sizes(); !slices.Equal(got, c.want) {
			t.Errorf("%+v: Sizes = %v, want %v", c.cfg, got, c.want)
		}
		if err := c.cfg.Validate(); err != nil {
			t.Errorf("%+v: Validate = %v", c.cfg, err)
		}
	}
}

func TestCounts(t *testing.T) {
	cases := []struct {
		cfg               Config
		size, iters, warm int
	}{
		{Config{Bench: Latency}, 8192, 10000, 100},
		{Config{Bench: Latency}, 8193, 1000, 10},
		{Config{Bench: LatencyMT}, 0, 10000, 100},
		{Config{Bench: BW}, 8, 100, 10},
		{Config{Bench: BiBW}, 1 << 20, 20, 2},
		{Config{Bench: MbwMr}, 1 << 20, 20, 2},
		{Config{Bench: Allreduce}, 4, 1000, 200},
		{Config{Bench: Allreduce}, 1 << 20, 100, 10},
		{Config{Bench: Barrier}, 0, 1000, 200},
		{Config{Bench: Latency, Iterations: 7}, 1 << 20, 7, 10}, // -i sets both classes
		{Config{Bench: BW, Warmup: 3}, 1 << 20, 20, 3},
		{Config{Bench: BW, Warmup: -1}, 1, 100, 0},
	}
	for _, c := range cases {
		i, w := c.cfg.Counts(c.size)
		if i != c.iters || w != c.warm {
			t.Errorf("%+v size %d: Counts = %d, %d, want %d, %d", c.cfg, c.size, i, w, c.iters, c.warm)
		}
	}
}

func TestValidate(t *testing.T) {
	bad := []Config{
		{},
		{Bench: "osu_latency"},
		{Bench: Latency, MinSize: -1},
		{Bench: Latency, MaxSize: MaxSizeLimit + 1},
		{Bench: Latency, MinSize: 64, MaxSize: 32},
		{Bench: Latency, Iterations: -1},
		{Bench: BW, Window: MaxWindow + 1},
		{Bench: LatencyMT, Threads: -2},
		{Bench: MbwMr, Pairs: -1},
		{Bench: Allreduce, Ranks: 1},
		{Bench: Allreduce, MaxSize: 3},
	}
	for _, c := range bad {
		if err := c.Validate(); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: Validate = %v, want ErrConfig", c, err)
		}
	}
}

func TestCheckWorld(t *testing.T) {
	cases := []struct {
		cfg   Config
		n     int
		pairs int
		ok    bool
	}{
		{Config{Bench: Latency}, 2, 0, true},
		{Config{Bench: Latency}, 3, 0, false},
		{Config{Bench: LatencyMT}, 1, 0, false},
		{Config{Bench: MbwMr}, 2, 1, true},
		{Config{Bench: MbwMr}, 5, 2, true},
		{Config{Bench: MbwMr, Pairs: 1}, 4, 1, true},
		{Config{Bench: MbwMr, Pairs: 3}, 4, 0, false},
		{Config{Bench: MbwMr}, 1, 0, false},
		{Config{Bench: Allreduce}, 7, 0, true},
		{Config{Bench: Barrier}, 1, 0, false},
	}
	for _, c := range cases {
		pairs, err := c.cfg.checkWorld(c.n)
		if ok := err == nil; ok != c.ok || pairs != c.pairs {
			t.Errorf("%+v on %d ranks: checkWorld = %d, %v; want %d, ok %v", c.cfg, c.n, pairs, err, c.pairs, c.ok)
		}
		if err != nil && !errors.Is(err, ErrConfig) {
			t.Errorf("%+v on %d ranks: error %v is not ErrConfig", c.cfg, c.n, err)
		}
	}
}

func TestParseSizes(t *testing.T) {
	good := map[string][2]int{
		"128":     {0, 128},
		"2:128":   {2, 128},
		"2:":      {2, 0},
		":128":    {0, 128},
		"0:4096":  {0, 4096},
		"8:8":     {8, 8},
		"1048576": {0, 1048576},
	}
	for in, want := range good {
		lo, hi, err := ParseSizes(in)
		if err != nil || lo != want[0] || hi != want[1] {
			t.Errorf("ParseSizes(%q) = %d, %d, %v; want %d, %d", in, lo, hi, err, want[0], want[1])
		}
	}
	for _, in := range []string{"", ":", "0", "-1", "a:b", "8:4", "1:2:3", "4:0", "1.5"} {
		if _, _, err := ParseSizes(in); !errors.Is(err, ErrConfig) {
			t.Errorf("ParseSizes(%q) = %v, want ErrConfig", in, err)
		}
	}
}

func TestShare(t *testing.T) {
	for n := range 20 {
		for f := 1; f <= 6; f++ {
			total := 0
			for k := range f {
				s := share(n, k, f)
				want := 0
				for i := k; i < n; i += f {
					want++
				}
				if s != want {
					t.Errorf("share(%d, %d, %d) = %d, want %d", n, k, f, s, want)
				}
				total += s
			}
			if total != n {
				t.Errorf("shares of %d among %d add up to %d", n, f, total)
			}
		}
	}
}
