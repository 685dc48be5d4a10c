package launch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/fibermpi/fibermpi/internal/bootwire"
	"github.com/fibermpi/fibermpi/internal/testenv"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// buffer is an output destination the test can read while the job runs.
type buffer struct{ testenv.Buffer }

// waitFor polls until b holds s count times, for at most 30 s.
func (b *buffer) waitFor(t *testing.T, s string, count int) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); strings.Count(b.String(), s) < count; {
		if time.Now().After(deadline) {
			t.Fatalf("output never held %q %d times:\n%s", s, count, b.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// run runs a job of n processes of the shell script, with a bound.
func run(t *testing.T, n int, script string, adjust func(*Config)) (string, error) {
	t.Helper()
	var out buffer
	cfg := Config{N: n, Program: "/bin/sh", Args: []string{"-c", script}, Stdout: &out, Stderr: &out,
		Grace: 100 * time.Millisecond, Timeout: time.Minute}
	if adjust != nil {
		adjust(&cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err := Run(ctx, cfg)
	return out.String(), err
}

func TestStatuses(t *testing.T) {
	for _, tc := range []struct {
		name, script string
		want         *Failure
	}{
		{"all well", `exit 0`, nil},
		{"exit status", `[ "$FIBERMPI_RANK" = 1 ] && exit 3; exit 0`, &Failure{1, "exit status 3", 3}},
		{"killed", `[ "$FIBERMPI_RANK" = 2 ] && kill -9 $$; exit 0`, &Failure{2, "killed by signal 9 (SIGKILL)", 137}},
		// The others sleep: they never connect, and are killed after the grace period.
		{"others killed", `[ "$FIBERMPI_RANK" = 0 ] && exit 4; exec sleep 60`, &Failure{0, "exit status 4", 4}},
		{"first failure wins", `[ "$FIBERMPI_RANK" = 1 ] && exit 5; sleep 0.5; exit 6`, &Failure{1, "exit status 5", 5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := run(t, 3, tc.script, nil)
			var got *Failure
			if err != nil && !errors.As(err, &got) {
				t.Fatalf("Run: %v, want a *Failure", err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("Run (-want +got):\n%s\noutput:\n%s", d, out)
			}
			if ExitCode(err) != exitCodeOf(tc.want) {
				t.Errorf("ExitCode = %d", ExitCode(err))
			}
		})
	}
}

func exitCodeOf(f *Failure) int {
	if f == nil {
		return 0
	}
	return f.Code
}

func TestOutput(t *testing.T) {
	long := strings.Repeat("x", 40<<10) // longer than a pump's buffer
	script := `echo "out $FIBERMPI_RANK"; echo "err $FIBERMPI_RANK" >&2; printf 'partial'; printf '%s\n' "$LONG"`
	var stdout, stderr buffer
	_, err := run(t, 2, script, func(c *Config) {
		c.Prefix, c.Stdout, c.Stderr = true, &stdout, &stderr
		c.Env = append(os.Environ(), "LONG="+long)
	})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n")
	slices.Sort(lines)
	want := []string{"[0] out 0", "[0] partial" + long, "[1] out 1", "[1] partial" + long}
	if !cmp.Equal(lines, want) {
		t.Errorf("stdout lines (%d):\n%.200q\nwant\n%.200q", len(lines), lines, want)
	}
	errLines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
	slices.Sort(errLines)
	if want := []string{"[0] err 0", "[1] err 1"}; !cmp.Equal(errLines, want) {
		t.Errorf("stderr: %q, want %q", errLines, want)
	}
	// A last line without a newline gets one, without -prefix too.
	out, err := run(t, 1, `printf 'no newline'`, nil)
	if err != nil || out != "no newline\n" {
		t.Errorf("output %q, %v", out, err)
	}
}

func TestStdin(t *testing.T) {
	in := filepath.Join(t.TempDir(), "in")
	os.WriteFile(in, []byte("data for rank 0\n"), 0o600)
	f, err := os.Open(in)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out, err := run(t, 2, `read line; echo "$FIBERMPI_RANK read [$line]"`, func(c *Config) { c.Stdin = f })
	if err == nil {
		// rank 1 reads /dev/null: read fails, exit 1... unless it does not.
		t.Logf("output:\n%s", out)
	}
	if !strings.Contains(out, "0 read [data for rank 0]") || strings.Contains(out, "1 read [data") {
		t.Errorf("stdin went elsewhere than rank 0:\n%s", out)
	}
}

func TestEnvironment(t *testing.T) {
	base := append(os.Environ(), "FIBERMPI_BOOTSTRAP=single", "FIBERMPI_RANK=7", "KEEP=yes")
	var log buffer
	out, err := run(t, 2, `echo "rank=$FIBERMPI_RANK size=$FIBERMPI_SIZE job=$FIBERMPI_JOBID boot=$FIBERMPI_BOOT forced=${FIBERMPI_BOOTSTRAP-unset} keep=$KEEP"`,
		func(c *Config) { c.Env, c.Log = base, &log })
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"fmpirun: job ", "fmpirun: rank 0: pid ", "fmpirun: rank 1: exit status 0"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("the log lacks %q:\n%s", want, log.String())
		}
	}
	var job, boot string
	for r := range 2 {
		var line string
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, fmt.Sprintf("rank=%d ", r)) {
				line = l
			}
		}
		var gotJob, gotBoot, forced, keep string
		var size int
		if _, err := fmt.Sscanf(line, "rank=%d size=%d job=%s boot=%s forced=%s keep=%s", new(int), &size, &gotJob, &gotBoot, &forced, &keep); err != nil {
			t.Fatalf("rank %d's line %q: %v", r, line, err)
		}
		if size != 2 || len(gotJob) != 16 || !filepath.IsAbs(gotBoot) || forced != "unset" || keep != "yes" {
			t.Errorf("rank %d's environment: %q", r, line)
		}
		if r > 0 && (gotJob != job || gotBoot != boot) {
			t.Errorf("ranks disagree on the job: %q vs %q, %q vs %q", gotJob, job, gotBoot, boot)
		}
		job, boot = gotJob, gotBoot
	}
	if _, err := os.Stat(filepath.Dir(boot)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the socket's directory %s is still there: %v", filepath.Dir(boot), err)
	}
}

func TestTimeoutAndCancel(t *testing.T) {
	_, err := run(t, 2, `exec sleep 60`, func(c *Config) { c.Timeout = 100 * time.Millisecond })
	if want := (&Failure{-1, "the job timed out after 100ms", CodeTimeout}); !cmp.Equal(err, error(want)) {
		t.Errorf("timeout: %v, want %v", err, want)
	}
	var out buffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Config{N: 2, Program: "/bin/sh", Args: []string{"-c", "echo up; exec sleep 60"},
			Stdout: &out, Stderr: &out, Grace: 100 * time.Millisecond})
	}()
	out.waitFor(t, "up", 2)
	cancel()
	select {
	case err := <-done:
		if ExitCode(err) != CodeCancelled || !strings.Contains(err.Error(), "cancelled") {
			t.Errorf("cancel: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Run did not return after its context was cancelled")
	}
}

func TestSignalsForwarded(t *testing.T) {
	var out buffer
	sigs := make(chan os.Signal, 1)
	done := make(chan error, 1)
	script := `trap 'echo "got $FIBERMPI_RANK"; exit 0' TERM; echo ready; while :; do sleep 0.02; done`
	go func() {
		done <- Run(context.Background(), Config{N: 2, Program: "/bin/sh", Args: []string{"-c", script},
			Stdout: &out, Stderr: &out, Signals: sigs, Timeout: time.Minute})
	}()
	out.waitFor(t, "ready", 2)
	sigs <- syscall.SIGTERM
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run: %v\n%s", err, out.String())
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("Run did not return")
	}
	if !strings.Contains(out.String(), "got 0") || !strings.Contains(out.String(), "got 1") {
		t.Errorf("the signal did not reach both:\n%s", out.String())
	}
}

func TestShmRemoved(t *testing.T) {
	shm := t.TempDir()
	other := filepath.Join(shm, "fibermpi-0000000000000000-x")
	unrelated := filepath.Join(shm, "other")
	os.WriteFile(other, nil, 0o600)
	os.WriteFile(unrelated, nil, 0o600)
	script := `touch "$SHM/fibermpi-$FIBERMPI_JOBID-$FIBERMPI_RANK" "$SHM/fibermpi-$FIBERMPI_JOBID"; [ "$FIBERMPI_RANK" = 1 ] && exit 2; exit 0`
	for _, fail := range []bool{false, true} {
		s := script
		if !fail {
			s = strings.Replace(s, "exit 2", "exit 0", 1)
		}
		_, err := run(t, 2, s, func(c *Config) { c.ShmDir = shm; c.Env = append(os.Environ(), "SHM="+shm) })
		if (err != nil) != fail {
			t.Errorf("fail=%v: %v", fail, err)
		}
		left, _ := filepath.Glob(filepath.Join(shm, "*"))
		if want := []string{other, unrelated}; !cmp.Equal(left, want) {
			t.Errorf("fail=%v: %q left, want %q", fail, left, want)
		}
	}
}

func TestBadConfig(t *testing.T) {
	for _, c := range []Config{{N: 0, Program: "x"}, {N: 1}, {N: 1, Program: "x", Timeout: -1}, {N: 1 << 20, Program: "x"}} {
		if err := Run(context.Background(), c); err == nil || ExitCode(err) != 1 {
			t.Errorf("Run(%+v) = %v", c, err)
		}
	}
	err := Run(context.Background(), Config{N: 1, Program: "no-such-program-here"})
	if ExitCode(err) != CodeNotFound || !strings.Contains(err.Error(), "no-such-program-here") {
		t.Errorf("a missing program: %v", err)
	}
}

// TestStrangers speaks the protocol to a running job: bad connections are
// refused without harm, a proper join and an Abort end the job.
func TestStrangers(t *testing.T) {
	var out buffer
	done := make(chan error, 1)
	go func() {
		done <- Run(context.Background(), Config{N: 1, Program: "/bin/sh",
			Args:   []string{"-c", `echo "boot=$FIBERMPI_BOOT job=$FIBERMPI_JOBID pid=$$ ."; exec sleep 60`},
			Stdout: &out, Stderr: &out, Grace: 100 * time.Millisecond, Timeout: time.Minute})
	}()
	out.waitFor(t, " .", 1)
	var sock, job string
	var pid int
	if _, err := fmt.Sscanf(out.String(), "boot=%s job=%s pid=%d .", &sock, &job, &pid); err != nil {
		t.Fatalf("%q: %v", out.String(), err)
	}
	dial := func() (net.Conn, *bootwire.Reader) {
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(30 * time.Second))
		return c, bootwire.NewReader(c)
	}
	// Garbage: the connection is dropped.
	c, r := dial()
	c.Write([]byte{0, 0, 0, 2, 0xee, 0xee})
	if m, err := r.Read(); err == nil {
		t.Errorf("garbage answered with %v", m.Type)
	}
	c.Close()
	// A first frame that is not Hello: refused.
	c, r = dial()
	c.Write(bootwire.Append(nil, &bootwire.Msg{Type: bootwire.Fence}))
	if m, err := r.Read(); err != nil || m.Type != bootwire.Error || m.Kind != bootwire.KindProtocol {
		t.Errorf("Fence first: %v %v %v", m.Type, m.Kind, err)
	}
	c.Close()
	// A rank out of range: refused; nobody to blame, the job goes on.
	c, r = dial()
	c.Write(bootwire.Append(nil, &bootwire.Msg{Type: bootwire.Hello, Version: bootwire.Version, Rank: 5, Size: 1, JobID: job}))
	if m, err := r.Read(); err != nil || m.Type != bootwire.Error || m.Kind != bootwire.KindEnvironment {
		t.Errorf("rank 5: %v %v %v", m.Type, m.Kind, err)
	}
	c.Close()
	// The process's own join, made for it: accepted, then an Abort.
	c, r = dial()
	defer c.Close()
	c.Write(bootwire.Append(nil, &bootwire.Msg{Type: bootwire.Hello, Version: bootwire.Version, Rank: 0, Size: 1, PID: int32(pid), JobID: job, Identity: "x"}))
	if m, err := r.Read(); err != nil || m.Type != bootwire.OK {
		t.Fatalf("join: %v %v", m.Type, err)
	}
	c.Write(bootwire.Append(nil, &bootwire.Msg{Type: bootwire.Abort, Code: 4, Text: "enough"}))
	select {
	case err := <-done:
		if want := (&Failure{0, "aborted the job with code 4: enough", 4}); !cmp.Equal(err, error(want)) {
			t.Errorf("Run: %v, want %v", err, want)
		}
	case <-time.After(time.Minute):
		t.Fatal("the Abort did not end the job")
	}
}
