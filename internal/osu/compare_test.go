package osu

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func latencyTable(title string, rows ...[2]float64) string {
	var b strings.Builder
	p := &printer{w: &b, bench: Latency}
	p.header(title, 0, 0, 0)
	for _, r := range rows {
		p.row(int(r[0]), r[1])
	}
	return b.String()
}

func mustParse(t *testing.T, s string) *Table {
	t.Helper()
	tab, err := Parse(strings.NewReader(s))
	if err != nil {
		t.Fatal(err)
	}
	return tab
}

func TestSummarize(t *testing.T) {
	var samples []Sample
	add := func(bench, who, table string) {
		samples = append(samples, Sample{Bench: bench, Contender: who, Table: mustParse(t, table)})
	}
	// fibermpi: medians 1.0 (8 B) and 10 (1 MiB); mpich 2.0 and 25; openmpi
	// lacks 1 MiB.
	add("latency", "fibermpi", latencyTable("(f)", [2]float64{8, 1.0}, [2]float64{1 << 20, 12}))
	add("latency", "fibermpi", latencyTable("(f)", [2]float64{8, 0.9}, [2]float64{1 << 20, 10}))
	add("latency", "fibermpi", latencyTable("(f)", [2]float64{8, 1.5}, [2]float64{1 << 20, 8}))
	add("latency", "mpich", latencyTable("(m)", [2]float64{8, 2.0}, [2]float64{1 << 20, 20}))
	add("latency", "mpich", latencyTable("(m)", [2]float64{8, 2.2}, [2]float64{1 << 20, 30}))
	add("latency", "openmpi", latencyTable("(o)", [2]float64{8, 0.5}))
	add("bw", "mpich", "# OSU MPI Bandwidth Test\n# Size      Bandwidth (MB/s)\n1 4.0\n")
	add("bw", "fibermpi", "# OSU MPI Bandwidth Test\n# Size      Bandwidth (MB/s)\n1 1.0\n")
	add("bw", "fibermpi", "# OSU MPI Bandwidth Test\n# Size      Bandwidth (MB/s)\n1 3.0\n")
	var out bytes.Buffer
	if err := Summarize(&out, samples, "fibermpi"); err != nil {
		t.Fatal(err)
	}
	want := `## latency: Latency (us) (lower is better)
#   fibermpi: 3 runs; OSU MPI Latency Test (f)
#   mpich: 2 runs; OSU MPI Latency Test (m)
#   openmpi: 1 runs; OSU MPI Latency Test (o)
#   med = median over runs, best = min; ratio = contender median / fibermpi median
# Size        fibermpi med        best       mpich med        best     ratio     openmpi med        best     ratio
8                     1.00        0.90            2.10        2.00      2.10            0.50        0.50      0.50
1048576              10.00        8.00           25.00       20.00      2.50               -           -         -

## bw: Bandwidth (MB/s) (higher is better)
#   fibermpi: 2 runs; OSU MPI Bandwidth Test
#   mpich: 1 runs; OSU MPI Bandwidth Test
#   med = median over runs, best = max; ratio = contender median / fibermpi median
# Size        fibermpi med        best       mpich med        best     ratio
1                     2.00        3.00            4.00        4.00      2.00
`
	if d := cmp.Diff(want, out.String()); d != "" {
		t.Errorf("Summarize (-want +got):\n%s", d)
	}
}

func TestSummarizeNoBaseline(t *testing.T) {
	samples := []Sample{{Bench: "barrier", Contender: "mpich",
		Table: mustParse(t, "\n# OSU MPI Barrier Latency Test\n# Avg Latency(us)\n             1.69\n")}}
	var out bytes.Buffer
	if err := Summarize(&out, samples, "fibermpi"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"no fibermpi runs: no ratios", "\n-                     1.69        1.69         -\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, out.String())
		}
	}
}

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{
		{[]float64{3}, 3},
		{[]float64{3, 1}, 2},
		{[]float64{5, 1, 3}, 3},
		{[]float64{4, 1, 3, 2}, 2.5},
	} {
		in := append([]float64(nil), c.in...)
		if got := Median(c.in); got != c.want {
			t.Errorf("Median(%v) = %v, want %v", c.in, got, c.want)
		}
		if !cmp.Equal(in, c.in) {
			t.Errorf("Median changed its input to %v", c.in)
		}
	}
}

func TestLoadDir(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, s string) {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := LoadDir(dir); !errors.Is(err, ErrNoSamples) {
		t.Errorf("LoadDir(empty) = %v, want ErrNoSamples", err)
	}
	for r := range 3 {
		write(fmt.Sprintf("latency/mpich/%d.txt", r), latencyTable("", [2]float64{8, float64(r + 1)}))
	}
	write("latency/fibermpi/1.txt", latencyTable("", [2]float64{8, 1}))
	write("latency/fibermpi/notes.log", "not a table") // not *.txt: ignored
	got, err := LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, s := range got {
		if s.Bench != "latency" {
			t.Errorf("%s: bench %q", s.Path, s.Bench)
		}
		count[s.Contender]++
	}
	if count["mpich"] != 3 || count["fibermpi"] != 1 || len(count) != 2 {
		t.Errorf("samples per contender %v, want mpich 3, fibermpi 1", count)
	}
	write("latency/openmpi/1.txt", "# OSU MPI Latency Test\n# Size  Latency (us)\n8 x\n")
	if _, err := LoadDir(dir); !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "openmpi") {
		t.Errorf("LoadDir with a bad table = %v, want ErrFormat naming the file", err)
	}
}

// A run of each size on its own (bench-mpi-quick) is one run per size,
// not two.
func TestSummarizeRunsPerSize(t *testing.T) {
	var samples []Sample
	for round := range 3 {
		for _, size := range []float64{8, 1 << 20} {
			samples = append(samples, Sample{Bench: "latency", Contender: "fibermpi",
				Table: mustParse(t, latencyTable("", [2]float64{size, float64(round + 1)}))})
		}
	}
	var out bytes.Buffer
	if err := Summarize(&out, samples, "fibermpi"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"fibermpi: 3 runs;", "\n8                     2.00        1.00\n", "\n1048576               2.00        1.00\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, out.String())
		}
	}
}
