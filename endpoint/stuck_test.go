package endpoint

import (
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestStuckFiberRank: two fiber ranks meant to talk over a Go channel, on
// one worker (GOMAXPROCS=2 gives one). Rank 0 blocks in the channel and
// keeps the worker, so rank 1 never runs: the Go runtime used to end the
// process ("all goroutines are asleep"), or the run hung silently. Now the
// stuck fiber is reported once, with its rank, its stack and the fix; here
// the test then does rank 1's part, and the run ends.
func TestStuckFiberRank(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	ch := make(chan int, 1)
	reports := make(chan *StuckReport, 4)
	opts := Options{Watch: Watch{Stuck: 10 * time.Millisecond, OnStuck: func(r *StuckReport) {
		reports <- r
		ch <- 1 // what rank 1 would have sent
	}}}
	got := make([]int, 2)
	err := RunWith(ThreadSingle, opts, 2, func(ep *Endpoint) error {
		if ep.Rank() == 0 {
			got[0] = <-ch // blocks the worker
			return nil
		}
		got[1] = 1
		return nil
	})
	if err != nil || got[0] != 1 || got[1] != 1 {
		t.Fatalf("Run: %v, ranks got %v", err, got)
	}
	r := within(t, "the stuck report", reports)
	if r.Rank != 0 || r.State != "chan receive" || !strings.Contains(r.Stack, "TestStuckFiberRank") {
		t.Fatalf("report: rank %d, state %q, stack:\n%s", r.Rank, r.State, r.Stack)
	}
	msg := r.String()
	for _, s := range []string{"rank 0 has kept fiber worker 0", "chan receive", "fiber.Sleep", "RunGoroutines"} {
		if !strings.Contains(msg, s) {
			t.Errorf("the report lacks %q:\n%s", s, msg)
		}
	}
	select {
	case r := <-reports:
		t.Fatalf("a second report: %v", r)
	default:
	}
}
