package rdmatest_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/fibermpi/fibermpi/rdma"
	"github.com/fibermpi/fibermpi/rdma/rdmatest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fabricFactory makes test fabrics with the given fault, spreading the
// endpoints over up to nhosts hosts (endpoint a on host a % nhosts).
func fabricFactory(f fault, nhosts int, timeout time.Duration) rdmatest.Factory {
	return boundedFactory(f, nhosts, 0, timeout)
}

// boundedFactory is fabricFactory with inboxes of at most limit packets
// (0: unbounded), beyond which Send fails with rdma.ErrAgain.
func boundedFactory(f fault, nhosts, limit int, timeout time.Duration) rdmatest.Factory {
	return func(t *testing.T, cfg rdmatest.Config) rdmatest.Fabric {
		rt := newFabric(cfg.Pool, min(nhosts, cfg.Endpoints), f)
		rt.limit = limit
		hosts := make([]rdma.Transport, cfg.Endpoints)
		for a := range hosts {
			hosts[a] = rt.hosts[a%len(rt.hosts)]
		}
		return rdmatest.Fabric{Hosts: hosts, Timeout: timeout}
	}
}

// TestAsyncFabric: the suite passes a correct transport that delivers only
// from Progress, with endpoints on up to three hosts (one each in the
// subtests of two or three endpoints, shared in the larger ones).
func TestAsyncFabric(t *testing.T) { rdmatest.Run(t, fabricFactory(faultNone, 3, 0)) }

// TestBoundedFabric: the suite passes a correct transport whose queues
// hold 8 packets and refuse more with rdma.ErrAgain, also from inside
// Receive callbacks (the suite's backlog takes those). Its Flood moves
// 8-packet queues 4·10^4 times: a loaded 2-core machine needs more than
// the default bound for that.
func TestBoundedFabric(t *testing.T) {
	rdmatest.Run(t, boundedFactory(faultNone, 3, 8, time.Minute))
}

const (
	faultEnv   = "RDMATEST_FAULT"
	timeoutEnv = "RDMATEST_TIMEOUT"
)

// TestFaultChild runs the suite on a faulty fabric; TestFaultsCaught runs it
// in a child process and expects it to fail.
func TestFaultChild(t *testing.T) {
	f := os.Getenv(faultEnv)
	if f == "" {
		t.Skip("run by TestFaultsCaught")
	}
	timeout, err := time.ParseDuration(os.Getenv(timeoutEnv))
	if err != nil {
		t.Fatalf("%s: %v", timeoutEnv, err)
	}
	rdmatest.Run(t, fabricFactory(fault(f), 2, timeout))
}

// TestFaultsCaught checks that the suite catches each fault of the test
// fabric, in the subtest meant to catch it.
func TestFaultsCaught(t *testing.T) {
	if os.Getenv(faultEnv) != "" {
		t.Skip("in a child")
	}
	for _, c := range []struct {
		f       fault
		subtest string
		timeout bool // the fault shows as a wait that runs out
	}{
		{faultDuplicate, "Delivery", false},
		{faultReorder, "FIFO", false},
		{faultReorder, "Flood", false},
		{faultLanes, "HandedOrder", false},
		{faultCorrupt, "Delivery", false},
		{faultTruncate, "Delivery", false},
		{faultLeak, "Delivery", false},
		{faultBadWorker, "Delivery", false},
		{faultSelfDeliver, "Delivery", false},
		{faultLatePut, "PutGet", false},
		{faultLatePut, "Rendezvous", false},
		{faultPartialPut, "Bounds", false},
		{faultBigOffset, "Bounds", false},
		{faultDirtyGet, "Bounds", false},
		{faultKeyReuse, "Deregister", false},
		{faultIgnoreClose, "Close", false},
		{faultStaleClosed, "Close", false},
		{faultDropClose, "CloseWhileSending", false},
		{faultKeepRefused, "NoPeer", false},
		{faultNoPeerCheck, "NoPeer", false},
		{faultRebind, "Bind", false},
		{faultLoseUnbound, "UnbindKeepsQueued", true},
	} {
		t.Run(string(c.f)+"/"+c.subtest, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestFaultChild$/^"+c.subtest+"$", "-test.short", "-test.count=1")
			// A wait runs out only where the fault makes it; elsewhere
			// the children have ample time even on a loaded machine.
			timeout := "5s"
			if c.timeout {
				timeout = "300ms"
			}
			cmd.Env = append(os.Environ(), faultEnv+"="+string(c.f), timeoutEnv+"="+timeout)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the suite passed a transport with fault %q:\n%s", c.f, out)
			}
			if !strings.Contains(string(out), "--- FAIL: TestFaultChild/"+c.subtest) {
				t.Fatalf("the child did not fail in subtest %s: %v\n%s", c.subtest, err, out)
			}
			if !c.timeout && strings.Contains(string(out), "timed out") {
				t.Fatalf("the child failed by running out of time, not by catching the fault:\n%s", out)
			}
			if testing.Verbose() {
				t.Logf("caught:\n%s", firstLines(string(out), 6))
			}
		})
	}
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], "\n")
}
