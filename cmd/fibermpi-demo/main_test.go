package main

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/fibermpi/fibermpi"
)

func TestRingRuns(t *testing.T) {
	for _, n := range []int{2, 3, 700} {
		var out bytes.Buffer
		if err := run(&out, n, 3, 1); err != nil {
			t.Fatalf("run(%d, 3, 1): %v", n, err)
		}
		if want := " laps: "; !strings.Contains(out.String(), want) {
			t.Errorf("run(%d, 3, 1) printed %q, without %q", n, out.String(), want)
		}
	}
	if err := run(io.Discard, 1, 1, 1); err == nil {
		t.Fatal("a ring of one fiber was accepted")
	}
}

func TestCLI(t *testing.T) {
	for _, c := range []struct {
		args     []string
		code     int
		out, err string
	}{
		{[]string{"-fibers", "5", "-laps", "2", "-workers", "1"}, 0, "5 fibers, 2 laps: 10 handoffs", ""},
		{[]string{"-version"}, 0, "fibermpi-demo fibermpi " + fibermpi.Version + " (", ""},
		{[]string{"-fibers", "1"}, 1, "", "need at least 2 fibers"},
		{[]string{"-frobnicate"}, 2, "", "flag provided but not defined"},
		{[]string{"stray"}, 2, "", "unexpected arguments"},
		{[]string{"-h"}, 0, "", "-version"},
	} {
		var out, errOut bytes.Buffer
		code := cli(c.args, &out, &errOut)
		if code != c.code || !strings.Contains(out.String(), c.out) || !strings.Contains(errOut.String(), c.err) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want %d, %q and %q", c.args, code, out.String(), errOut.String(), c.code, c.out, c.err)
		}
	}
}
