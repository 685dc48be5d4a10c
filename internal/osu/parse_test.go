package osu

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	cases := []struct {
		name, in string
		want     *Table
	}{
		{
			name: "latency",
			in: "# OSU MPI Latency Test v5.3.2\n" +
				"# Size          Latency (us)\n" +
				"0                       0.23\n" +
				"1                       0.25\n" +
				"4194304              1234.50\n",
			want: &Table{Title: "OSU MPI Latency Test v5.3.2", Notes: []string{}, HasSize: true,
				Columns: []string{"Latency (us)"},
				Rows:    []Row{{0, []float64{0.23}}, {1, []float64{0.25}}, {4194304, []float64{1234.5}}}},
		},
		{
			name: "mbw_mr",
			in: "# OSU MPI Multiple Bandwidth / Message Rate Test v5.3.2\n" +
				"# [ pairs: 1 ] [ window size: 64 ]\n" +
				"# Size                  MB/s        Messages/s\n" +
				"1                       2.96        2960293.24\n",
			want: &Table{Title: "OSU MPI Multiple Bandwidth / Message Rate Test v5.3.2",
				Notes: []string{"[ pairs: 1 ] [ window size: 64 ]"}, HasSize: true,
				Columns: []string{"MB/s", "Messages/s"},
				Rows:    []Row{{1, []float64{2.96, 2960293.24}}}},
		},
		{
			name: "allreduce, OMB 7 style with a blank first line and a datatype note",
			in: "\n# OSU MPI Allreduce Latency Test v7.3\n" +
				"# Datatype: MPI_FLOAT.\n" +
				"# Size       Avg Latency(us)\n" +
				"4                       1.57\n\n" +
				"8                       1.61\n",
			want: &Table{Title: "OSU MPI Allreduce Latency Test v7.3", Notes: []string{"Datatype: MPI_FLOAT."},
				HasSize: true, Columns: []string{"Avg Latency(us)"},
				Rows: []Row{{4, []float64{1.57}}, {8, []float64{1.61}}}},
		},
		{
			name: "barrier, full",
			in: "\n# OSU MPI Barrier Latency Test\n" +
				"# Avg Latency(us)     Min Latency(us)     Max Latency(us)  Iterations\n" +
				"             1.69                0.89                2.49        1000\n",
			want: &Table{Title: "OSU MPI Barrier Latency Test", Notes: []string{},
				Columns: []string{"Avg Latency(us)", "Min Latency(us)", "Max Latency(us)", "Iterations"},
				Rows:    []Row{{0, []float64{1.69, 0.89, 2.49, 1000}}}},
		},
	}
	for _, c := range cases {
		got, err := Parse(strings.NewReader(c.in))
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if d := cmp.Diff(c.want, got); d != "" {
			t.Errorf("%s: (-want +got)\n%s", c.name, d)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for name, in := range map[string]string{
		"empty":            "",
		"no rows":          "# OSU MPI Latency Test\n# Size          Latency (us)\n",
		"no header":        "0 0.23\n",
		"title only":       "# OSU MPI Latency Test\n0 0.23\n",
		"too few fields":   "# T\n# Size          MB/s          Messages/s\n1 2.0\n",
		"too many fields":  "# T\n# Size          Latency (us)\n1 2.0 3.0\n",
		"size not integer": "# T\n# Size          Latency (us)\n1.5 2.0\n",
		"negative size":    "# T\n# Size          Latency (us)\n-1 2.0\n",
		"value not number": "# T\n# Size          Latency (us)\n1 fast\n",
		"second table":     "# T\n# Size          Latency (us)\n1 2.0\n# T\n# Size          Latency (us)\n1 2.0\n",
		"launcher noise":   "# T\n# Size          Latency (us)\n1 2.0\nmpirun noticed that process rank 1 exited\n",
		"size column only": "# T\n# Size\n1\n",
	} {
		if _, err := Parse(strings.NewReader(in)); !errors.Is(err, ErrFormat) {
			t.Errorf("%s: Parse = %v, want ErrFormat", name, err)
		}
	}
}
