package endpoint_test

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fibermpi/fibermpi/bootstrap"
	"github.com/fibermpi/fibermpi/endpoint"
	"github.com/fibermpi/fibermpi/fiber"
	"github.com/fibermpi/fibermpi/internal/fmpitest"
)

// TestKilledProcessEndsTheJob: in a job of three processes, rank 1 kills
// itself with SIGKILL while the others wait in Recv for a message from it
// (a fiber and a goroutine at rank 0, a goroutine at rank 2). Every blocked
// call must return an error naming rank 1 — not hang — the launcher must
// exit non-zero naming rank 1 and the signal, and no shared-memory segment
// may be left. The child prints how long its calls took to return; the
// test logs it (the bound is 1 s: timing is a figure, not a pass
// condition).
func TestKilledProcessEndsTheJob(t *testing.T) {
	if fmpitest.Child() {
		killedChild(t)
		return
	}
	out, err := fmpitest.RunTest(t, 3, fmpitest.Options{})
	if err == nil {
		t.Fatalf("fmpirun exited 0 after a process was killed:\n%s", out)
	}
	if !regexp.MustCompile(`rank 1: killed by signal 9`).MatchString(out) {
		t.Errorf("fmpirun's message does not name rank 1 and SIGKILL:\n%s", out)
	}
	returned := regexp.MustCompile(`rank (\d) caller (\w+): returned after (\S+): (.*)`).FindAllStringSubmatch(out, -1)
	if len(returned) != 3 {
		t.Fatalf("%d blocked calls reported returning, want 3 (rank 0: fiber and goroutine, rank 2: goroutine):\n%s", len(returned), out)
	}
	for _, m := range returned {
		if !strings.Contains(m[4], "rank 1") {
			t.Errorf("rank %s caller %s: error %q does not name rank 1", m[1], m[2], m[4])
		}
		t.Logf("rank %s, %s: the blocked Recv returned %s after the kill: %s", m[1], m[2], m[3], m[4])
	}
	// Other packages' tests make segments of their own meanwhile: count
	// only this job's.
	job := regexp.MustCompile(`job id (\S+)`).FindStringSubmatch(out)
	if job == nil {
		t.Fatalf("rank 0 did not print its job id:\n%s", out)
	}
	var left []string
	for _, f := range shmFiles(t) {
		if strings.Contains(f, "-"+job[1]+"-") {
			left = append(left, f)
		}
	}
	if len(left) > 0 {
		t.Errorf("shared-memory segments of job %s left: %v", job[1], left)
	}
}

// killedChild is one process of the job.
func killedChild(t *testing.T) {
	p, err := endpoint.Init(endpoint.ThreadSingle, endpoint.Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Finalize()
	eps, err := p.CreateEndpoints(2) // a second endpoint per process, for the fiber
	if err != nil {
		t.Fatal(err)
	}
	w0 := p.World()
	h, err := w0.Register(fiber.NewGoroutineWaiter())
	if err != nil {
		t.Fatal(err)
	}
	world := h.World()
	// One round so that every process is up and connected.
	buf := make([]byte, 1)
	me, n := h.Rank(), h.Size()
	if err := h.Send(world, me, (me+1)%n, 1, buf); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Recv(world, (me+n-1)%n, 1, buf); err != nil {
		t.Fatal(err)
	}
	if me == 0 {
		fmt.Printf("job id %s\n", os.Getenv(bootstrap.EnvJobID)) // its segments are named after it
	}
	if me == 1 {
		time.Sleep(50 * time.Millisecond) // the others are waiting by now
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
	type result struct {
		who string
		err error
		d   time.Duration
	}
	results := make(chan result, 2)
	var killed time.Time
	wait := func(who string, ep *endpoint.Endpoint, c endpoint.Comm, src int) {
		_, err := ep.Recv(c, src, 99, make([]byte, 1))
		results <- result{who, err, time.Since(killed)}
	}
	killed = time.Now().Add(50 * time.Millisecond) // approximately: rank 1 sleeps as long
	// A handle belongs to the goroutine that registered it: the waiting
	// goroutine registers the world endpoint itself.
	if err := h.Unregister(); err != nil {
		t.Fatal(err)
	}
	go func() {
		g, err := w0.Register(fiber.NewGoroutineWaiter())
		if err != nil {
			results <- result{"goroutine", err, 0}
			return
		}
		defer g.Unregister()
		wait("goroutine", g, world, 1)
	}()
	calls := 1
	if me == 0 {
		// A fiber of this process's second endpoint waits on one of
		// rank 1's endpoints of the new world.
		calls++
		ep := eps[0]
		peer := 2 // process 0 has ranks 0-1 of the new world, process 1 ranks 2-3
		if err := p.Scheduler().Spawn(func(f *fiber.Fiber) {
			fh, err := ep.Register(f.Waiter())
			if err != nil {
				results <- result{"fiber", err, 0}
				return
			}
			defer fh.Unregister()
			wait("fiber", fh, fh.World(), peer)
		}); err != nil {
			t.Fatal(err)
		}
	}
	for range calls {
		r := <-results
		if r.err == nil {
			t.Errorf("%s: Recv from the killed rank returned no error", r.who)
			continue
		}
		if !errors.Is(r.err, endpoint.ErrAborted) || !errors.Is(r.err, bootstrap.ErrPeerLost) {
			t.Errorf("%s: error %v is not ErrAborted and ErrPeerLost", r.who, r.err)
		}
		fmt.Printf("rank %d caller %s: returned after %v: %v\n", me, r.who, r.d.Round(time.Millisecond), r.err)
	}
}

// shmFiles lists the fibermpi segments in /dev/shm.
func shmFiles(t *testing.T) []string {
	t.Helper()
	ents, err := os.ReadDir("/dev/shm")
	if err != nil {
		t.Skipf("no /dev/shm: %v", err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "fibermpi-") {
			out = append(out, e.Name())
		}
	}
	return out
}
