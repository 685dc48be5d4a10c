package main

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/fibermpi/fibermpi"
)

func TestCLIRunsAllVariants(t *testing.T) {
	var out, errOut bytes.Buffer
	code := cli([]string{"-n", "9", "-iters", "4", "-ranks", "3", "-threads", "2", "-endpoints", "2", "-workers", "2"}, &out, &errOut)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
	}
	for _, v := range variants {
		want := "identical"
		if v.Name == "seq" {
			want = "reference"
		}
		found := false
		for line := range strings.Lines(out.String()) {
			if strings.HasPrefix(line, v.Name+" ") && strings.Contains(line, want) {
				found = true
			}
		}
		if !found {
			t.Errorf("no %q line for %s in\n%s", want, v.Name, out.String())
		}
	}
}

func TestCLIToleranceAndList(t *testing.T) {
	var out, errOut bytes.Buffer
	code := cli([]string{"-variant", "mpi,hybrid", "-n", "8", "-iters", "5000", "-tol", "1e-5", "-ranks", "2", "-workers", "1"}, &out, &errOut)
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out.String(), errOut.String())
	}
	s := out.String()
	if !strings.Contains(s, "until the residual < 1e-05") || strings.Count(s, "identical") != 2 || strings.Contains(s, "funneled") {
		t.Errorf("unexpected output:\n%s", s)
	}
}

func TestCLINoCheck(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := cli([]string{"-variant", "threads", "-n", "6", "-iters", "2", "-check=false"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if !strings.Contains(out.String(), "not checked") || strings.Contains(out.String(), "reference") {
		t.Errorf("unexpected output:\n%s", out.String())
	}
}

func TestCLIBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"-variant", "mpi", "-n", "3", "-ranks", "4"}, "mpi with 4 ranks needs at least 4 rows, the grid has 3"},
		{[]string{"-n", "4", "-ranks", "3", "-threads", "2"}, "needs at least 6 rows"},
		{[]string{"-variant", "openmp"}, `unknown variant "openmp"`},
		{[]string{"-n", "0"}, "bad configuration"},
		{[]string{"-iters", "-1"}, "bad configuration"},
		{[]string{"-variant", "hybrid", "-endpoints", "3", "-threads", "4"}, "1 or 2 endpoints"},
		{[]string{"-tol", "-0.5"}, "tolerance"},
		{[]string{"-workers", "-1"}, "workers -1"},
		{[]string{"-ranks", "0"}, "-ranks 0; need at least 1"},
		{[]string{"-ranks", "-2"}, "-ranks -2; need at least 1"},
		{[]string{"-threads", "0"}, "-threads 0; need at least 1"},
		{[]string{"-threads", "-1"}, "-threads -1; need at least 1"},
		{[]string{"-variant", "hybrid", "-endpoints", "0"}, "-endpoints 0; need at least 1"},
		{[]string{"-variant", "funneled", "-n", "1", "-ranks", "1", "-threads", "2"}, "funneled with 1 process × 2 threads needs at least 2 rows"},
		{[]string{"-progress", "-1s"}, "negative -progress"},
		{[]string{"-spin", "-1s"}, "negative spin"},
		{[]string{"-frobnicate"}, "flag provided but not defined"},
		{[]string{"stray"}, "unexpected arguments"},
	} {
		var out, errOut bytes.Buffer
		code := cli(c.args, &out, &errOut)
		if code != 2 || !strings.Contains(errOut.String(), c.msg) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", c.args, code, errOut.String(), c.msg)
		}
		if out.Len() != 0 {
			t.Errorf("%q: something ran:\n%s", c.args, out.String())
		}
	}
}

func TestCLIHelp(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := cli([]string{"-h"}, &out, &errOut); code != 0 {
		t.Fatalf("-h: exit %d", code)
	}
	for _, v := range variants {
		if !strings.Contains(errOut.String(), v.Section) {
			t.Errorf("usage does not list %s (%s)", v.Name, v.Section)
		}
	}
}

// TestCLISingular runs one rank, one fiber, one endpoint and one worker: the
// table and the heading say "1 rank", not "1 ranks".
func TestCLISingular(t *testing.T) {
	var out, errOut bytes.Buffer
	code := cli([]string{"-n", "4", "-iters", "2", "-ranks", "1", "-threads", "1", "-endpoints", "1", "-workers", "1"}, &out, &errOut)
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out.String(), errOut.String())
	}
	s := out.String()
	for _, want := range []string{"1 fiber worker (", "1 fiber, shared grid", "1 rank ", "1 proc × 1 fiber, 1 endpoint each", "1 proc × 1 fiber, master talks"} {
		if !strings.Contains(s, want) {
			t.Errorf("no %q in\n%s", want, s)
		}
	}
	for _, bad := range []string{"1 ranks", "1 fibers", "1 procs", "1 endpoints", "1 fiber workers", "endpoint(s)"} {
		if strings.Contains(s, bad) {
			t.Errorf("%q in\n%s", bad, s)
		}
	}
}

func TestCount(t *testing.T) {
	for _, c := range []struct {
		n    int
		noun string
		want string
	}{{1, "rank", "1 rank"}, {0, "rank", "0 ranks"}, {2, "rank", "2 ranks"}, {1, "process", "1 process"}, {3, "process", "3 processes"}} {
		if got := count(c.n, c.noun); got != c.want {
			t.Errorf("count(%d, %q) = %q; want %q", c.n, c.noun, got, c.want)
		}
	}
}

func TestCLIVersion(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := cli([]string{"-version"}, &out, &errOut); code != 0 || errOut.Len() != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut.String())
	}
	if want := "redblack fibermpi " + fibermpi.Version + " ("; !strings.HasPrefix(out.String(), want) {
		t.Errorf("-version printed %q; want it to start with %q", out.String(), want)
	}
}

// TestCLIHash checks the -hash lines: one per run, the layout, the
// residual's bits and the grid's hash, which must agree between variants
// and with the values the C reference (bench/redblack-c) prints for the
// same grids: `bin/seq -n 3 -iters 2` and `bin/seq -n 5 -iters 1`.
func TestCLIHash(t *testing.T) {
	for _, c := range []struct {
		args           []string
		residual, hash string
		lines          int
	}{
		{[]string{"-n", "3", "-iters", "2", "-variant", "seq,threads,mpi", "-ranks", "3", "-threads", "2"},
			"3fb998273378740c", "57b9b9ab97a181af", 3},
		{[]string{"-n", "5", "-iters", "1", "-variant", "hybrid,funneled", "-repeat", "2"},
			"3fde4d71b8e52c2c", "743e47b9945e5c6b", 4},
	} {
		var out, errOut bytes.Buffer
		if code := cli(append(c.args, "-hash", "-check=false"), &out, &errOut); code != 0 {
			t.Fatalf("%q: exit %d: %s", c.args, code, errOut.String())
		}
		n := 0
		for line := range strings.Lines(out.String()) {
			if !strings.HasPrefix(line, "result impl=go ") {
				continue
			}
			n++
			for _, want := range []string{" residual=" + c.residual + " ", " hash=" + c.hash + " ", " ns_per_iter=", " layout="} {
				if !strings.Contains(line, want) {
					t.Errorf("%q: line %q lacks %q", c.args, line, want)
				}
			}
		}
		if n != c.lines {
			t.Errorf("%q: %d result lines, want %d:\n%s", c.args, n, c.lines, out.String())
		}
	}
	if strings.Contains(func() string {
		var out, errOut bytes.Buffer
		cli([]string{"-n", "3", "-iters", "1", "-variant", "seq"}, &out, &errOut)
		return out.String()
	}(), "result impl=") {
		t.Error("result lines printed without -hash")
	}
}

// TestGridHash checks Hash against FNV-1a written out byte by byte, and
// that one changed bit changes it.
func TestGridHash(t *testing.T) {
	g := NewGrid(4, 6)
	h := uint64(0xcbf29ce484222325)
	for _, v := range g.Data {
		b := math.Float64bits(v)
		for k := range 8 {
			h ^= (b >> (8 * k)) & 0xff
			h *= 0x100000001b3
		}
	}
	if got := g.Hash(); got != h {
		t.Fatalf("Hash = %#x, want %#x", got, h)
	}
	g.Data[17] = math.Float64frombits(math.Float64bits(g.Data[17]) ^ 1)
	if g.Hash() == h {
		t.Fatal("a changed bit left the hash unchanged")
	}
}
