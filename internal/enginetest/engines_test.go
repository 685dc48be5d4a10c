package enginetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fibermpi/fibermpi/bootstrap"
	"github.com/fibermpi/fibermpi/comm"
	"github.com/fibermpi/fibermpi/endpoint"
	"github.com/fibermpi/fibermpi/fiber"
)

// The environment of a child: its scenario, the backend it must find and
// the job size.
const (
	envChild    = "FIBERMPI_ENGINE_CHILD"
	envWant     = "FIBERMPI_ENGINE_WANT"
	envN        = "FIBERMPI_ENGINE_N"
	envRequired = "FIBERMPI_ENGINES_REQUIRED"
	envDir      = "FIBERMPI_ENGINE_DIR" // where children write their RESULT lines too
)

// jobWait bounds one job: every wait of the tests is bounded by it.
const jobWait = 90 * time.Second

// childWait bounds a child's wait for the others or the launcher.
const childWait = 30 * time.Second

// A launcher starts n copies of the test binary as one job.
type launcher struct {
	name string // the backend the children must detect
	// missing says why the launcher cannot run here, or "".
	missing func() string
	// command returns the launcher's command line for n processes of
	// prog args; nil for a launcher the test plays itself (torchrun).
	command func(n int, prog string, args ...string) []string
	env     []string // added to the launcher's environment
}

func have(cmd string) string {
	if _, err := exec.LookPath(cmd); err != nil {
		return cmd + " is not installed (make test-launch installs it: scripts/engines.sh)"
	}
	return ""
}

func hydra(extra ...string) func(n int, prog string, args ...string) []string {
	return func(n int, prog string, args ...string) []string {
		c := append([]string{"mpiexec.hydra"}, extra...)
		c = append(c, "-n", strconv.Itoa(n), prog)
		return append(c, args...)
	}
}

func srun(extra ...string) func(n int, prog string, args ...string) []string {
	return func(n int, prog string, args ...string) []string {
		// -O: more tasks than the node's cores (the tests run 4 on 2).
		// --kill-on-bad-exit: srun ends the step when a task fails, as
		// mpiexec does (Slurm's default lets the others run, and neither
		// its PMI-2 nor plain srun tells them).
		c := append([]string{"srun", "-O", "--kill-on-bad-exit=1", "-n", strconv.Itoa(n), "-t", "2"}, extra...)
		c = append(c, prog)
		return append(c, args...)
	}
}

// slurmMissing says why srun cannot run a job here: no srun, or no idle
// node (the cluster is not started).
func slurmMissing() string {
	if m := have("srun"); m != "" {
		return m
	}
	out, err := exec.Command("sinfo", "-h", "-o", "%T").Output()
	if err != nil {
		return fmt.Sprintf("sinfo failed (%v): the one-node Slurm cluster is not running (scripts/engines.sh starts it)", err)
	}
	if !regexp.MustCompile(`idle|mix|alloc|completing`).Match(out) {
		return fmt.Sprintf("no Slurm node is idle (sinfo: %q): scripts/engines.sh starts the one-node cluster", strings.TrimSpace(string(out)))
	}
	return ""
}

var launchers = []launcher{
	{name: "pmi", missing: func() string { return have("mpiexec.hydra") }, command: hydra()},
	{name: "pmi2", missing: func() string { return have("mpiexec.hydra") }, command: hydra(), env: []string{bootstrap.EnvBootstrap + "=pmi2"}},
	{name: "pmi", missing: func() string { return have("mpiexec.hydra") }, command: hydra("-pmi-port")},
	{name: "torchrun", missing: func() string { return "" }},
	{name: "pmi2", missing: slurmMissing, command: srun("--mpi=pmi2")},
	{name: "slurm", missing: slurmMissing, command: srun("--mpi=none")},
}

// label names a launcher in subtest names.
func (l launcher) label() string {
	if l.command == nil {
		return "torchrun-vars"
	}
	var c []string
	for _, a := range l.command(0, "x") {
		if a != "-n" && a != "0" && a != "-t" && a != "2" && a != "x" && a != "-O" && a != "--kill-on-bad-exit=1" {
			c = append(c, a)
		}
	}
	s := strings.Join(c, " ")
	if len(l.env) > 0 {
		s += " " + strings.Join(l.env, " ")
	}
	return s
}

func skipMissing(t *testing.T, l launcher) {
	t.Helper()
	if m := l.missing(); m != "" {
		kind := "hydra"
		if l.command != nil && l.command(0, "x")[0] == "srun" {
			kind = "slurm"
		}
		for _, k := range strings.Split(os.Getenv(envRequired), ",") {
			if k == kind {
				t.Fatalf("%s: %s (and %s=%s)", l.label(), m, envRequired, os.Getenv(envRequired))
			}
		}
		t.Skipf("%s: %s", l.label(), m)
	}
}

// result is a line of a child's output that the parent checks. It goes to
// standard output and to a file of the job's directory: a launcher that
// kills the job may not forward a dying process's output.
func result(format string, args ...any) {
	line := fmt.Sprintf("RESULT "+format+"\n", args...)
	fmt.Print(line)
	f, err := os.OpenFile(filepath.Join(os.Getenv(envDir), strconv.Itoa(os.Getpid())), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err == nil {
		_, _ = f.WriteString(line)
		_ = f.Sync()
		f.Close()
	}
}

// job is one launched job: its combined output and its end.
type job struct {
	dir   string // the children's result files
	out   lockedBuffer
	cmds  []*exec.Cmd
	codes []int // exit codes, -signal for a signal
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// freePort returns a TCP port of loopback that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// launch runs scenario in n processes under l and waits for them (bounded
// by jobWait; the processes are killed, in their process groups, if they
// run past it or the test ends first).
func launch(t *testing.T, l launcher, n int, scenario string) *job {
	t.Helper()
	return launchWith(t, l, n, scenario, nil)
}

// launchWith is launch, with during run on its own goroutine while the job
// runs; launchWith waits for it too.
func launchWith(t *testing.T, l launcher, n int, scenario string, during func(*job)) *job {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	base := append(os.Environ(), envChild+"="+scenario, envWant+"="+l.name, envN+"="+strconv.Itoa(n), envDir+"="+dir)
	base = append(base, l.env...)
	args := []string{"-test.run=^TestChild$", "-test.v=false"}
	j := &job{dir: dir}
	ctx, cancel := context.WithTimeout(context.Background(), jobWait)
	defer cancel()
	mk := func(argv []string, env []string) *exec.Cmd {
		c := exec.CommandContext(ctx, argv[0], argv[1:]...)
		c.Env = env
		c.Stdout, c.Stderr = &j.out, &j.out
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		c.Cancel = func() error { return syscall.Kill(-c.Process.Pid, syscall.SIGKILL) }
		c.WaitDelay = 5 * time.Second
		return c
	}
	if l.command == nil {
		port := freePort(t)
		for r := range n {
			env := append(base[:len(base):len(base)], "RANK="+strconv.Itoa(r), "WORLD_SIZE="+strconv.Itoa(n),
				"LOCAL_RANK="+strconv.Itoa(r), "LOCAL_WORLD_SIZE="+strconv.Itoa(n),
				"MASTER_ADDR=127.0.0.1", "MASTER_PORT="+strconv.Itoa(port-1))
			j.cmds = append(j.cmds, mk(append([]string{self}, args...), env))
		}
	} else {
		j.cmds = append(j.cmds, mk(l.command(n, self, args...), base))
	}
	t.Cleanup(func() {
		for _, c := range j.cmds {
			if c.Process != nil {
				_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
			}
		}
	})
	for _, c := range j.cmds {
		if err := c.Start(); err != nil {
			t.Fatalf("starting %v: %v", c.Args, err)
		}
	}
	var wg sync.WaitGroup
	if during != nil {
		wg.Go(func() { during(j) })
	}
	defer wg.Wait()
	for _, c := range j.cmds {
		err := c.Wait()
		code := 0
		if ee, ok := errors.AsType[*exec.ExitError](err); ok {
			code = ee.ExitCode()
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				code = -int(ws.Signal())
			}
		} else if err != nil {
			t.Errorf("%v: %v", c.Args, err)
			code = -1
		}
		j.codes = append(j.codes, code)
	}
	if ctx.Err() != nil {
		t.Fatalf("the job ran past %v and was killed; output:\n%s", jobWait, j.out.String())
	}
	return j
}

// results returns the RESULT lines of the children's files that match re.
func (j *job) results(re string) [][]string {
	var all []byte
	files, _ := filepath.Glob(filepath.Join(j.dir, "*"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		all = append(all, b...)
	}
	return regexp.MustCompile(`(?m)^RESULT `+re+`$`).FindAllStringSubmatch(string(all), -1)
}

// checkNoShmLeft fails if a /dev/shm file of the job's is left: the
// children report the job id (other jobs, other tests', may run at the
// same time).
func checkNoShmLeft(t *testing.T, j *job) {
	t.Helper()
	ids := j.results(`job id=(\S+)`)
	if len(ids) == 0 {
		t.Errorf("no process reported the job id; output:\n%s", j.out.String())
		return
	}
	for _, id := range ids {
		names, _ := filepath.Glob("/dev/shm/fibermpi-" + id[1] + "*")
		for _, n := range names {
			t.Errorf("shared memory segment left behind: %s", n)
			_ = os.Remove(n)
		}
	}
}

// TestExchange: every process finds the launcher's backend, the job's size
// and its rank, and reads every other's records (small and chunked) after
// fences, under each launcher.
func TestExchange(t *testing.T) {
	for _, l := range launchers {
		for _, n := range []int{2, 4} {
			t.Run(fmt.Sprintf("%s/n=%d", l.label(), n), func(t *testing.T) {
				skipMissing(t, l)
				if testing.Short() && n > 2 {
					t.Skip("short mode: 2 processes only")
				}
				j := launch(t, l, n, "exchange")
				if got := j.results(`exchange-ok rank=(\d+) name=(\S+)`); len(got) != n {
					t.Fatalf("%d of %d processes finished the exchange; exit codes %v; output:\n%s", len(got), n, j.codes, j.out.String())
				}
				for _, c := range j.codes {
					if c != 0 {
						t.Errorf("exit codes %v; output:\n%s", j.codes, j.out.String())
						break
					}
				}
			})
		}
	}
}

// TestSmoke: point-to-point (a ring) and collectives (Allreduce, Bcast,
// Barrier) of a fibermpi program over shared memory, under each launcher.
func TestSmoke(t *testing.T) {
	for _, l := range launchers {
		for _, n := range []int{2, 4} {
			t.Run(fmt.Sprintf("%s/n=%d", l.label(), n), func(t *testing.T) {
				skipMissing(t, l)
				if testing.Short() && n > 2 {
					t.Skip("short mode: 2 processes only")
				}
				j := launch(t, l, n, "smoke")
				got := j.results(`smoke-ok rank=(\d+) sum=(\d+) ring=(\d+) transport=(\S+)`)
				if len(got) != n {
					t.Fatalf("%d of %d processes passed; exit codes %v; output:\n%s", len(got), n, j.codes, j.out.String())
				}
				for _, g := range got {
					if g[2] != strconv.Itoa(n*(n-1)/2) || !strings.Contains(g[4], "shm") {
						t.Errorf("rank %s: sum %s (want %d), ring %s, transport %s", g[1], g[2], n*(n-1)/2, g[3], g[4])
					}
				}
				checkNoShmLeft(t, j)
			})
		}
	}
}

// TestKill: SIGKILL of rank 1 after the job started. Under a launcher
// (mpiexec, srun) the launcher ends the job with a non-zero status; under
// torchrun's variables, which have no launcher, every other process gets
// a *PeerError naming rank 1 and exits non-zero. Nothing hangs (the job is
// bounded) and no segment is left.
func TestKill(t *testing.T) {
	for _, l := range launchers {
		t.Run(l.label(), func(t *testing.T) {
			skipMissing(t, l)
			j := launch(t, l, 3, "kill")
			out := j.out.String()
			killed := j.results(`killing rank=1 at=(\d+)`)
			if len(killed) != 1 {
				t.Fatalf("rank 1 did not reach its kill; codes %v; output:\n%s", j.codes, out)
			}
			ok := false
			for _, c := range j.codes {
				ok = ok || c != 0
			}
			if !ok {
				t.Errorf("every exit code is 0 (%v) after rank 1 was killed; output:\n%s", j.codes, out)
			}
			lost := j.results(`lost rank=(-?\d+) sentinel=(\S+) at=(\d+) err=(.*)`)
			if l.command == nil && len(lost) != 2 {
				t.Errorf("%d of the 2 other processes reported the loss; output:\n%s", len(lost), out)
			}
			at, _ := strconv.ParseInt(killed[0][1], 10, 64)
			for _, g := range lost {
				if g[1] != "1" || g[2] != "ErrPeerLost" {
					t.Errorf("a process reported %s (rank %s, %s), want a loss of rank 1", g[4], g[1], g[2])
				}
				seen, _ := strconv.ParseInt(g[3], 10, 64)
				t.Logf("loss of rank 1 seen after %v: %s", time.Duration(seen-at), g[4])
			}
			checkNoShmLeft(t, j)
		})
	}
}

// TestKillBlockedRecv: SIGKILL of rank 1 while the others wait in a
// receive from it, a program that does not watch the bootstrap: the job
// ends, every process exits non-zero, and under torchrun's variables (no
// launcher to kill them) each of the others says it lost rank 1.
func TestKillBlockedRecv(t *testing.T) {
	for _, l := range launchers {
		t.Run(l.label(), func(t *testing.T) {
			skipMissing(t, l)
			j := launch(t, l, 3, "killrecv")
			out := j.out.String()
			if len(j.results(`killing rank=1 at=(\d+)`)) != 1 {
				t.Fatalf("rank 1 did not reach its kill; codes %v; output:\n%s", j.codes, out)
			}
			for i, c := range j.codes {
				if c == 0 {
					t.Errorf("process %d of the launch exited with 0; codes %v; output:\n%s", i, j.codes, out)
				}
			}
			t.Logf("receives that returned: %v", j.results(`recv returned (.*)`))
			if l.command == nil {
				if n := strings.Count(out, "bootstrap: rank 1: lost its connection to the store on rank 0"); n != 2 {
					t.Errorf("%d of the 2 other processes named rank 1 as they ended; output:\n%s", n, out)
				}
			}
			checkNoShmLeft(t, j)
		})
	}
}

// TestLauncherDies: the launcher is killed (SIGKILL of mpiexec; under
// torchrun's variables, of rank 0, which serves the store) while the
// processes wait in a barrier or sleep: none of them lives on.
func TestLauncherDies(t *testing.T) {
	for _, l := range launchers {
		if l.command != nil && l.command(0, "x")[0] == "srun" {
			continue // srun's processes belong to slurmd, not to srun
		}
		t.Run(l.label(), func(t *testing.T) {
			skipMissing(t, l)
			const n = 3
			var pids []int
			j := launchWith(t, l, n, "orphan", func(j *job) {
				deadline := time.Now().Add(childWait)
				for len(j.results(`waiting pid=(\d+)`)) < n && time.Now().Before(deadline) {
					time.Sleep(10 * time.Millisecond)
				}
				for _, g := range j.results(`waiting pid=(\d+)`) {
					pid, _ := strconv.Atoi(g[1])
					pids = append(pids, pid)
				}
				victim := j.cmds[0].Process // mpiexec, or rank 0
				_ = victim.Signal(syscall.SIGKILL)
			})
			if len(pids) != n {
				t.Fatalf("%d of %d processes started waiting; output:\n%s", len(pids), n, j.out.String())
			}
			// The launch has ended (launch waited for it); its processes
			// must follow within the grace of a second and a margin.
			deadline := time.Now().Add(10 * time.Second)
			for _, pid := range pids {
				for syscall.Kill(pid, 0) == nil && time.Now().Before(deadline) {
					time.Sleep(20 * time.Millisecond)
				}
				if syscall.Kill(pid, 0) == nil {
					t.Errorf("process %d lives on after its launcher died", pid)
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		})
	}
}

// TestAbort: rank 1 calls Abort(7, reason): the reason is printed once,
// mpiexec exits with 7 (srun with its highest task status, naming task 1's
// 7), and (without a launcher) every other process gets
// a *PeerError naming rank 1 that wraps ErrAborted.
func TestAbort(t *testing.T) {
	for _, l := range launchers {
		t.Run(l.label(), func(t *testing.T) {
			skipMissing(t, l)
			j := launch(t, l, 3, "abort")
			out := j.out.String()
			if c := strings.Count(out, "reason-xyzzy"); c != 1 {
				t.Errorf("the reason is printed %d times, want once; output:\n%s", c, out)
			}
			if l.command != nil && l.command(0, "x")[0] == "srun" {
				// srun exits with the highest status of its tasks: the
				// others' SIGTERM (143) when it ends the step; it names
				// rank 1's code.
				if j.codes[0] == 0 || !strings.Contains(out, "task 1: Exited with exit code 7") {
					t.Errorf("srun exited with %d, and did not name task 1's code 7; output:\n%s", j.codes[0], out)
				}
			} else if l.command != nil {
				if j.codes[0] != 7 {
					t.Errorf("%s exited with %d, want 7; output:\n%s", l.label(), j.codes[0], out)
				}
			} else {
				if j.codes[1] != 7 {
					t.Errorf("rank 1 exited with %d, want 7", j.codes[1])
				}
				got := j.results(`aborted rank=(-?\d+) sentinel=(\S+)`)
				if len(got) != 2 {
					t.Errorf("%d of the 2 other processes saw the abort; output:\n%s", len(got), out)
				}
				for _, g := range got {
					if g[1] != "1" || g[2] != "ErrAborted" {
						t.Errorf("a process saw rank %s %s, want rank 1 ErrAborted", g[1], g[2])
					}
				}
			}
			checkNoShmLeft(t, j)
		})
	}
}

// TestHello runs examples/hello, unchanged, under each launcher.
func TestHello(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode: builds examples/hello")
	}
	bin := filepath.Join(t.TempDir(), "hello")
	build := exec.Command("go", "build", "-o", bin, "github.com/fibermpi/fibermpi/examples/hello")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, l := range launchers {
		t.Run(l.label(), func(t *testing.T) {
			skipMissing(t, l)
			const n = 3
			ctx, cancel := context.WithTimeout(context.Background(), jobWait)
			defer cancel()
			var out []byte
			var err error
			if l.command == nil {
				port := freePort(t)
				var wg sync.WaitGroup
				outs := make([][]byte, n)
				errs := make([]error, n)
				for r := range n {
					c := exec.CommandContext(ctx, bin)
					c.Env = append(os.Environ(), "RANK="+strconv.Itoa(r), "WORLD_SIZE="+strconv.Itoa(n),
						"MASTER_ADDR=127.0.0.1", "MASTER_PORT="+strconv.Itoa(port-1))
					wg.Go(func() { outs[r], errs[r] = c.CombinedOutput() })
				}
				wg.Wait()
				out, err = bytes.Join(outs, nil), errors.Join(errs...)
			} else {
				argv := l.command(n, bin)
				c := exec.CommandContext(ctx, argv[0], argv[1:]...)
				c.Env = append(os.Environ(), l.env...)
				out, err = c.CombinedOutput()
			}
			if err != nil || !strings.Contains(string(out), "hello from 3 processes") || !strings.Contains(string(out), "came back as 3") {
				t.Fatalf("%v; output:\n%s", err, out)
			}
		})
	}
}

// TestChild is a process of a job started by the tests above; it does
// nothing in a plain test run.
func TestChild(t *testing.T) {
	scenario := os.Getenv(envChild)
	if scenario == "" {
		t.Skip("a process of the launcher tests")
	}
	watchdog := time.AfterFunc(jobWait, func() {
		fmt.Fprintf(os.Stderr, "child %s: still running after %v\n", scenario, jobWait)
		os.Exit(99)
	})
	defer watchdog.Stop()
	n, _ := strconv.Atoi(os.Getenv(envN))
	b, err := bootstrap.Detect()
	if err != nil {
		t.Fatalf("Detect: %v", err)
	}
	if b.Name() != os.Getenv(envWant) || b.Size() != n {
		t.Fatalf("Detect chose %s, size %d; want %s, size %d", b.Name(), b.Size(), os.Getenv(envWant), n)
	}
	result("job id=%s", b.JobID())
	switch scenario {
	case "exchange":
		childExchange(t, b)
	case "smoke":
		childSmoke(t, b)
	case "kill", "abort":
		childFail(t, b, scenario)
	case "killrecv":
		childKillRecv(t, b)
	case "orphan":
		// Rank 1 sleeps, the others wait for it in a barrier.
		result("waiting pid=%d", os.Getpid())
		if b.Rank() == 1 {
			time.Sleep(childWait)
			os.Exit(5)
		}
		err := b.Barrier()
		fmt.Fprintf(os.Stderr, "rank %d: Barrier: %v\n", b.Rank(), err)
		time.Sleep(childWait)
		os.Exit(5)
	default:
		t.Fatalf("unknown scenario %q", scenario)
	}
}

func bigValue(rank, gen int) []byte {
	v := make([]byte, 3000+rank)
	for i := range v {
		v[i] = byte(i*7 + rank*13 + gen)
	}
	return v
}

func childExchange(t *testing.T, b bootstrap.Bootstrap) {
	me, n := b.Rank(), b.Size()
	for gen := range 2 {
		if err := b.Put("small", []byte(fmt.Sprintf("rank %d gen %d", me, gen))); err != nil {
			t.Fatal(err)
		}
		if err := b.Put("big key with spaces=and;signs", bigValue(me, gen)); err != nil {
			t.Fatal(err)
		}
		if err := b.Fence(); err != nil {
			t.Fatalf("Fence: %v", err)
		}
		for q := range n {
			v, err := b.Get(q, "small")
			if err != nil || string(v) != fmt.Sprintf("rank %d gen %d", q, gen) {
				t.Fatalf("gen %d: Get(%d, small) = %q, %v", gen, q, v, err)
			}
			v, err = b.Get(q, "big key with spaces=and;signs")
			if err != nil || !bytes.Equal(v, bigValue(q, gen)) {
				t.Fatalf("gen %d: Get(%d, big) = %d bytes, %v", gen, q, len(v), err)
			}
			if _, err := b.Get(q, "never put"); !errors.Is(err, bootstrap.ErrNotFound) {
				t.Fatalf("Get of a missing record: %v, want ErrNotFound", err)
			}
		}
		if err := b.Barrier(); err != nil {
			t.Fatalf("Barrier: %v", err)
		}
	}
	if _, err := b.Get(n, "small"); !errors.Is(err, bootstrap.ErrRank) {
		t.Fatalf("Get(%d): %v, want ErrRank", n, err)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	result("exchange-ok rank=%d name=%s", me, b.Name())
}

func childSmoke(t *testing.T, b bootstrap.Bootstrap) {
	p, err := endpoint.Init(endpoint.ThreadSingle, endpoint.Options{Bootstrap: b})
	if err != nil {
		t.Fatalf("Init: %v", err)
	}
	ep, err := p.World().Register(fiber.NewGoroutineWaiter())
	if err != nil {
		t.Fatal(err)
	}
	c, err := comm.World[int](ep)
	if err != nil {
		t.Fatal(err)
	}
	me, n := c.Rank(), c.Size()
	// A ring both ways at once, with Isend, then collectives.
	token := []int{me}
	got := []int{-1}
	rq, err := c.Irecv(got, (me+n-1)%n, 5)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Send(token, (me+1)%n, 5); err != nil {
		t.Fatal(err)
	}
	if err := comm.WaitAll(rq); err != nil {
		t.Fatal(err)
	}
	if got[0] != (me+n-1)%n {
		t.Fatalf("ring: got %d from %d", got[0], (me+n-1)%n)
	}
	sum := []int{0}
	if err := c.Allreduce([]int{me}, sum, comm.Sum[int]()); err != nil {
		t.Fatal(err)
	}
	buf := []int{0, 0}
	if me == n-1 {
		buf = []int{42, 43}
	}
	if err := c.Bcast(buf, n-1); err != nil {
		t.Fatal(err)
	}
	if buf[0] != 42 || buf[1] != 43 {
		t.Fatalf("Bcast: %v", buf)
	}
	if err := c.Barrier(); err != nil {
		t.Fatal(err)
	}
	result("smoke-ok rank=%d sum=%d ring=%d transport=%s", me, sum[0], got[0], p.Transport().Name())
	ep.Unregister()
	if err := p.Finalize(); err != nil {
		t.Fatalf("Finalize: %v", err)
	}
}

func sentinel(err error) string {
	switch {
	case errors.Is(err, bootstrap.ErrAborted):
		return "ErrAborted"
	case errors.Is(err, bootstrap.ErrPeerLost):
		return "ErrPeerLost"
	}
	return "other"
}

// childFail: the job starts (shared memory set up), then rank 1 is killed
// or aborts; the others wait for the bootstrap's notice.
func childFail(t *testing.T, b bootstrap.Bootstrap, scenario string) {
	p, err := endpoint.Init(endpoint.ThreadSingle, endpoint.Options{Bootstrap: b})
	if err != nil {
		t.Fatalf("Init: %v", err)
	}
	_ = p
	if b.Rank() == 1 {
		if scenario == "kill" {
			result("killing rank=1 at=%d", time.Now().UnixNano())
			os.Stdout.Sync()
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			time.Sleep(childWait)
		}
		if err := b.Abort(7, "reason-xyzzy"); err != nil {
			t.Fatalf("Abort: %v", err)
		}
		os.Exit(7)
	}
	// The endpoint runtime watches Failed too; this process waits in a
	// collective of the bootstrap, which the failure ends.
	errc := make(chan error, 1)
	go func() { errc <- b.Barrier() }()
	select {
	case err = <-errc:
	case <-time.After(childWait):
		t.Fatalf("rank %d: nothing ended the job within %v", b.Rank(), childWait)
	}
	at := time.Now().UnixNano()
	pe, ok := errors.AsType[*bootstrap.PeerError](err)
	rank := -2
	if ok {
		rank = pe.Rank
	}
	if scenario == "kill" {
		result("lost rank=%d sentinel=%s at=%d err=%v", rank, sentinel(err), at, err)
	} else {
		result("aborted rank=%d sentinel=%s", rank, sentinel(err))
	}
	os.Stdout.Sync()
	os.Exit(3)
}

// childKillRecv: rank 1 dies while the others wait in Recv from it; they
// leave the ending to the runtime (a launcher, or the bootstrap itself).
func childKillRecv(t *testing.T, b bootstrap.Bootstrap) {
	p, err := endpoint.Init(endpoint.ThreadSingle, endpoint.Options{Bootstrap: b})
	if err != nil {
		t.Fatalf("Init: %v", err)
	}
	ep, err := p.World().Register(fiber.NewGoroutineWaiter())
	if err != nil {
		t.Fatal(err)
	}
	c, err := comm.World[int](ep)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Barrier(); err != nil {
		t.Fatal(err)
	}
	if c.Rank() == 1 {
		result("killing rank=1 at=%d", time.Now().UnixNano())
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		time.Sleep(childWait)
	}
	buf := []int{0}
	_, err = c.Recv(buf, 1, 9)
	result("recv returned rank=%d err=%v", c.Rank(), err)
	os.Exit(4)
}
