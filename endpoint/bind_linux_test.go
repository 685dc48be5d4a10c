//go:build linux

package endpoint_test

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fibermpi/fibermpi/endpoint"
	"github.com/fibermpi/fibermpi/internal/fmpitest"
)

// TestProcessesBoundToOwnCPUs: two processes of one node with one worker
// each are bound to half of the CPUs each, different halves, and Put
// through the shared-memory rings; with FIBERMPI_BIND=none neither is
// bound, and with FIBERMPI_SHM_PUT=attach Puts attach.
func TestProcessesBoundToOwnCPUs(t *testing.T) {
	if fmpitest.Child() {
		bindChild(t)
		return
	}
	set := twoCPUs(t)
	line := regexp.MustCompile(`rank (\d) bound to (\d+) CPUs, first (\d+)`)
	// The processes check that the runtime follows their binding, which
	// it does only when GOMAXPROCS is not set: a value from the test's
	// environment (GOMAXPROCS=4 go test) is not passed on.
	out, err := fmpitest.RunTest(t, 2, fmpitest.Options{Env: []string{"GOMAXPROCS="}})
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	got := line.FindAllStringSubmatch(out, -1)
	if len(got) != 2 {
		t.Fatalf("%d processes reported their CPUs, want 2:\n%s", len(got), out)
	}
	procs := regexp.MustCompile(`rank (\d) GOMAXPROCS (\d+) before Init, (\d+) a while after`)
	gp := procs.FindAllStringSubmatch(out, -1)
	if len(gp) != 2 {
		t.Fatalf("%d processes reported GOMAXPROCS, want 2:\n%s", len(gp), out)
	}
	for _, m := range gp {
		if m[2] != m[3] {
			t.Errorf("%s: binding lowered GOMAXPROCS (the runtime follows the affinity unless it is set)", m[0])
		}
	}
	half := fmt.Sprint(set.Count() / 2)
	if got[0][2] != half || got[1][2] != half || got[0][3] == got[1][3] {
		t.Fatalf("want each process bound to %s CPUs of its own, got %q and %q", half, got[0][0], got[1][0])
	}
	// With one worker filling a share of one CPU, the runtime's monitor
	// thread, and no other, runs in SCHED_IDLE at nice 19; with a CPU to
	// spare, none.
	niced := regexp.MustCompile(`rank (\d) has (\d+) threads at nice 19, (\d+) in SCHED_IDLE, (\d+) both`)
	nm := niced.FindAllStringSubmatch(out, -1)
	if len(nm) != 2 {
		t.Fatalf("%d processes reported their threads' priorities, want 2:\n%s", len(nm), out)
	}
	want := "0"
	if set.Count()/2 == 1 {
		want = "1"
	}
	for _, m := range nm {
		if m[2] != want || m[3] != want || m[4] != want {
			t.Errorf("%s, want %s of each (the monitor thread when the worker fills the share)", m[0], want)
		}
	}
	// By default Puts go through the rings.
	transport := regexp.MustCompile(`rank (\d) transport (.*)`)
	checkPuts := func(out string, want bool, how string) {
		t.Helper()
		tm := transport.FindAllStringSubmatch(out, -1)
		if len(tm) != 2 {
			t.Fatalf("%d processes reported their transport, want 2:\n%s", len(tm), out)
		}
		for _, m := range tm {
			if strings.Contains(m[2], "+ringput") != want {
				t.Errorf("%s: %s; want Puts through the rings %v", how, m[0], want)
			}
		}
	}
	checkPuts(out, true, "by default")
	out, err = fmpitest.RunTest(t, 2, fmpitest.Options{Env: []string{"GOMAXPROCS=", endpoint.EnvBind + "=none", endpoint.EnvShmPut + "=attach"}})
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	checkPuts(out, false, endpoint.EnvShmPut+"=attach")
	for _, m := range line.FindAllStringSubmatch(out, -1) {
		if m[2] != fmt.Sprint(set.Count()) {
			t.Errorf("with %s=none: %q, want all %d CPUs", endpoint.EnvBind, m[0], set.Count())
		}
	}
	for _, m := range niced.FindAllStringSubmatch(out, -1) {
		if m[2] != "0" || m[3] != "0" {
			t.Errorf("with %s=none: %s, want none", endpoint.EnvBind, m[0])
		}
	}
}

// TestDefaultWorkersFitTheShare: with GOMAXPROCS above the node's CPUs,
// two processes that leave Workers at its default start as many workers as
// fit in their share of the CPUs (the share less one, at least one), and
// bind to it, instead of GOMAXPROCS−1 each, unbound (with GOMAXPROCS=4 on
// 2 CPUs, fmpi-osu latency measured 9–36 µs in some runs that way).
func TestDefaultWorkersFitTheShare(t *testing.T) {
	if fmpitest.Child() {
		p, set := initDefault(t)
		fmt.Printf("rank %d GOMAXPROCS %d workers %d bound to %d CPUs\n", p.Rank(), runtime.GOMAXPROCS(0), p.Scheduler().Workers(), set.Count())
		return
	}
	set := twoCPUs(t)
	procs := 2*set.Count() + 2
	out, err := fmpitest.RunTest(t, 2, fmpitest.Options{Env: []string{"GOMAXPROCS=" + strconv.Itoa(procs)}})
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	line := regexp.MustCompile(`rank (\d) GOMAXPROCS (\d+) workers (\d+) bound to (\d+) CPUs`)
	got := line.FindAllStringSubmatch(out, -1)
	if len(got) != 2 {
		t.Fatalf("%d processes reported, want 2:\n%s", len(got), out)
	}
	share := set.Count() / 2
	for _, m := range got {
		want := fmt.Sprintf("GOMAXPROCS %d workers %d bound to %d CPUs", procs, max(share-1, 1), share)
		if !strings.Contains(m[0], want) {
			t.Errorf("%s; want %s", m[0], want)
		}
	}
}

// TestLauncherBoundKeepsASpareP: processes that a launcher bound to one
// CPU each before they started, as Open MPI does (here taskset), start
// with GOMAXPROCS 1; Init leaves their binding alone, runs one worker, and
// raises GOMAXPROCS to 2, so that the worker does not hold the only P, and
// demotes the monitor thread (SCHED_IDLE, nice 19), which shares the
// worker's CPU.
func TestLauncherBoundKeepsASpareP(t *testing.T) {
	if fmpitest.Child() {
		// The testing package fixes GOMAXPROCS: go back to the runtime's
		// default, what a program's process starts with (the CPUs it may
		// use).
		runtime.SetDefaultGOMAXPROCS()
		before := runtime.GOMAXPROCS(0)
		p, set := initDefault(t)
		fmt.Printf("rank %d GOMAXPROCS %d before Init, %d after; workers %d; bound to %d CPUs; %s\n",
			p.Rank(), before, runtime.GOMAXPROCS(0), p.Scheduler().Workers(), set.Count(), demoted(t))
		return
	}
	set := twoCPUs(t)
	taskset, err := exec.LookPath("taskset")
	if err != nil {
		t.Skip("taskset (util-linux) is not installed: cannot bind the processes before they start")
	}
	var cpus []int
	for c := 0; len(cpus) < 2 && c < len(set)*64; c++ {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	// Each rank binds itself to its CPU and then becomes the test binary.
	wrap := fmt.Sprintf(`cpus=(%d %d); exec %s -c "${cpus[$FIBERMPI_RANK]}" "$@"`, cpus[0], cpus[1], taskset)
	cmd := append([]string{"bash", "-c", wrap, "bash"}, fmpitest.TestCommand(t, 0)...)
	out, err := fmpitest.Start(t, 2, fmpitest.Options{Env: []string{"GOMAXPROCS="}}, cmd...).Wait()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	line := regexp.MustCompile(`rank \d GOMAXPROCS .*`)
	got := line.FindAllString(out, -1)
	if len(got) != 2 {
		t.Fatalf("%d processes reported, want 2:\n%s", len(got), out)
	}
	for _, m := range got {
		const want = "GOMAXPROCS 1 before Init, 2 after; workers 1; bound to 1 CPUs; 1 threads at nice 19, 1 in SCHED_IDLE, 1 both"
		if !strings.Contains(m, want) {
			t.Errorf("%s; want %s", m, want)
		}
	}
}

// initDefault initializes a process with the default options, finalized
// when the test ends, and returns it with the CPUs its threads may use.
func initDefault(t *testing.T) (*endpoint.Process, unix.CPUSet) {
	p, err := endpoint.Init(endpoint.ThreadSingle, endpoint.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Finalize() })
	runtime.LockOSThread() // read this thread's mask, not a random one's
	defer runtime.UnlockOSThread()
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		t.Fatal(err)
	}
	return p, set
}

// twoCPUs returns the CPUs this process may use, skipping the test unless
// there are two or more (two processes each need one).
func twoCPUs(t *testing.T) unix.CPUSet {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		t.Skipf("sched_getaffinity: %v", err)
	}
	if set.Count() < 2 {
		t.Skipf("this process may use %d CPU: two processes cannot have one each", set.Count())
	}
	return set
}

func bindChild(t *testing.T) {
	if os.Getenv("GOMAXPROCS") != "" {
		t.Fatal("GOMAXPROCS is set in the environment: the runtime then never changes it, and the check below could not fail")
	}
	// The testing package sets GOMAXPROCS (for -cpu), which stops the
	// runtime's updates: restore them, as in a program's process.
	runtime.SetDefaultGOMAXPROCS()
	before := runtime.GOMAXPROCS(0)
	p, err := endpoint.Init(endpoint.ThreadSingle, endpoint.Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Finalize()
	// The runtime looks at the affinity at most once a second.
	time.Sleep(1200 * time.Millisecond)
	fmt.Printf("rank %d GOMAXPROCS %d before Init, %d a while after\n", p.Rank(), before, runtime.GOMAXPROCS(0))
	runtime.LockOSThread() // read this thread's mask, not a random one's
	defer runtime.UnlockOSThread()
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		t.Fatal(err)
	}
	first := -1
	for c := 0; first < 0 && c < len(set)*64; c++ {
		if set.IsSet(c) {
			first = c
		}
	}
	fmt.Printf("rank %d bound to %d CPUs, first %d\n", p.Rank(), set.Count(), first)
	fmt.Printf("rank %d has %s\n", p.Rank(), demoted(t))
	fmt.Printf("rank %d transport %s\n", p.Rank(), p.Transport().Name())
}

// demoted says how many threads of this process run at nice 19, how
// many in SCHED_IDLE, and how many both.
func demoted(t *testing.T) string {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	var niced, idle, both int
	for _, task := range tasks {
		tid, err := strconv.Atoi(task.Name())
		if err != nil {
			continue
		}
		// getpriority(2) returns 20 − nice on Linux.
		prio, err := unix.Getpriority(unix.PRIO_PROCESS, tid)
		n := err == nil && 20-prio == 19
		attr, err := unix.SchedGetAttr(tid, 0)
		i := err == nil && attr.Policy == unix.SCHED_IDLE
		if n {
			niced++
		}
		if i {
			idle++
		}
		if n && i {
			both++
		}
	}
	return fmt.Sprintf("%d threads at nice 19, %d in SCHED_IDLE, %d both", niced, idle, both)
}
