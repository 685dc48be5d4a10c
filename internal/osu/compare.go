package osu

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// ErrNoSamples is returned by LoadDir for a directory without tables.
var ErrNoSamples = errors.New("osu: no tables found")

// Sample is one table from one run of a benchmark by one contender
// (fibermpi, mpich, openmpi, ...).
type Sample struct {
	Bench, Contender string
	Path             string // where it was read from, for messages
	Table            *Table
}

// LoadDir reads every dir/<bench>/<contender>/*.txt as one table.
func LoadDir(dir string) ([]Sample, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*", "*", "*.txt"))
	if err != nil {
		return nil, err
	}
	slices.Sort(files)
	var out []Sample
	for _, f := range files {
		t, err := parseFile(f)
		if err != nil {
			return nil, err
		}
		contender := filepath.Base(filepath.Dir(f))
		bench := filepath.Base(filepath.Dir(filepath.Dir(f)))
		out = append(out, Sample{Bench: bench, Contender: contender, Path: f, Table: t})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w in %s (want %s)", ErrNoSamples, dir, filepath.Join(dir, "<bench>", "<contender>", "*.txt"))
	}
	return out, nil
}

func parseFile(name string) (*Table, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	t, err := Parse(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return t, nil
}

// LowerIsBetter reports whether smaller values of the column are better
// (latencies) rather than larger (bandwidths, rates).
func LowerIsBetter(column string) bool {
	return strings.Contains(column, "Latency") || strings.Contains(column, "(us)")
}

// Median returns the median of v (the mean of the middle two for an even
// count); v is not modified. It panics on an empty v.
func Median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// stat is one contender's samples of one column at one size.
type stat struct{ vals []float64 }

// Summarize writes, for every benchmark and value column, one table: a line
// per size with every contender's median and best value over its samples
// and, for the others, the ratio of their median to the baseline's median.
// Best is the minimum of a latency and the maximum of a bandwidth or rate.
// Benchmarks come in the order of Benches (unknown ones after, by name),
// the baseline contender first and the others by name.
func Summarize(w io.Writer, samples []Sample, baseline string) error {
	byBench := map[string][]Sample{}
	for _, s := range samples {
		byBench[s.Bench] = append(byBench[s.Bench], s)
	}
	names := make([]string, 0, len(byBench))
	for b := range byBench {
		names = append(names, b)
	}
	order := func(b string) int {
		if i := slices.Index(Benches, Bench(b)); i >= 0 {
			return i
		}
		return len(Benches)
	}
	slices.SortFunc(names, func(a, b string) int {
		return cmp.Or(cmp.Compare(order(a), order(b)), cmp.Compare(a, b))
	})
	pw := &printer{w: w}
	for i, b := range names {
		if i > 0 {
			pw.printf("\n")
		}
		summarizeBench(pw, b, byBench[b], baseline)
	}
	return pw.err
}

func summarizeBench(pw *printer, bench string, samples []Sample, baseline string) {
	var contenders, columns []string
	title := map[string]string{}
	for _, s := range samples {
		if !slices.Contains(contenders, s.Contender) {
			contenders = append(contenders, s.Contender)
			title[s.Contender] = s.Table.Title
		}
		for _, c := range s.Table.Columns {
			if c != iterColumn && !slices.Contains(columns, c) {
				columns = append(columns, c)
			}
		}
	}
	slices.SortFunc(contenders, func(a, b string) int {
		return cmp.Or(-cmp.Compare(boolInt(a == baseline), boolInt(b == baseline)), cmp.Compare(a, b))
	})
	hasBase := slices.Contains(contenders, baseline)
	for ci, col := range columns {
		if ci > 0 {
			pw.printf("\n")
		}
		lower := LowerIsBetter(col)
		best, better := "max", "higher"
		if lower {
			best, better = "min", "lower"
		}

		// per contender, per size: the values
		vals := map[string]map[int]*stat{}
		var sizes []int
		for _, s := range samples {
			k := s.Table.Column(col)
			if k < 0 {
				continue
			}
			m := vals[s.Contender]
			if m == nil {
				m = map[int]*stat{}
				vals[s.Contender] = m
			}
			for _, r := range s.Table.Rows {
				st := m[r.Size]
				if st == nil {
					st = &stat{}
					m[r.Size] = st
					if !slices.Contains(sizes, r.Size) {
						sizes = append(sizes, r.Size)
					}
				}
				st.vals = append(st.vals, r.Values[k])
			}
		}
		slices.Sort(sizes)

		pw.printf("## %s: %s (%s is better)\n", bench, col, better)
		for _, c := range contenders {
			runs := 0 // samples per size: a run may cover only some sizes
			for _, st := range vals[c] {
				runs = max(runs, len(st.vals))
			}
			pw.printf("#   %s: %d runs; %s\n", c, runs, title[c])
		}
		ratio := "ratio = contender median / " + baseline + " median"
		if !hasBase {
			ratio = "no " + baseline + " runs: no ratios"
		}
		pw.printf("#   med = median over runs, best = %s; %s\n", best, ratio)

		pw.printf("%-*s", sizeWidth, sizeColumn)
		for _, c := range contenders {
			pw.printf("%*s%*s", 16, c+" med", 12, "best")
			if c != baseline {
				pw.printf("%*s", 10, "ratio")
			}
		}
		pw.printf("\n")
		noSize := len(samples) > 0 && !samples[0].Table.HasSize
		for _, size := range sizes {
			if noSize {
				pw.printf("%-*s", sizeWidth, "-")
			} else {
				pw.printf("%-*d", sizeWidth, size)
			}
			var base float64
			if st := vals[baseline][size]; st != nil {
				base = Median(st.vals)
			}
			for _, c := range contenders {
				st := vals[c][size]
				if st == nil {
					pw.printf("%*s%*s", 16, "-", 12, "-")
					if c != baseline {
						pw.printf("%*s", 10, "-")
					}
					continue
				}
				med := Median(st.vals)
				b := slices.Max(st.vals)
				if lower {
					b = slices.Min(st.vals)
				}
				pw.printf("%*.*f%*.*f", 16, precision, med, 12, precision, b)
				if c != baseline {
					if base > 0 {
						pw.printf("%*s", 10, ratioString(med/base))
					} else {
						pw.printf("%*s", 10, "-")
					}
				}
			}
			pw.printf("\n")
		}
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// ratioString prints a ratio with about three significant digits, without
// an exponent for the ratios a benchmark gives.
func ratioString(r float64) string {
	switch {
	case r >= 100:
		return fmt.Sprintf("%.0f", r)
	case r >= 10:
		return fmt.Sprintf("%.1f", r)
	case r >= 0.1:
		return fmt.Sprintf("%.2f", r)
	}
	return fmt.Sprintf("%.2g", r)
}
