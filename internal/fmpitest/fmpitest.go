// Package fmpitest runs tests in several processes under fmpirun. The test
// binary plays every part: started with FMPITEST_LAUNCHER=1 it is fmpirun
// (this package's init runs internal/launch's Main and exits, before any
// test), and the processes fmpirun starts are the test binary again,
// running one test, in which Child reports true. Nothing is built.
//
// A test that runs itself in three processes:
//
//	func TestExchange(t *testing.T) {
//		if fmpitest.Child() {
//			b, err := bootstrap.Detect() // this process's part
//			...
//			return
//		}
//		out, err := fmpitest.RunTest(t, 3, fmpitest.Options{})
//		if err != nil {
//			t.Fatalf("%v\n%s", err, out)
//		}
//	}
//
// A failing child test fails its process (exit status 1), which fails the
// job: the output names the rank and holds the child's test log.
package fmpitest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fibermpi/fibermpi/internal/launch"
)

// Environment variables of the roles.
const (
	launcherEnv = "FMPITEST_LAUNCHER" // "1": this process is fmpirun
	childEnv    = "FMPITEST_CHILD"    // "1": this process is one of the job's
)

// DefaultTimeout bounds a run whose Options give no Timeout.
const DefaultTimeout = 2 * time.Minute

func init() {
	if os.Getenv(launcherEnv) == "1" {
		os.Unsetenv(launcherEnv) // the processes it starts are children, not launchers
		os.Exit(launch.Main(os.Args[1:]))
	}
}

// Child reports whether this process was started by fmpirun for a run of
// this package: the test should play its part in the job and return.
func Child() bool { return os.Getenv(childEnv) == "1" }

// Options adjust a run; the zero value is the default.
type Options struct {
	Flags   []string      // fmpirun flags, e.g. "-prefix", "-grace=200ms"
	Env     []string      // "K=V" added to the environment of fmpirun and the processes
	Timeout time.Duration // bound on the run (fmpirun's -timeout); 0: DefaultTimeout, within the test's deadline
	// Wrap is a command fmpirun itself runs under, which must exec it
	// (e.g. "ip netns exec NAME"): fmpirun's arguments follow it.
	Wrap []string
}

// Job is a run of fmpirun under way.
type Job struct {
	Cmd  *exec.Cmd // fmpirun: the test binary as launcher
	out  output
	done chan struct{}
	err  error
}

// output is the combined output so far, and a channel closed at each write.
type output struct {
	mu      sync.Mutex
	b       []byte
	changed chan struct{}
}

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.b = append(o.b, p...)
	close(o.changed)
	o.changed = make(chan struct{})
	return len(p), nil
}

func (o *output) snapshot() (string, <-chan struct{}) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return string(o.b), o.changed
}

// Start starts fmpirun -n n with o's flags and -timeout, running command
// (the program and its arguments) in n processes. Start fails the test if
// fmpirun cannot be started; a cleanup kills it if the test did not Wait.
func Start(t testing.TB, n int, o Options, command ...string) *Job {
	t.Helper()
	if len(command) == 0 {
		t.Fatal("fmpitest.Start: no command")
	}
	timeout := runTimeout(t, o.Timeout)
	self, err := os.Executable()
	if err != nil {
		t.Fatalf("fmpitest: %v", err)
	}
	args := append([]string{"-n", strconv.Itoa(n), "-timeout", timeout.String()}, o.Flags...)
	// The launcher's own bound comes first; this one is the backstop.
	ctx, cancel := context.WithTimeout(context.Background(), timeout+15*time.Second)
	argv := append(append(slices.Clone(o.Wrap), self), append(args, command...)...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), launcherEnv+"=1", childEnv+"=1")
	if g := os.Getenv("GORACE"); !strings.Contains(g, "atexit_sleep_ms") {
		// A race-enabled process sleeps a second as it exits, by default.
		cmd.Env = append(cmd.Env, "GORACE="+strings.TrimSpace(g+" atexit_sleep_ms=0"))
	}
	cmd.Env = append(cmd.Env, o.Env...)
	j := &Job{Cmd: cmd, done: make(chan struct{})}
	j.out.changed = make(chan struct{})
	cmd.Stdout, cmd.Stderr = &j.out, &j.out
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) } // fmpirun ends the job
	cmd.WaitDelay = 10 * time.Second                                         // then SIGKILL
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("fmpitest: starting fmpirun: %v", err)
	}
	go func() {
		j.err = cmd.Wait()
		cancel()
		close(j.done)
	}()
	t.Cleanup(func() {
		select {
		case <-j.done:
		default:
			cmd.Process.Kill()
			<-j.done
		}
	})
	return j
}

// runTimeout is the run's bound: want or DefaultTimeout, cut to end well
// before the test binary's deadline.
func runTimeout(t testing.TB, want time.Duration) time.Duration {
	if want <= 0 {
		want = DefaultTimeout
	}
	if tt, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if dl, ok := tt.Deadline(); ok {
			if left := time.Until(dl) - 20*time.Second; left < want {
				want = max(left, time.Second)
			}
		}
	}
	return want
}

// Wait waits for fmpirun to exit and returns the combined output of
// fmpirun and the processes, and fmpirun's exit error (nil for status 0;
// an *exec.ExitError otherwise: ExitCode gives the code).
func (j *Job) Wait() (string, error) {
	<-j.done
	return j.Output(), j.err
}

// Output returns the output so far.
func (j *Job) Output() string {
	s, _ := j.out.snapshot()
	return s
}

// WaitFor waits until the output holds substr at least count times, and
// reports whether it did before fmpirun exited or d passed.
func (j *Job) WaitFor(substr string, count int, d time.Duration) bool {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for {
		s, changed := j.out.snapshot()
		if strings.Count(s, substr) >= count {
			return true
		}
		select {
		case <-changed:
		case <-j.done:
			s, _ := j.out.snapshot()
			return strings.Count(s, substr) >= count
		case <-deadline.C:
			return false
		}
	}
}

// Signal sends sig to fmpirun.
func (j *Job) Signal(sig os.Signal) error { return j.Cmd.Process.Signal(sig) }

// Run runs this test binary with args in n processes under fmpirun and
// returns the combined output and fmpirun's exit error.
func Run(t testing.TB, n int, args ...string) (string, error) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatalf("fmpitest: %v", err)
	}
	return Start(t, n, Options{}, append([]string{self}, args...)...).Wait()
}

// RunTest runs the calling test in n processes under fmpirun (in each,
// Child reports true) and returns the combined output and fmpirun's exit
// error.
func RunTest(t *testing.T, n int, o Options) (string, error) {
	t.Helper()
	return Start(t, n, o, TestCommand(t, o.Timeout)...).Wait()
}

// TestCommand is the command RunTest gives fmpirun: this test binary
// running only the test t (subtests included in the name), with the test
// binary's own -test.timeout set to the run's bound so that a hung process
// panics with its goroutines' stacks. Wrap it (in "sh -c", "env") to change
// what some processes see.
func TestCommand(t testing.TB, timeout time.Duration) []string {
	self, err := os.Executable()
	if err != nil {
		t.Fatalf("fmpitest: %v", err)
	}
	parts := strings.Split(t.Name(), "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	// A little under fmpirun's bound, so the stacks come before the kill.
	return []string{self, "-test.run=" + strings.Join(parts, "/"),
		fmt.Sprintf("-test.timeout=%v", runTimeout(t, timeout)*9/10)}
}
