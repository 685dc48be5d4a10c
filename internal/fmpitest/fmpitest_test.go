package fmpitest

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRunTest(t *testing.T) {
	if Child() {
		// Each process of the job says who it is.
		os.Stdout.WriteString("child rank " + os.Getenv("FIBERMPI_RANK") + " of " + os.Getenv("FIBERMPI_SIZE") + " " + os.Getenv("EXTRA") + "\n")
		if os.Getenv("FIBERMPI_RANK") == "1" && os.Getenv("FAIL") == "1" {
			t.Fatal("rank 1 fails on purpose")
		}
		return
	}
	out, err := RunTest(t, 3, Options{Flags: []string{"-prefix"}, Env: []string{"EXTRA=x"}})
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"[0] child rank 0 of 3 x", "[1] child rank 1 of 3 x", "[2] child rank 2 of 3 x"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// A failing child test fails the job, and its log is in the output.
	out, err = RunTest(t, 2, Options{Env: []string{"FAIL=1"}})
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(out, "rank 1 fails on purpose") ||
		!strings.Contains(out, "fmpirun: rank 1: exit status 1") {
		t.Errorf("a failing child: %v\n%s", err, out)
	}
}

func TestRun(t *testing.T) {
	if Child() {
		return
	}
	out, err := Run(t, 2, "-test.run=^TestRun$")
	if err != nil || strings.Count(out, "PASS") != 2 {
		t.Errorf("Run: %v\n%s", err, out)
	}
}

func TestSubtestCommand(t *testing.T) {
	t.Run("a b.c", func(t *testing.T) {
		cmd := TestCommand(t, time.Minute)
		if cmd[1] != `-test.run=^TestSubtestCommand$/^a_b\.c$` || !strings.HasPrefix(cmd[2], "-test.timeout=") {
			t.Errorf("TestCommand: %q", cmd)
		}
	})
}

func TestWaitForAndSignal(t *testing.T) {
	if Child() {
		return
	}
	j := Start(t, 1, Options{Flags: []string{"-grace=100ms"}}, "sh", "-c", "echo up; exec sleep 60")
	if !j.WaitFor("up", 1, time.Minute) {
		t.Fatalf("no output:\n%s", j.Output())
	}
	if j.WaitFor("never printed", 1, 10*time.Millisecond) {
		t.Error("WaitFor found what was not there")
	}
	j.Signal(os.Interrupt)
	out, err := j.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 || !strings.Contains(out, "killed by signal 2 (SIGINT)") {
		t.Errorf("after SIGINT: %v\n%s", err, out)
	}
}
