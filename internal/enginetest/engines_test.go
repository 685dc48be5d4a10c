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
	"slices"
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
	"github.com/fibermpi/fibermpi/internal/testenv"
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

// A launcher starts n copies of the test binary as one job: MPICH's Hydra,
// Slurm's srun, or (kind "") torchrun's variables, which the test sets
// itself for each process.
type launcher struct {
	name  string   // the backend the children must detect
	kind  string   // "hydra", "slurm", or "" for torchrun's variables
	flags []string // the launcher's own flags
	env   []string // added to the launcher's environment
	// ends lists the deaths of a process ("kill": SIGKILL, "exit": a
	// non-zero exit without Finalize) after which the launcher kills the
	// rest of the job itself, leaving the survivors no time to speak.
	ends []string
}

// srunFlags are srun's flags for every job: -O allows more tasks than the
// node's cores (the tests run 4 on 2).
var srunFlags = []string{"-O", "-t", "2"}

// command is the launcher's command line for n processes of prog args;
// nil for torchrun's variables.
func (l launcher) command(n int, prog string, args ...string) []string {
	var c []string
	switch l.kind {
	case "hydra":
		c = append([]string{"mpiexec.hydra"}, l.flags...)
	case "slurm":
		c = append(append([]string{"srun"}, srunFlags...), l.flags...)
	default:
		return nil
	}
	c = append(c, "-n", strconv.Itoa(n), prog)
	return append(c, args...)
}

// missing says why the launcher cannot run here, or "".
func (l launcher) missing() string {
	switch l.kind {
	case "hydra":
		return have("mpiexec.hydra")
	case "slurm":
		return slurmMissing()
	}
	return ""
}

// endsOn reports whether the launcher itself ends the job when a process
// dies that way.
func (l launcher) endsOn(death string) bool { return slices.Contains(l.ends, death) }

func have(cmd string) string {
	if _, err := exec.LookPath(cmd); err != nil {
		return cmd + " is not installed (make test-launch installs it: scripts/engines.sh)"
	}
	return ""
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

// Both deaths, for launchers that end the job after either.
var bothDeaths = []string{"kill", "exit"}

// launchers are the launchers every test runs under. srun runs with
// --kill-on-bad-exit=1: it ends the step when a task fails, as mpiexec
// does (Slurm's default lets the others run).
var launchers = []launcher{
	{name: "pmi", kind: "hydra", ends: bothDeaths},
	{name: "pmi2", kind: "hydra", env: []string{bootstrap.EnvBootstrap + "=pmi2"}, ends: bothDeaths},
	{name: "pmi", kind: "hydra", flags: []string{"-pmi-port"}, ends: bothDeaths},
	{name: "pmi2", kind: "hydra", flags: []string{"-pmi-port"}, env: []string{bootstrap.EnvBootstrap + "=pmi2"}, ends: bothDeaths},
	{name: "torchrun"},
	{name: "pmi2", kind: "slurm", flags: []string{"--kill-on-bad-exit=1", "--mpi=pmi2"}, ends: bothDeaths},
	{name: "slurm", kind: "slurm", flags: []string{"--kill-on-bad-exit=1", "--mpi=none"}, ends: bothDeaths},
}

// keepGoing are the launchers in the modes that leave the survivors of a
// failed process running, added to launchers by the tests of a lost
// process: there the processes must see the loss themselves. Hydra
// (MPICH 4.0) with -disable-auto-cleanup still kills the others at once
// when a process is killed by a signal; after a non-zero exit it lets
// them run.
var keepGoing = []launcher{
	{name: "pmi", kind: "hydra", flags: []string{"-disable-auto-cleanup"}, ends: []string{"kill"}},
	{name: "pmi2", kind: "slurm", flags: []string{"--kill-on-bad-exit=0", "--mpi=pmi2"}},
}

// label names a launcher in subtest names.
func (l launcher) label() string {
	if l.kind == "" {
		return "torchrun-vars"
	}
	s := strings.Join(append([]string{l.command(0, "x")[0]}, l.flags...), " ")
	if len(l.env) > 0 {
		s += " " + strings.Join(l.env, " ")
	}
	return s
}

func skipMissing(t *testing.T, l launcher) {
	t.Helper()
	if m := l.missing(); m != "" {
		for _, k := range strings.Split(os.Getenv(envRequired), ",") {
			if k == l.kind {
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
	out   testenv.Buffer
	cmds  []*exec.Cmd
	codes []int // exit codes, -signal for a signal
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
	if l.kind == "" {
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

// TestLoss: rank 1 of 3 dies after the job started — SIGKILL ("kill") or
// a non-zero exit without Finalize ("exit") — while the others wait in a
// Recv from each other, which nothing but the job's end returns. Under a
// launcher that ends the job itself after that death (mpiexec, srun
// --kill-on-bad-exit=1) the job must end non-zero; the survivors may be
// killed before they can speak, so what they report is only logged. Under
// the others (torchrun's variables, mpiexec -disable-auto-cleanup after an
// exit, srun --kill-on-bad-exit=0) every survivor must see the loss
// itself: its Recv returns an error naming rank 1 that wraps ErrPeerLost
// ("handle": the program prints it and exits 3), or, when the program
// ignores the error and lingers ("ignore"), fibermpi prints the loss and
// ends the process with status 1. In every case nothing hangs (the job is
// bounded) and no segment is left. How soon the survivors saw the loss is
// logged (the issue asks within 1 s: a figure, not a pass condition).
func TestLoss(t *testing.T) {
	for _, l := range append(launchers[:len(launchers):len(launchers)], keepGoing...) {
		for _, death := range bothDeaths {
			programs := []string{"handle", "ignore"}
			if l.endsOn(death) {
				programs = programs[:1] // the launcher kills them either way
			}
			for _, program := range programs {
				t.Run(l.label()+"/"+death+"/"+program, func(t *testing.T) {
					skipMissing(t, l)
					checkLoss(t, l, launch(t, l, 3, "loss-"+death+"-"+program), death, program)
				})
			}
		}
	}
}

func checkLoss(t *testing.T, l launcher, j *job, death, program string) {
	t.Helper()
	out := j.out.String()
	dying := j.results(`dying rank=1 how=(\S+) at=(\d+)`)
	if len(dying) != 1 || dying[0][1] != death {
		t.Fatalf("rank 1 did not reach its death (%s): %v; codes %v; output:\n%s", death, dying, j.codes, out)
	}
	if !slices.ContainsFunc(j.codes, func(c int) bool { return c != 0 }) {
		t.Errorf("every exit code is 0 (%v) after rank 1 died; output:\n%s", j.codes, out)
	}
	at, _ := strconv.ParseInt(dying[0][2], 10, 64)
	lost := j.results(`lost rank=(-?\d+) sentinel=(\S+) at=(\d+) err=(.*)`)
	for _, g := range lost {
		switch {
		case g[1] == "1" && g[2] == "ErrPeerLost":
		case l.endsOn(death) && g[2] == "ErrPeerLost":
			// The launcher is ending the job: a survivor may see
			// another rank it killed go before it has handled rank 1's
			// end (its watch reports the first gone process in rank
			// order). Only logged, as the comment of TestLoss says.
			t.Logf("a process reported the loss of rank %s, which the launcher ended: %s", g[1], g[4])
		default:
			t.Errorf("a process reported %s (rank %s, %s), want a loss of rank 1", g[4], g[1], g[2])
		}
		seen, _ := strconv.ParseInt(g[3], 10, 64)
		t.Logf("loss of rank 1 seen after %v: %s", time.Duration(seen-at).Round(10*time.Microsecond), g[4])
	}
	// What fibermpi prints when it sees the loss itself (endpoint's
	// watch), or when the job's store tells it (torchrun's variables).
	printed := regexp.MustCompile(`(?m)bootstrap: rank 1: .*the job is over$`).FindAllString(out, -1)
	switch {
	case l.endsOn(death):
		t.Logf("%s ended the job (codes %v); %d of the 2 survivors reported the loss first", l.label(), j.codes, len(lost))
	case program == "handle":
		if len(lost) != 2 {
			t.Errorf("%d of the 2 survivors reported the loss of rank 1; codes %v; output:\n%s", len(lost), j.codes, out)
		}
	default:
		if len(j.results(`recv returned .*`)) != 2 || len(printed) < 2 {
			t.Errorf("the 2 survivors' Recv returned %d times and fibermpi printed the loss %d times (want 2 each); output:\n%s",
				len(j.results(`recv returned .*`)), len(printed), out)
		}
		if l.kind == "" && (j.codes[0] != 1 || j.codes[2] != 1) {
			t.Errorf("the survivors exited with %d and %d, want 1 (ended by fibermpi); output:\n%s", j.codes[0], j.codes[2], out)
		}
	}
	if len(printed) > 0 {
		t.Logf("printed:\n%s", strings.Join(printed, "\n"))
	}
	checkNoShmLeft(t, j)
}

// TestLauncherDies: the launcher is killed (SIGKILL of mpiexec; under
// torchrun's variables, of rank 0, which serves the store) while the
// processes wait in a barrier or sleep: none of them lives on.
func TestLauncherDies(t *testing.T) {
	for _, l := range launchers {
		if l.kind == "slurm" {
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
			if l.kind == "slurm" {
				// srun exits with the highest status of its tasks: the
				// others' SIGTERM (143) when it ends the step; it names
				// rank 1's code.
				if j.codes[0] == 0 || !strings.Contains(out, "task 1: Exited with exit code 7") {
					t.Errorf("srun exited with %d, and did not name task 1's code 7; output:\n%s", j.codes[0], out)
				}
			} else if l.kind != "" {
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

// TestOpenMPIRefused: started by Open MPI's mpirun, which fibermpi cannot
// join, every process fails at once with ErrEnvironment, naming the
// launcher and its variables and saying what to do instead, rather than
// run as N jobs of one process. (Open MPI is installed with MPICH by
// make bench-mpi, not by test-launch: without it the test skips.)
func TestOpenMPIRefused(t *testing.T) {
	if m := have("mpirun.openmpi"); m != "" {
		t.Skip(m)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), jobWait)
	defer cancel()
	c := exec.CommandContext(ctx, "mpirun.openmpi", "--allow-run-as-root", "--oversubscribe", "-n", "2",
		self, "-test.run=^TestChild$", "-test.v=false")
	c.Env = append(os.Environ(), envChild+"=refused", envWant+"=none", envN+"=2", envDir+"="+t.TempDir(),
		"OMPI_MCA_rmaps_base_oversubscribe=1", "OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1")
	out, err := c.CombinedOutput()
	if err == nil {
		t.Fatalf("mpirun exited 0; output:\n%s", out)
	}
	want := []string{
		"bad launch environment: started by Open MPI's mpirun",
		`OMPI_COMM_WORLD_RANK="0"`, `OMPI_COMM_WORLD_RANK="1"`, `OMPI_COMM_WORLD_SIZE="2"`,
		"launch with fmpirun", "FIBERMPI_BOOTSTRAP=single",
	}
	for _, w := range want {
		if !strings.Contains(string(out), w) {
			t.Errorf("the output does not say %q:\n%s", w, out)
		}
	}
	if strings.Contains(string(out), "RESULT job id=") {
		t.Errorf("a process joined a job:\n%s", out)
	}
}

// buildExample builds the example program pkg (a directory of examples/)
// into a temporary directory and returns its path.
func buildExample(t *testing.T, pkg string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), pkg)
	build := exec.Command("go", "build", "-o", bin, "github.com/fibermpi/fibermpi/examples/"+pkg)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// runUnder runs n processes of bin args under l, bounded by jobWait, and
// returns their combined output. Under torchrun's variables the test
// starts the processes itself.
func runUnder(t *testing.T, l launcher, n int, bin string, args ...string) ([]byte, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), jobWait)
	defer cancel()
	if l.kind != "" {
		argv := l.command(n, bin, args...)
		c := exec.CommandContext(ctx, argv[0], argv[1:]...)
		c.Env = append(os.Environ(), l.env...)
		return c.CombinedOutput()
	}
	port := freePort(t)
	var wg sync.WaitGroup
	outs := make([][]byte, n)
	errs := make([]error, n)
	for r := range n {
		c := exec.CommandContext(ctx, bin, args...)
		c.Env = append(os.Environ(), "RANK="+strconv.Itoa(r), "WORLD_SIZE="+strconv.Itoa(n),
			"MASTER_ADDR=127.0.0.1", "MASTER_PORT="+strconv.Itoa(port-1))
		wg.Go(func() { outs[r], errs[r] = c.CombinedOutput() })
	}
	wg.Wait()
	return bytes.Join(outs, nil), errors.Join(errs...)
}

// TestHello runs examples/hello, unchanged, under each launcher.
func TestHello(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode: builds examples/hello")
	}
	bin := buildExample(t, "hello")
	for _, l := range launchers {
		t.Run(l.label(), func(t *testing.T) {
			skipMissing(t, l)
			out, err := runUnder(t, l, 3, bin)
			if err != nil || !strings.Contains(string(out), "hello from 3 processes") || !strings.Contains(string(out), "came back as 3") {
				t.Fatalf("%v; output:\n%s", err, out)
			}
		})
	}
}

// TestRedBlack runs examples/redblack, unchanged, under each launcher on
// 2 and 4 processes: the mpi and hybrid variants, one stripe per process,
// whose grids process 0 gathers and checks bit for bit against its own
// sequential run (the program prints "identical" or "DIFFERS").
func TestRedBlack(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode: builds examples/redblack")
	}
	bin := buildExample(t, "redblack")
	for _, l := range launchers {
		for _, n := range []int{2, 4} {
			t.Run(fmt.Sprintf("%s/n=%d", l.label(), n), func(t *testing.T) {
				skipMissing(t, l)
				out, err := runUnder(t, l, n, bin, "-variant", "mpi,hybrid", "-n", "33", "-iters", "6",
					"-threads", "2", "-endpoints", "2", "-workers", "2")
				if err != nil {
					t.Fatalf("%v; output:\n%s", err, out)
				}
				for _, v := range []string{"mpi", "hybrid"} {
					if c := regexp.MustCompile(`(?m)^`+v+` .*identical`).FindAll(out, -1); len(c) != 1 {
						t.Errorf("%d lines saying %s is identical to seq, want 1; output:\n%s", len(c), v, out)
					}
				}
				if strings.Contains(string(out), "DIFFERS") {
					t.Errorf("a grid differs from seq:\n%s", out)
				}
				if want := fmt.Sprintf("process 0 of %d", n); !strings.Contains(string(out), want) {
					t.Errorf("no %q in the output:\n%s", want, out)
				}
			})
		}
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
	case "abort":
		childAbort(t, b)
	case "loss-kill-handle", "loss-kill-ignore", "loss-exit-handle", "loss-exit-ignore":
		parts := strings.Split(scenario, "-")
		childLoss(t, b, parts[1], parts[2])
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

// world initializes fibermpi on b and returns the process, its world
// endpoint registered by this goroutine, and the world communicator.
func world(t *testing.T, b bootstrap.Bootstrap) (*endpoint.Process, *endpoint.Endpoint, *comm.Comm[int]) {
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
	return p, ep, c
}

func childSmoke(t *testing.T, b bootstrap.Bootstrap) {
	p, ep, c := world(t, b)
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

// childAbort: the job starts (shared memory set up), then rank 1 aborts;
// the others wait for the bootstrap's notice.
func childAbort(t *testing.T, b bootstrap.Bootstrap) {
	p, err := endpoint.Init(endpoint.ThreadSingle, endpoint.Options{Bootstrap: b})
	if err != nil {
		t.Fatalf("Init: %v", err)
	}
	_ = p
	if b.Rank() == 1 {
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
	result("aborted rank=%d sentinel=%s", peerRank(err), sentinel(err))
	os.Exit(3)
}

// peerRank is the rank a *bootstrap.PeerError in err names, or -2.
func peerRank(err error) int {
	if pe, ok := errors.AsType[*bootstrap.PeerError](err); ok {
		return pe.Rank
	}
	return -2
}

// reports counts the lines that begin with prefix in the job's result
// files.
func reports(prefix string) int {
	files, _ := filepath.Glob(filepath.Join(os.Getenv(envDir), "*"))
	n := 0
	for _, f := range files {
		b, _ := os.ReadFile(f)
		n += strings.Count("\n"+string(b), "\n"+prefix)
	}
	return n
}

// childLoss: rank 1 dies (how: "kill" or "exit") once the job runs, while
// the others wait in a Recv from each other that only the job's end
// returns. program "handle": they report the error and exit 3; "ignore":
// they linger, and fibermpi must end them.
func childLoss(t *testing.T, b bootstrap.Bootstrap, how, program string) {
	_, _, c := world(t, b)
	if err := c.Barrier(); err != nil {
		t.Fatal(err)
	}
	if c.Rank() == 1 {
		// Once the others are past the barrier, about to wait.
		for deadline := time.Now().Add(childWait); reports("RESULT receiving") < 2 && time.Now().Before(deadline); {
			time.Sleep(2 * time.Millisecond)
		}
		time.Sleep(10 * time.Millisecond)
		result("dying rank=1 how=%s at=%d", how, time.Now().UnixNano())
		if how == "kill" {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			time.Sleep(childWait)
		}
		os.Exit(5)
	}
	other := 2 - c.Rank() // 0 and 2 wait for each other
	result("receiving rank=%d", c.Rank())
	_, err := c.Recv([]int{0}, other, 9)
	at := time.Now().UnixNano()
	result("recv returned rank=%d err=%v", c.Rank(), err)
	if program == "handle" {
		result("lost rank=%d sentinel=%s at=%d err=%v", peerRank(err), sentinel(err), at, err)
		// Its exit would be a loss too: wait for the other survivor to
		// have seen rank 1's, so that each reports its own observation.
		for deadline := time.Now().Add(childWait); reports("RESULT lost rank=") < 2 && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
		}
		os.Exit(3)
	}
	time.Sleep(childWait) // fibermpi ends this process (status 1)
	os.Exit(4)
}
