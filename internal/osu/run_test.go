package osu

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fibermpi/fibermpi/endpoint"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// tiny returns cfg with few iterations, so a run takes milliseconds.
func tiny(cfg Config) Config {
	cfg.Iterations, cfg.Warmup = 20, 3
	if cfg.MaxSize == 0 && cfg.Bench != Barrier {
		cfg.MaxSize = 64
	}
	return cfg
}

// wantColumns is each benchmark's value columns.
func wantColumns(cfg Config) []string {
	switch cfg.Bench {
	case Latency, LatencyMT:
		return []string{latencyColumn}
	case BW, BiBW:
		return []string{bwColumn}
	case MbwMr:
		return []string{mbwColumn, msgRateColumn}
	}
	if cfg.Full {
		return []string{avgLatColumn, minLatColumn, maxLatColumn, iterColumn}
	}
	return []string{avgLatColumn}
}

// rowPattern is the exact layout of a data line: OMB's widths.
func rowPattern(cfg Config) *regexp.Regexp {
	val := `[ \d.]{20}`
	var s string
	switch {
	case cfg.Bench == Barrier:
		s = `^[ \d.]{17}`
	default:
		s = `^\d[\d ]{9}` + val
	}
	if cfg.Bench == MbwMr {
		s += val
	}
	if cfg.Full && cfg.Bench.class() == classColl {
		s += val + val + `[ \d]{12}`
	}
	return regexp.MustCompile(s + `$`)
}

// checkOutput parses a run's output and checks it against cfg: OMB's
// header lines and widths, one row per size in order, positive numbers.
func checkOutput(t *testing.T, cfg Config, out string) {
	t.Helper()
	tab, err := Parse(strings.NewReader(out))
	if err != nil {
		t.Fatalf("Parse: %v\n%s", err, out)
	}
	if want := cfg.Bench.Title() + " (fibermpi"; !strings.HasPrefix(tab.Title, want) {
		t.Errorf("title %q, want prefix %q", tab.Title, want)
	}
	if got, want := tab.Columns, wantColumns(cfg); !slices.Equal(got, want) {
		t.Errorf("columns %q, want %q", got, want)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	switch cfg.Bench {
	case Allreduce, Bcast, Reduce, Barrier:
		if lines[0] != "" {
			t.Errorf("a collective's output starts with an empty line, got %q", lines[0])
		}
	case MbwMr:
		if want := fmt.Sprintf("[ pairs: %d ] [ window size: %d ]", max(cfg.Pairs, 1), cfg.window()); !slices.Equal(tab.Notes, []string{want}) {
			t.Errorf("notes %q, want %q", tab.Notes, want)
		}
	case LatencyMT:
		n := cfg.threads()
		want := []string{fmt.Sprintf("Number of Sender threads: %d", n), fmt.Sprintf("Number of Receiver threads: %d", n)}
		if !slices.Equal(tab.Notes, want) {
			t.Errorf("notes %q, want %q", tab.Notes, want)
		}
	}
	var header string
	for _, l := range lines {
		if strings.HasPrefix(l, "# Size") || strings.HasPrefix(l, "# Avg") {
			header = l
		}
	}
	wantHeader := map[Bench]string{
		Latency:   "# Size            Latency (us)",
		LatencyMT: "# Size            Latency (us)",
		BW:        "# Size        Bandwidth (MB/s)",
		BiBW:      "# Size        Bandwidth (MB/s)",
		MbwMr:     "# Size                    MB/s          Messages/s",
		Allreduce: "# Size         Avg Latency(us)",
		Bcast:     "# Size         Avg Latency(us)",
		Reduce:    "# Size         Avg Latency(us)",
		Barrier:   "# Avg Latency(us)",
	}[cfg.Bench]
	if cfg.Full {
		wantHeader += "     Min Latency(us)     Max Latency(us)  Iterations"
	}
	if header != wantHeader {
		t.Errorf("column line %q, want %q", header, wantHeader)
	}
	re := rowPattern(cfg)
	for _, l := range lines {
		if l != "" && !strings.HasPrefix(l, "#") && !re.MatchString(l) {
			t.Errorf("row %q does not have OMB's widths (%s)", l, re)
		}
	}
	sizes := cfg.Sizes()
	if cfg.Bench == Barrier {
		sizes = []int{0}
	}
	if len(tab.Rows) != len(sizes) {
		t.Fatalf("%d rows, want %d (sizes %v)", len(tab.Rows), len(sizes), sizes)
	}
	for i, r := range tab.Rows {
		if r.Size != sizes[i] {
			t.Errorf("row %d: size %d, want %d", i, r.Size, sizes[i])
		}
		if i > 0 && r.Size <= tab.Rows[i-1].Size {
			t.Errorf("row %d: size %d not above %d", i, r.Size, tab.Rows[i-1].Size)
		}
		for j, v := range r.Values {
			// The bandwidth of a few bytes, printed with 2 decimals in MB/s,
			// rounds to 0.00 when a loaded machine makes the run slow.
			if v == 0 && r.Size < 64 && !LowerIsBetter(tab.Columns[j]) {
				continue
			}
			if !(v > 0) || math.IsInf(v, 0) {
				t.Errorf("row %d (size %d): %s = %v, want a positive number", i, r.Size, tab.Columns[j], v)
			}
		}
		if k := tab.Column(iterColumn); k >= 0 && r.Values[k] != float64(cfg.Iterations) {
			t.Errorf("row %d: iterations %v, want %d", i, r.Values[k], cfg.Iterations)
		}
	}
}

func TestRunEveryBenchmark(t *testing.T) {
	cases := []Config{
		{Bench: Latency},
		{Bench: Latency, MinSize: 3, MaxSize: 9000}, // crosses the large-message size
		{Bench: BW},
		{Bench: BW, Window: 3},
		{Bench: BiBW},
		{Bench: MbwMr},
		{Bench: MbwMr, Pairs: 2, Window: 8},
		{Bench: LatencyMT},
		{Bench: LatencyMT, Threads: 5},
		{Bench: Allreduce},
		{Bench: Allreduce, Ranks: 3, Full: true},
		{Bench: Bcast},
		{Bench: Bcast, Ranks: 5, Full: true},
		{Bench: Reduce},
		{Bench: Reduce, Ranks: 3, Full: true},
		{Bench: Barrier},
		{Bench: Barrier, Ranks: 4, Full: true},
	}
	for _, cfg := range cases {
		cfg = tiny(cfg)
		t.Run(fmt.Sprintf("%s/%+v", cfg.Bench, cfg), func(t *testing.T) {
			var out bytes.Buffer
			if err := Run(cfg, Options{}, &out); err != nil {
				t.Fatalf("Run: %v\n%s", err, out.String())
			}
			checkOutput(t, cfg, out.String())
		})
	}
}

// The same benchmarks with callers on goroutines, and on fibers spread
// over two workers (so that callers of one rank really run at once).
func TestRunModes(t *testing.T) {
	for _, opts := range []Options{
		{Goroutines: true},
		{Endpoint: endpoint.Options{Workers: 2}},
		{Endpoint: endpoint.Options{EagerLimit: -1}}, // everything by rendezvous
	} {
		for _, b := range []Bench{Latency, BiBW, MbwMr, LatencyMT, Allreduce} {
			cfg := tiny(Config{Bench: b, Threads: 3})
			t.Run(fmt.Sprintf("%s/goroutines=%v/workers=%d/eager=%d", b, opts.Goroutines, opts.Endpoint.Workers, opts.Endpoint.EagerLimit), func(t *testing.T) {
				var out bytes.Buffer
				if err := Run(cfg, opts, &out); err != nil {
					t.Fatalf("Run: %v\n%s", err, out.String())
				}
				checkOutput(t, cfg, out.String())
				if opts.Goroutines && !strings.Contains(out.String(), "goroutines;") {
					t.Errorf("title does not say the callers are goroutines:\n%s", out.String())
				}
			})
		}
	}
}

func TestRunBadConfig(t *testing.T) {
	for _, cfg := range []Config{
		{Bench: "pingpong"},
		{Bench: Latency, MaxSize: -1},
		{Bench: BW, MinSize: 1 << 23},
		{Bench: Allreduce, MaxSize: 2}, // below one float
		{Bench: MbwMr, Window: -1},
		{Bench: LatencyMT, Threads: MaxThreads + 1},
		{Bench: Barrier, Ranks: 1},
	} {
		var out bytes.Buffer
		if err := Run(cfg, Options{}, &out); !errors.Is(err, ErrConfig) {
			t.Errorf("Run(%+v) = %v, want ErrConfig", cfg, err)
		}
		if out.Len() != 0 {
			t.Errorf("Run(%+v) wrote %q", cfg, out.String())
		}
	}
}

// failWriter fails every write after the first n bytes.
type failWriter struct {
	n   int
	buf bytes.Buffer
}

var errWrite = errors.New("write refused")

func (w *failWriter) Write(p []byte) (int, error) {
	if w.buf.Len()+len(p) > w.n {
		return 0, errWrite
	}
	return w.buf.Write(p)
}

// When the printing rank fails (here its output), the other rank is left
// waiting for it; Run must cancel it and return the error, not hang.
func TestRunFailingRankDoesNotHang(t *testing.T) {
	for _, n := range []int{0, 200} { // at the header; after a few rows
		for _, b := range []Bench{Latency, LatencyMT, Allreduce} {
			cfg := tiny(Config{Bench: b})
			w := &failWriter{n: n}
			done := make(chan error, 1)
			go func() { done <- Run(cfg, Options{Drain: 10 * time.Second}, w) }()
			select {
			case err := <-done:
				if !errors.Is(err, errWrite) {
					t.Errorf("%s, writes fail after %d bytes: Run = %v, want %v", b, n, err, errWrite)
				}
			case <-time.After(time.Minute):
				t.Fatalf("%s: Run did not return within a minute after its output failed", b)
			}
		}
	}
}
