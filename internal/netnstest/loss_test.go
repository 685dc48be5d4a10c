package netnstest

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fibermpi/fibermpi/comm"
	"github.com/fibermpi/fibermpi/endpoint"
	"github.com/fibermpi/fibermpi/fiber"
	"github.com/fibermpi/fibermpi/internal/fmpitest"
)

// lossBound is a safety net: a survivor that has not reported the loss of
// a node by then never will. How soon they do (the issue asks within 2 s;
// tens of milliseconds here) is a figure the test logs, not a pass
// condition: timing belongs in benchmarks.
const lossBound = 30 * time.Second

// TestNodeLoss kills the processes of node 1 in the middle of traffic
// across the nodes; the transport of each process of node 0 must report
// an error naming a lost process (rdma/tcp logs a failed connection once,
// as a *tcp.PeerError). Blocked calls then end through fmpirun's notice
// (endpoint: Process.Abort), which endpoint's TestKilledProcessEndsTheJob
// checks.
func TestNodeLoss(t *testing.T) {
	if fmpitest.Child() {
		lossChild()
		return
	}
	cmd := fmpitest.TestCommand(t, 0)
	// The survivors stay after their calls fail (lossChild) and fmpirun
	// must not kill them before their own transports have reported.
	opts := fmpitest.Options{
		Env:     []string{expectEnv + "=nodes"},
		Flags:   []string{"-grace=" + (lossBound + 5*time.Second).String()},
		Timeout: 2 * time.Minute,
	}
	n, err := makeNetns(t, false)
	if err != nil {
		fmt.Printf("netnstest: no network namespaces (%v): every process on loopback, all pairs over TCP\n", err)
		opts.Env = []string{expectEnv + "=tcp", "FIBERMPI_TRANSPORT=tcp"}
	} else {
		cmd = append([]string{"sh", "-c", n.wrapper(), "sh"}, cmd...)
	}
	j := fmpitest.Start(t, procs, opts, cmd...)
	if !j.WaitFor("ready", procs, 30*time.Second) {
		t.Fatalf("the processes did not start\n%s", j.Output())
	}
	pids := map[int]int{}
	for _, m := range regexp.MustCompile(`netnstest: rank (\d+) pid (\d+) ready`).FindAllStringSubmatch(j.Output(), -1) {
		r, _ := strconv.Atoi(m[1])
		pid, _ := strconv.Atoi(m[2])
		pids[r] = pid
	}
	time.Sleep(200 * time.Millisecond) // traffic under way
	killed := time.Now()
	for r := perNode; r < procs; r++ {
		if err := syscall.Kill(pids[r], syscall.SIGKILL); err != nil {
			t.Fatalf("killing rank %d (pid %d): %v", r, pids[r], err)
		}
	}
	reported := func(out string, r int) string {
		m := regexp.MustCompile(fmt.Sprintf(`tcp: process %d: connection to process (\d+) failed: .*`, r)).FindString(out)
		return m
	}
	var took time.Duration
	for {
		out := j.Output()
		all := true
		for r := range perNode {
			all = all && reported(out, r) != ""
		}
		took = time.Since(killed)
		if all || took > lossBound {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	_ = j.Signal(syscall.SIGTERM)
	out, _ := j.Wait()
	for r := range perNode {
		line := reported(out, r)
		if line == "" {
			t.Errorf("process %d's transport did not report the loss within %v\n%s", r, lossBound, out)
			continue
		}
		if !regexp.MustCompile(`connection to process (2|3) failed: tcp: process (2|3): `).MatchString(line) {
			t.Errorf("process %d's report does not name a lost process: %s", r, line)
		}
	}
	t.Logf("reported within %v of the kill:\n%s", took.Round(time.Millisecond), grep(out, "failed: tcp:"))
}

// lossChild exchanges messages with the process opposite until that
// fails, reports the error, and waits to be ended (the job is broken:
// Finalize would wait for the lost processes).
func lossChild() {
	fail := func(err error) {
		fmt.Printf("netnstest: setup failed: %v\n", err)
		os.Exit(1)
	}
	p, err := endpoint.Init(endpoint.ThreadSingle, endpoint.Options{Workers: 1})
	if err != nil {
		fail(err)
	}
	ep, err := p.World().Register(fiber.NewGoroutineWaiter())
	if err != nil {
		fail(err)
	}
	c, err := comm.World[int64](ep)
	if err != nil {
		fail(err)
	}
	me := c.Rank()
	fmt.Printf("netnstest: rank %d pid %d ready\n", me, os.Getpid())
	peer := (me + perNode) % procs
	out, in := make([]int64, 4096), make([]int64, 4096)
	for {
		if _, err := c.Sendrecv(out, peer, 3, in, peer, 3); err != nil {
			fmt.Printf("netnstest: rank %d lost: %s\n", me, strings.ReplaceAll(err.Error(), "\n", " "))
			// fmpirun's notice of the kill may reach this process
			// (Process.Abort) before its own connection's reader has
			// seen the close: stay until the parent has read the
			// transport's report too (it ends the job with SIGTERM).
			time.Sleep(lossBound)
			os.Exit(3)
		}
	}
}
