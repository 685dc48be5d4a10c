package main

import (
	"bytes"
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
