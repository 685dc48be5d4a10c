package main

import (
	"os"
	"strings"
	"testing"

	"github.com/fibermpi/fibermpi/internal/fmpitest"
)

// runProcs runs the command (this test binary, see TestMain) in n real
// processes under fmpirun with args, and returns the job's output, failing
// the test if the job fails.
func runProcs(t *testing.T, n int, args ...string) string {
	t.Helper()
	out, err := startProcs(t, n, args...)
	if err != nil {
		t.Fatalf("fmpirun -n %d redblack %s: %v\n%s", n, strings.Join(args, " "), err, out)
	}
	return out
}

func startProcs(t *testing.T, n int, args ...string) (string, error) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return fmpitest.Start(t, n, fmpitest.Options{Env: []string{"REDBLACK_CHILD=1"}},
		append([]string{self}, args...)...).Wait()
}

// wantIdentical checks that out has, for each variant, exactly one line
// saying that process 0 found its grid identical to seq's, and none saying
// it differs.
func wantIdentical(t *testing.T, out string, names ...string) {
	t.Helper()
	for _, name := range names {
		n := 0
		for line := range strings.Lines(out) {
			if !strings.HasPrefix(line, name+" ") {
				continue
			}
			if strings.Contains(line, "identical") {
				n++
			}
			if strings.Contains(line, "DIFFERS") {
				t.Errorf("%s differs from seq:\n%s", name, out)
			}
		}
		if n != 1 {
			t.Errorf("%d lines saying %s is identical to seq, want 1:\n%s", n, name, out)
		}
	}
}

// TestProcesses runs the variants that pass messages as 2 and 3 real
// processes, one stripe each, and has process 0 check the gathered grid,
// the iteration count and the residual against seq bit for bit: for a fixed
// number of iterations and with a tolerance (the residual's Allreduce decides
// when every process stops), with one endpoint per hybrid process
// (ThreadMultiple) and with two. Only process 0 prints.
func TestProcesses(t *testing.T) {
	for _, c := range []struct {
		procs int
		args  []string
	}{
		{2, []string{"-n", "17", "-iters", "6", "-threads", "2", "-endpoints", "2"}},
		{2, []string{"-n", "12", "-iters", "3000", "-tol", "1e-3", "-threads", "3", "-endpoints", "1"}},
		{3, []string{"-n", "19", "-iters", "5", "-threads", "2", "-endpoints", "1"}},
		{3, []string{"-n", "9", "-iters", "3000", "-tol", "1e-3", "-threads", "2", "-endpoints", "2", "-ranks", "3"}},
	} {
		t.Run(strings.Join(append([]string{"n" + string(rune('0'+c.procs))}, c.args...), "_"), func(t *testing.T) {
			args := append([]string{"-variant", "mpi,hybrid,funneled", "-workers", "2", "-progress", "0"}, c.args...)
			out := runProcs(t, c.procs, args...)
			wantIdentical(t, out, "mpi", "hybrid", "funneled")
			if got := strings.Count(out, "red-black SOR"); got != 1 {
				t.Errorf("%d headers, want process 0's alone:\n%s", got, out)
			}
			if want := "process 0 of " + string(rune('0'+c.procs)); !strings.Contains(out, want) {
				t.Errorf("no %q in\n%s", want, out)
			}
		})
	}
}

// TestProcessesAll runs every variant under a launcher: seq and threads at
// process 0 alone, the others across the processes, in two rounds; with -v
// every process prints its table, the others' saying where the check is,
// and -hash prints process 0's hash of each run's grid.
func TestProcessesAll(t *testing.T) {
	out := runProcs(t, 2, "-n", "10", "-iters", "4", "-workers", "2", "-repeat", "2", "-v", "-hash")
	wantIdentical(t, out, "threads", "mpi", "hybrid", "funneled")
	for _, want := range []string{"process 0 of 2", "process 1 of 2", "checked at process 0", "reference"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	if n := strings.Count(out, "checked at process 0"); n != 3 {
		t.Errorf("process 1 ran %d variants, want mpi, hybrid and funneled:\n%s", n, out)
	}
	// -hash: process 0's line per run (it alone holds the grid), two rounds.
	if n := strings.Count(out, "result impl=go variant=hybrid layout=2x2"); n != 2 {
		t.Errorf("%d -hash lines of hybrid, want 2:\n%s", n, out)
	}
}

// TestProcessesRanksMismatch checks that -ranks other than the number of
// processes is refused, with a clear message, rather than hanging.
func TestProcessesRanksMismatch(t *testing.T) {
	out, err := startProcs(t, 2, "-variant", "mpi", "-n", "8", "-iters", "2", "-ranks", "3")
	if err == nil {
		t.Fatalf("-ranks 3 in 2 processes succeeded:\n%s", out)
	}
	if want := "-ranks 3, but launched as 2 processes"; !strings.Contains(out, want) {
		t.Errorf("no %q in\n%s", want, out)
	}
}
