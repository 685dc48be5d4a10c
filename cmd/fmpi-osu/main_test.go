package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fibermpi/fibermpi"
	"github.com/fibermpi/fibermpi/internal/osu"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func runArgs(args ...string) (string, string, error) {
	var out, errOut bytes.Buffer
	err := run(args, &out, &errOut)
	return out.String(), errOut.String(), err
}

func TestRunBenchmarks(t *testing.T) {
	cases := []struct {
		args  []string
		sizes []int
		check string // in the title
	}{
		{[]string{"latency", "-m", "8:32", "-i", "10", "-x", "1"}, []int{8, 16, 32}, "progress idle; eager 8192 B"},
		{[]string{"bw", "-m", "4", "-i", "3", "-x", "0", "-W", "4", "-progress", "caller"}, []int{1, 2, 4}, "progress caller"},
		{[]string{"latency", "-m", "16384:16384", "-i", "5", "-eager", "16384"}, []int{16384}, "eager 16384 B"},
		{[]string{"latency", "-m", "8:8", "-i", "5", "-eager", "-1"}, []int{8}, "eager -1 B"},
		{[]string{"latency_mt", "-t", "3", "-m", "1:2", "-i", "9"}, []int{1, 2}, "2 ranks x 3 fibers"},
		{[]string{"mbw_mr", "-p", "2", "-m", "8:8", "-i", "3"}, []int{8}, "4 ranks as fibers"},
		{[]string{"allreduce", "-n", "3", "-f", "-m", "4:8", "-i", "3"}, []int{4, 8}, "3 ranks"},
		{[]string{"barrier", "-goroutines", "-i", "3"}, []int{0}, "as goroutines"},
		{[]string{"latency", "-workers", "2", "-progress", "server", "-m", "1:1", "-i", "5"}, []int{1}, "on 2 workers; progress server"},
	}
	for _, c := range cases {
		out, _, err := runArgs(c.args...)
		if err != nil {
			t.Errorf("%q: %v", c.args, err)
			continue
		}
		tab, err := osu.Parse(strings.NewReader(out))
		if err != nil {
			t.Errorf("%q: %v\n%s", c.args, err, out)
			continue
		}
		if !strings.Contains(tab.Title, c.check) {
			t.Errorf("%q: title %q lacks %q", c.args, tab.Title, c.check)
		}
		var sizes []int
		for _, r := range tab.Rows {
			sizes = append(sizes, r.Size)
		}
		if !slices.Equal(sizes, c.sizes) {
			t.Errorf("%q: sizes %v, want %v", c.args, sizes, c.sizes)
		}
	}
}

func TestRunBadArguments(t *testing.T) {
	for _, c := range []struct {
		args []string
		want error
	}{
		{nil, errUsage},
		{[]string{"-i", "3"}, errUsage}, // no benchmark
		{[]string{"pingpong"}, osu.ErrConfig},
		{[]string{"latency", "-m", "8:4"}, osu.ErrConfig},
		{[]string{"latency", "-x", "-5"}, osu.ErrConfig},
		{[]string{"latency", "-progress", "sometimes"}, osu.ErrConfig},
		{[]string{"latency", "extra"}, errUsage},
		{[]string{"compare"}, errUsage},
		{[]string{"compare", t.TempDir()}, osu.ErrNoSamples},
	} {
		if _, _, err := runArgs(c.args...); !errors.Is(err, c.want) {
			t.Errorf("%q: %v, want %v", c.args, err, c.want)
		}
	}
	if _, _, err := runArgs("latency", "-nosuchflag"); err == nil || !strings.Contains(err.Error(), "nosuchflag") {
		t.Errorf("unknown flag: %v", err)
	}
	if _, _, err := runArgs("latency", "-eager", "99999999"); err == nil {
		t.Error("an eager limit above the largest packet was accepted")
	}
}

func TestHelpAndVersion(t *testing.T) {
	out, _, err := runArgs("-h")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"latency_mt", "mbw_mr", "compare", "-progress", "THREAD_MULTIPLE", "-eager"} {
		if !strings.Contains(out, want) {
			t.Errorf("-h lacks %q:\n%s", want, out)
		}
	}
	out, _, err = runArgs("-version")
	if err != nil || !strings.HasPrefix(out, "fmpi-osu fibermpi "+fibermpi.Version+" (") || !strings.Contains(out, "go1.") {
		t.Errorf("-version = %q, %v", out, err)
	}
}

func TestCompare(t *testing.T) {
	dir := t.TempDir()
	for _, who := range []string{"fibermpi", "mpich"} {
		out, _, err := runArgs("latency", "-m", "8:8", "-i", "10")
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, "latency", who, "r1.txt")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, _, err := runArgs("compare", dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## latency: Latency (us) (lower is better)", "fibermpi med", "mpich med", "ratio", "\n8 "} {
		if !strings.Contains(out, want) {
			t.Errorf("compare output lacks %q:\n%s", want, out)
		}
	}
}

// TestBuiltWithProfile checks that go test, like go build, compiled this
// command with its default.pgo (profile-guided optimization), and that the
// tables' header says so: the figures in BENCHMARKS.md come from such a
// build. A build with -pgo=off gives no profile and a header without it.
func TestBuiltWithProfile(t *testing.T) {
	if _, err := os.Stat("default.pgo"); err != nil {
		t.Fatalf("the command's profile: %v (scripts/pgo-profile.sh makes it)", err)
	}
	out, _, err := runArgs("latency", "-m", "8:8", "-i", "3")
	if err != nil {
		t.Fatal(err)
	}
	tab, err := osu.Parse(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	switch p := fibermpi.BuildProfile(); p {
	case "default.pgo":
		if !strings.Contains(tab.Title, "fibermpi "+fibermpi.Version+" pgo;") {
			t.Errorf("built with %s, but the title %q does not say pgo", p, tab.Title)
		}
	case "":
		if strings.Contains(tab.Title, " pgo;") {
			t.Errorf("built without a profile, but the title %q says pgo", tab.Title)
		}
		t.Skip("built with -pgo=off: nothing more to check")
	default:
		t.Errorf("built with profile %q, want default.pgo", p)
	}
}
