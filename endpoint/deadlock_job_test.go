package endpoint_test

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fibermpi/fibermpi/endpoint"
	"github.com/fibermpi/fibermpi/fiber"
	"github.com/fibermpi/fibermpi/internal/fmpitest"
)

// TestJobDeadlockAcrossProcesses: deadlocks of a job of two real processes
// (fmpirun) end with a *DeadlockError at every rank that waits, naming what
// it waits for, instead of hanging: two ranks that both receive first; a
// rank that waits for a message from a rank whose process has finalized;
// and a receive that a queued message does not match. A rank that waits
// while its peer computes outside fibermpi for many times the watchdog's
// period is not a deadlock, nor are two ranks waiting, for a hundred
// periods, while a rendezvous transfer between them runs. Each child prints one line; fmpirun's timeout
// bounds the run.
func TestJobDeadlockAcrossProcesses(t *testing.T) {
	for _, c := range []struct {
		name string
		want [2]string // what each rank's line must match
		env  []string
	}{
		{"recv-recv", [2]string{
			`rank 0: deadlock: .*2 processes.*rank 0 in Recv: receive from rank 1, tag 3, on the world`,
			`rank 1: deadlock: .*2 processes.*rank 1 in Recv: receive from rank 0, tag 3, on the world`}, nil},
		{"finalized", [2]string{
			`rank 0: returned`,
			`rank 1: deadlock: .*rank 1 in Recv: receive from rank 0, tag 3`}, nil},
		{"unmatched", [2]string{
			`rank 0: deadlock: .*rank 0 in Recv: receive from rank 1, tag 3`,
			`rank 1: deadlock: .*rank 1 in Recv: receive from rank 0, tag 7.*queued, unmatched: a message from rank 0, tag 5`}, nil},
		{"unmatched-large", [2]string{
			`rank 0: deadlock: .*rank 0 in Send: send to rank 1 \(1048576 bytes\)`,
			`rank 1: deadlock: .*rank 1 in Recv: receive from rank 0, tag 7.*queued, unmatched: a message from rank 0, tag 5`}, nil},
		{"computing", [2]string{
			`rank 0: sent after computing`,
			`rank 1: received 42`}, nil},
		{"long-transfer", [2]string{
			`rank 0: sent 4 × 256 MiB`,
			`rank 1: received 4 × 256 MiB`}, nil},
		{"long-transfer-tcp", [2]string{
			`rank 0: sent 4 × 256 MiB`,
			`rank 1: received 4 × 256 MiB`}, []string{endpoint.EnvTransport + "=tcp"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if fmpitest.Child() {
				deadlockChild(t, c.name)
				return
			}
			out, err := fmpitest.RunTest(t, 2, fmpitest.Options{Timeout: time.Minute, Env: c.env})
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			flat := strings.ReplaceAll(out, "\n", " ")
			for r, w := range c.want {
				if !regexp.MustCompile(w).MatchString(flat) {
					t.Errorf("rank %d: want a line matching %q; the job printed:\n%s", r, w, out)
				}
			}
		})
	}
}

// deadlockChild is one process of TestJobDeadlockAcrossProcesses: one rank,
// a goroutine, with a short deadlock period.
func deadlockChild(t *testing.T, scenario string) {
	period := 200 * time.Millisecond
	if strings.HasPrefix(scenario, "long-transfer") {
		// Far shorter than the transfer: both callers wait in fibermpi
		// calls, with the counts equal, while the bytes move.
		period = 20 * time.Millisecond
	}
	p, err := endpoint.Init(endpoint.ThreadSingle, endpoint.Options{Watch: endpoint.Watch{Deadlock: period}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Finalize()
	h, err := p.World().Register(fiber.NewGoroutineWaiter())
	if err != nil {
		t.Fatal(err)
	}
	defer h.Unregister()
	c, me := h.World(), h.Rank()
	peer := 1 - me
	buf := make([]byte, 8)
	say := func(err error) {
		var d *endpoint.DeadlockError
		switch {
		case errors.As(err, &d) && errors.Is(err, endpoint.ErrDeadlock):
			fmt.Printf("rank %d: deadlock: %s\n", me, strings.ReplaceAll(d.Error(), "\n", " "))
		case err != nil:
			t.Errorf("rank %d: %v, want a *DeadlockError", me, err)
		}
	}
	switch scenario {
	case "recv-recv":
		_, err := h.Recv(c, peer, 3, buf)
		say(err)
	case "finalized":
		if me == 0 {
			fmt.Printf("rank 0: returned\n")
			return
		}
		_, err := h.Recv(c, 0, 3, buf)
		say(err)
	case "unmatched":
		if me == 0 {
			if err := h.Send(c, me, 1, 5, buf); err != nil {
				t.Fatal(err)
			}
			_, err := h.Recv(c, 1, 3, buf)
			say(err)
			return
		}
		_, err := h.Recv(c, 0, 7, buf)
		say(err)
	case "unmatched-large":
		// A rendezvous send that no receive matches: the sender waits
		// (over MPI with its bytes handed to MPI already), which is no
		// transfer under way.
		if me == 0 {
			err := h.Send(c, me, 1, 5, make([]byte, 1<<20))
			say(err)
			return
		}
		_, err := h.Recv(c, 0, 7, buf)
		say(err)
	case "long-transfer", "long-transfer-tcp":
		// Four rendezvous sends of 256 MiB: each takes tens of periods.
		big := make([]byte, 256<<20)
		start := time.Now()
		for i := range 4 {
			if me == 0 {
				big[len(big)-1] = byte(i + 9)
				if err := h.Send(c, me, 1, 3, big); err != nil {
					t.Fatalf("rank 0: %v", err)
				}
				continue
			}
			if _, err := h.Recv(c, 0, 3, big); err != nil {
				t.Fatalf("rank 1: %v", err)
			}
			if big[len(big)-1] != byte(i+9) {
				t.Fatalf("rank 1: message %d ends with %d, want %d", i, big[len(big)-1], i+9)
			}
		}
		fmt.Printf("rank %d: %s 4 × 256 MiB in %v\n", me, map[int]string{0: "sent", 1: "received"}[me], time.Since(start).Round(time.Millisecond))
	case "computing":
		if me == 0 {
			// Ordinary Go, outside fibermpi: a running rank, for ten
			// deadlock periods.
			for end := time.Now().Add(2 * time.Second); time.Now().Before(end); {
			}
			buf[0] = 42
			if err := h.Send(c, me, 1, 3, buf); err != nil {
				t.Fatal(err)
			}
			fmt.Printf("rank 0: sent after computing\n")
			return
		}
		if _, err := h.Recv(c, 0, 3, buf); err != nil {
			t.Fatalf("rank 1: %v", err)
		}
		fmt.Printf("rank 1: received %d\n", buf[0])
	}
}
