package commtest_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/fibermpi/fibermpi/comm"
	"github.com/fibermpi/fibermpi/commtest"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestPasses: a ring exchange that succeeds, on fibers and goroutines,
// with a subtest in each rank.
func TestPasses(t *testing.T) {
	body := func(t *commtest.T, c *comm.Comm[int]) {
		got := make([]int, 1)
		ok := t.Run("ring", func(t *commtest.T) {
			next, prev := (c.Rank()+1)%c.Size(), (c.Rank()+c.Size()-1)%c.Size()
			if _, err := c.Sendrecv([]int{c.Rank()}, next, 0, got, prev, 0); err != nil {
				t.Fatal(err)
			}
			if got[0] != prev {
				t.Errorf("got %d from %d", got[0], prev)
			}
		})
		if !ok || t.Failed() {
			t.Error("the subtest failed")
		}
	}
	commtest.Run(t, 4, body)
	commtest.RunGoroutines(t, 3, body)
}

// The helper tests fail on purpose; TestFailures runs them in a child
// process and reads what they report.
const helperEnv = "COMMTEST_HELPER"

func TestHelperFatalFiber(t *testing.T) {
	if os.Getenv(helperEnv) == "" {
		t.Skip("run by TestFailures")
	}
	fatalBody(t, false)
}

func TestHelperFatalGoroutine(t *testing.T) {
	if os.Getenv(helperEnv) == "" {
		t.Skip("run by TestFailures")
	}
	fatalBody(t, true)
}

func TestHelperSubtest(t *testing.T) {
	if os.Getenv(helperEnv) == "" {
		t.Skip("run by TestFailures")
	}
	commtest.Run(t, 2, func(t *commtest.T, c *comm.Comm[int]) {
		ok := t.Run("inner", func(t *commtest.T) {
			if c.Rank() == 1 {
				t.Fatalf("inner fatal at rank %d", c.Rank())
			}
		})
		// The rank goes on after its subtest's Fatal, and can talk.
		if err := c.Barrier(); err != nil {
			t.Fatal(err)
		}
		t.Logf("after the subtest: ok=%v", ok)
	})
}

// fatalBody: rank 1 calls Fatal while the others wait for it in Recv;
// they Fatal with the abort error, which must not be reported again.
func fatalBody(t *testing.T, goroutines bool) {
	run := commtest.Run[int]
	if goroutines {
		run = commtest.RunGoroutines[int]
	}
	run(t, 4, func(t *commtest.T, c *comm.Comm[int]) {
		if c.Rank() == 1 {
			t.Fatalf("boom at rank %d", c.Rank())
			panic("not reached")
		}
		if _, err := c.Recv(make([]int, 1), 1, 0); err != nil {
			if !errors.Is(err, comm.ErrAborted) {
				t.Errorf("unexpected error: %v", err)
			}
			t.Fatal(err)
		}
		t.Error("Recv from the failed rank returned")
	})
}

func TestFailures(t *testing.T) {
	for _, tc := range []struct {
		name     string
		want     []string
		dontWant []string
	}{
		{"TestHelperFatalFiber", []string{"rank 1: boom at rank 1", "--- FAIL: TestHelperFatalFiber"}, []string{"aborted", "not reached", "unexpected"}},
		{"TestHelperFatalGoroutine", []string{"rank 1: boom at rank 1", "--- FAIL: TestHelperFatalGoroutine"}, []string{"aborted", "not reached", "unexpected"}},
		{"TestHelperSubtest", []string{"rank 1: inner: inner fatal at rank 1", "rank 1: after the subtest: ok=false", "rank 0: after the subtest: ok=true"}, []string{"aborted"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^"+tc.name+"$", "-test.v", "-test.count=1")
			cmd.Env = append(os.Environ(), helperEnv+"=1")
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) {
				t.Fatalf("the helper test should fail; err %v; output:\n%s", err, out)
			}
			for _, w := range tc.want {
				if strings.Count(string(out), w) != 1 {
					t.Errorf("output has %q %d times, want once; output:\n%s", w, strings.Count(string(out), w), out)
				}
			}
			for _, w := range tc.dontWant {
				if strings.Contains(string(out), w) {
					t.Errorf("output has %q; output:\n%s", w, out)
				}
			}
		})
	}
}
