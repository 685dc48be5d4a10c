package bootstrap_test

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/fibermpi/fibermpi/bootstrap"
	"github.com/fibermpi/fibermpi/internal/fmpitest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The processes of these tests print lines that start with "RESULT " for
// the test in the launching process to check.
func result(format string, args ...any) { fmt.Printf("RESULT "+format+"\n", args...) }

// childWait bounds every wait of a child process for something another
// process or fmpirun should do.
const childWait = 20 * time.Second

func envRank(t *testing.T) int {
	r, err := strconv.Atoi(os.Getenv(bootstrap.EnvRank))
	if err != nil {
		t.Fatalf("%s: %v", bootstrap.EnvRank, err)
	}
	return r
}

func mustDetect(t *testing.T) bootstrap.Bootstrap {
	t.Helper()
	b, err := bootstrap.Detect()
	if err != nil {
		t.Fatalf("rank %s: Detect: %v", os.Getenv(bootstrap.EnvRank), err)
	}
	return b
}

// sentinel names the bootstrap sentinel err wraps.
func sentinel(err error) string {
	for _, s := range []struct {
		name string
		err  error
	}{
		{"ErrEnvironment", bootstrap.ErrEnvironment}, {"ErrMismatch", bootstrap.ErrMismatch},
		{"ErrPeerLost", bootstrap.ErrPeerLost}, {"ErrAborted", bootstrap.ErrAborted},
		{"ErrClosed", bootstrap.ErrClosed}, {"ErrNotFound", bootstrap.ErrNotFound},
	} {
		if errors.Is(err, s.err) {
			return s.name
		}
	}
	return "none"
}

// expectFail checks that a job failed with fmpirun exit code code and that
// its output matches every pattern.
func expectFail(t *testing.T, out string, err error, code int, patterns ...string) {
	t.Helper()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != code {
		t.Errorf("fmpirun: %v, want exit code %d", err, code)
	}
	expectOutput(t, out, patterns...)
}

func expectOutput(t *testing.T, out string, patterns ...string) {
	t.Helper()
	for _, p := range patterns {
		if !regexp.MustCompile(p).MatchString(out) {
			t.Errorf("output lacks %q", p)
		}
	}
	if t.Failed() {
		t.Logf("output:\n%s", out)
	}
}

func TestExchange(t *testing.T) {
	const n = 4
	if fmpitest.Child() {
		b := mustDetect(t)
		r := b.Rank()
		if b.Name() != "fmpirun" || b.Size() != n || r != envRank(t) {
			t.Fatalf("Name %q Size %d Rank %d, want fmpirun, %d, %d", b.Name(), b.Size(), r, n, envRank(t))
		}
		put := func(key string, value []byte) {
			if err := b.Put(key, value); err != nil {
				t.Fatalf("Put(%q): %v", key, err)
			}
		}
		get := func(rank int, key string) []byte {
			v, err := b.Get(rank, key)
			if err != nil {
				t.Fatalf("rank %d: Get(%d, %q): %v", r, rank, key, err)
			}
			return v
		}
		big := func(q int) []byte { return bytes.Repeat([]byte{byte(q + 1)}, bootstrap.MaxValue) }
		put("addr", fmt.Appendf(nil, "addr-of-%d", r))
		put("big", big(r))
		put("host", []byte(b.Host()))
		put("job", []byte(b.JobID()))
		put("empty", nil)
		if got := get(r, "addr"); string(got) != fmt.Sprintf("addr-of-%d", r) {
			t.Errorf("own record before the fence: %q", got)
		}
		if _, err := b.Get((r+1)%n, "addr"); !errors.Is(err, bootstrap.ErrNotFound) {
			t.Errorf("another rank's record before any fence: %v, want ErrNotFound", err)
		}
		if _, err := b.Get(n, "addr"); !errors.Is(err, bootstrap.ErrRank) {
			t.Errorf("Get(size): %v, want ErrRank", err)
		}
		if err := b.Put("", nil); !errors.Is(err, bootstrap.ErrRecord) {
			t.Errorf("Put of an empty key: %v, want ErrRecord", err)
		}
		if err := b.Put("x", make([]byte, bootstrap.MaxValue+1)); !errors.Is(err, bootstrap.ErrRecord) {
			t.Errorf("Put of a value over MaxValue: %v, want ErrRecord", err)
		}
		if err := b.Fence(); err != nil {
			t.Fatalf("Fence: %v", err)
		}
		for q := range n {
			if got := get(q, "addr"); string(got) != fmt.Sprintf("addr-of-%d", q) {
				t.Errorf("rank %d's addr: %q", q, got)
			}
			if got := get(q, "big"); !bytes.Equal(got, big(q)) {
				t.Errorf("rank %d's big value: %d bytes, wrong content", q, len(got))
			}
			if got := get(q, "host"); string(got) != b.Host() {
				t.Errorf("rank %d is on host %q, this one on %q", q, got, b.Host())
			}
			if got := get(q, "job"); string(got) != b.JobID() {
				t.Errorf("rank %d is in job %q, this one in %q", q, got, b.JobID())
			}
			if got := get(q, "empty"); len(got) != 0 {
				t.Errorf("rank %d's empty record: %q", q, got)
			}
			if _, err := b.Get(q, "missing"); !errors.Is(err, bootstrap.ErrNotFound) {
				t.Errorf("Get(%d, missing): %v, want ErrNotFound", q, err)
			}
		}
		got := get(r, "addr")
		got[0] = 'X' // a copy: the record must not change
		if again := get(r, "addr"); again[0] != 'a' {
			t.Errorf("Get returned the stored slice, not a copy")
		}
		// Round two: the even ranks replace a record.
		if r%2 == 0 {
			put("addr", fmt.Appendf(nil, "second-%d", r))
		}
		if err := b.Fence(); err != nil {
			t.Fatalf("second Fence: %v", err)
		}
		for q := range n {
			want := fmt.Sprintf("addr-of-%d", q)
			if q%2 == 0 {
				want = fmt.Sprintf("second-%d", q)
			}
			if got := get(q, "addr"); string(got) != want {
				t.Errorf("after round two, rank %d's addr is %q, want %q", q, got, want)
			}
		}
		if err := b.Barrier(); err != nil {
			t.Fatalf("Barrier: %v", err)
		}
		select {
		case err := <-b.Failed():
			t.Errorf("Failed fired in a job that went well: %v", err)
		default:
		}
		if err := b.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		if err := b.Fence(); !errors.Is(err, bootstrap.ErrClosed) {
			t.Errorf("Fence after Close: %v, want ErrClosed", err)
		}
		if _, err := b.Get(0, "addr"); !errors.Is(err, bootstrap.ErrClosed) {
			t.Errorf("Get after Close: %v, want ErrClosed", err)
		}
		if err := b.Close(); !errors.Is(err, bootstrap.ErrClosed) {
			t.Errorf("second Close: %v, want ErrClosed", err)
		}
		return
	}
	for _, flags := range [][]string{nil, {"-prefix"}} {
		out, err := fmpitest.RunTest(t, n, fmpitest.Options{Flags: flags})
		if err != nil {
			t.Fatalf("fmpirun %v: %v\n%s", flags, err, out)
		}
	}
}

// TestBarrier: no process leaves a barrier before every process has
// reached it (each leaves a file before it enters and looks for everyone's
// after), three times over.
func TestBarrier(t *testing.T) {
	const n = 3
	if fmpitest.Child() {
		b := mustDetect(t)
		dir := os.Getenv("FMPITEST_DIR")
		for round := range 3 {
			// Arrive at different times.
			time.Sleep(time.Duration((b.Rank()+round)%n) * 20 * time.Millisecond)
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("r%d-%d", round, b.Rank())), nil, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := b.Barrier(); err != nil {
				t.Fatalf("Barrier %d: %v", round, err)
			}
			got, _ := filepath.Glob(filepath.Join(dir, fmt.Sprintf("r%d-*", round)))
			if len(got) != n {
				t.Errorf("rank %d left barrier %d when %d of %d processes had arrived", b.Rank(), round, len(got), n)
			}
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		return
	}
	out, err := fmpitest.RunTest(t, n, fmpitest.Options{Env: []string{"FMPITEST_DIR=" + t.TempDir()}})
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
}

// badEnvChild is the part of the processes in TestBadEnvironment: join,
// fence, and say how it went.
func badEnvChild() {
	r := os.Getenv(bootstrap.EnvRank)
	b, err := bootstrap.Detect()
	if err != nil {
		result("rank=%s detect=%s: %v", r, sentinel(err), err)
		os.Exit(3)
	}
	if err := b.Fence(); err != nil {
		result("rank=%s fence=%s: %v", r, sentinel(err), err)
		os.Exit(3)
	}
	b.Close()
	result("rank=%s ok", r)
}

// TestBadEnvironment: a process whose environment is partial or disagrees
// with the others' fails with ErrEnvironment or ErrMismatch naming what is
// wrong, and the job fails; nobody runs on as a job of its own.
func TestBadEnvironment(t *testing.T) {
	if fmpitest.Child() {
		badEnvChild()
		return
	}
	// Rank 1 runs with its environment changed by env(1).
	onRank1 := func(t *testing.T, envArgs ...string) []string {
		script := `if [ "$FIBERMPI_RANK" = 1 ]; then exec env ` + strings.Join(envArgs, " ") + ` "$0" "$@"; fi; exec "$0" "$@"`
		return append([]string{"/bin/sh", "-c", script}, fmpitest.TestCommand(t, 0)...)
	}
	run := func(t *testing.T, command []string, env ...string) (string, error) {
		return fmpitest.Start(t, 2, fmpitest.Options{Flags: []string{"-grace=5s"}, Env: env}, command...).Wait()
	}
	t.Run("partial", func(t *testing.T) {
		out, err := run(t, onRank1(t, "-u", bootstrap.EnvJobID))
		expectFail(t, out, err, 3,
			`RESULT rank=1 detect=ErrEnvironment: .*FIBERMPI_JOBID not set`,
			`RESULT rank=0 detect=ErrPeerLost: bootstrap: rank 1: exit status 3`,
			`(?m)^fmpirun: rank 1: exit status 3$`)
	})
	t.Run("rank beyond size", func(t *testing.T) {
		out, err := run(t, onRank1(t, bootstrap.EnvRank+"=5"))
		expectFail(t, out, err, 3,
			`RESULT rank=5 detect=ErrEnvironment: .*FIBERMPI_RANK="5" is not a rank below FIBERMPI_SIZE=2`,
			`(?m)^fmpirun: rank 1: exit status 3$`)
	})
	t.Run("size", func(t *testing.T) {
		out, err := run(t, onRank1(t, bootstrap.EnvSize+"=3"))
		expectFail(t, out, err, 1,
			`RESULT rank=1 detect=ErrMismatch: .*FIBERMPI_SIZE=3 but fmpirun started 2 processes`,
			`RESULT rank=0 detect=ErrPeerLost: bootstrap: rank 1: refused at the join`,
			`(?m)^fmpirun: rank 1: refused at the join: pid \d+ has FIBERMPI_SIZE=3 but fmpirun started 2 processes$`)
	})
	t.Run("job", func(t *testing.T) {
		out, err := run(t, onRank1(t, bootstrap.EnvJobID+"=00000000deadbeef"))
		expectFail(t, out, err, 1,
			`RESULT rank=1 detect=ErrMismatch: .*FIBERMPI_JOBID=00000000deadbeef but this fmpirun runs job [0-9a-f]{16}`,
			`(?m)^fmpirun: rank 1: refused at the join: `)
	})
	t.Run("rank twice", func(t *testing.T) {
		// Rank 1 runs as rank 0: two processes claim rank 0.
		out, err := run(t, onRank1(t, bootstrap.EnvRank+"=0"))
		want := `pid \d+ was started as rank 1 but claims rank 0`
		expectFail(t, out, err, 1,
			`RESULT rank=0 detect=ErrMismatch: .*`+want,
			`RESULT rank=0 detect=ErrPeerLost: bootstrap: rank 1: refused at the join: `+want,
			`(?m)^fmpirun: rank 1: refused at the join: `+want+`$`)
	})
	t.Run("binary", func(t *testing.T) {
		copyPath := filepath.Join(t.TempDir(), "other.test")
		writeRebuilt(t, copyPath)
		script := `if [ "$FIBERMPI_RANK" = 1 ]; then exec "$FMPITEST_COPY" "$@"; fi; exec "$0" "$@"`
		cmd := append([]string{"/bin/sh", "-c", script}, fmpitest.TestCommand(t, 0)...)
		out, err := run(t, cmd, "FMPITEST_COPY="+copyPath)
		want := `rank 1 \(pid \d+, ` + regexp.QuoteMeta(copyPath) + `\) runs a different binary from rank 0 \(pid \d+, .*\): go build ID `
		expectFail(t, out, err, 1,
			`RESULT rank=0 detect=ErrMismatch: .*`+want,
			`RESULT rank=1 detect=ErrMismatch: .*`+want,
			`(?m)^fmpirun: rank 1: refused at the join: `+want)
	})
	t.Run("same binary copied", func(t *testing.T) {
		// A copy of the binary is the same program: the build IDs agree.
		copyPath := filepath.Join(t.TempDir(), "copy.test")
		self, _ := os.Executable()
		data, err := os.ReadFile(self)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(copyPath, data, 0o755); err != nil {
			t.Fatal(err)
		}
		script := `if [ "$FIBERMPI_RANK" = 1 ]; then exec "$FMPITEST_COPY" "$@"; fi; exec "$0" "$@"`
		cmd := append([]string{"/bin/sh", "-c", script}, fmpitest.TestCommand(t, 0)...)
		out, err := run(t, cmd, "FMPITEST_COPY="+copyPath)
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		expectOutput(t, out, `RESULT rank=0 ok`, `RESULT rank=1 ok`)
	})
}

// TestKilledPeer: a process killed with SIGKILL makes the others' Failed
// fire with an error naming it and the signal, and fmpirun exits 128+9
// with one message saying so.
func TestKilledPeer(t *testing.T) {
	if fmpitest.Child() {
		b := mustDetect(t)
		if err := b.Fence(); err != nil {
			t.Fatal(err)
		}
		if b.Rank() == 1 {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			time.Sleep(childWait)
			t.Fatal("still alive after SIGKILL")
		}
		start := time.Now()
		select {
		case err := <-b.Failed():
			var pe *bootstrap.PeerError
			errors.As(err, &pe)
			result("rank=%d failed after %v: %s rank=%d: %v", b.Rank(), time.Since(start).Round(time.Microsecond), sentinel(err), pe.Rank, err)
			if ferr := b.Barrier(); ferr == nil || ferr.Error() != err.Error() {
				result("rank=%d barrier after the failure: %v", b.Rank(), ferr)
			}
			os.Exit(3) // as fibermpi's runtime ends the process
		case <-time.After(childWait):
			t.Fatalf("Failed did not fire within %v", childWait)
		}
		return
	}
	out, err := fmpitest.RunTest(t, 3, fmpitest.Options{})
	want := `bootstrap: rank 1: killed by signal 9 \(SIGKILL\)`
	expectFail(t, out, err, 128+9,
		`RESULT rank=0 failed after \S+: ErrPeerLost rank=1: `+want,
		`RESULT rank=2 failed after \S+: ErrPeerLost rank=1: `+want,
		`(?m)^fmpirun: rank 1: killed by signal 9 \(SIGKILL\)$`)
	if strings.Contains(out, "barrier after the failure") {
		t.Errorf("a blocking call after Failed did not return Failed's error:\n%s", out)
	}
	if c := strings.Count(out, "fmpirun: "); c != 1 {
		t.Errorf("fmpirun printed %d messages, want 1:\n%s", c, out)
	}
	for _, m := range regexp.MustCompile(`rank=\d failed after [^:]+`).FindAllString(out, -1) {
		t.Log(m) // the notice's latency, from the fence to Failed
	}
}

// TestAbort: Abort's code becomes fmpirun's exit code, the reason is
// printed once, and the others' Failed fires with ErrAborted.
func TestAbort(t *testing.T) {
	if fmpitest.Child() {
		b := mustDetect(t)
		if err := b.Fence(); err != nil {
			t.Fatal(err)
		}
		if b.Rank() == 2 {
			if err := b.Abort(7, "bad input"); err != nil {
				t.Fatalf("Abort: %v", err)
			}
			if err := b.Barrier(); !errors.Is(err, bootstrap.ErrAborted) {
				result("rank=2 barrier after its own abort: %v", err)
			}
			os.Exit(7)
		}
		select {
		case err := <-b.Failed():
			result("rank=%d saw %s: %v", b.Rank(), sentinel(err), err)
			os.Exit(3)
		case <-time.After(childWait):
			t.Fatalf("Failed did not fire within %v", childWait)
		}
		return
	}
	out, err := fmpitest.RunTest(t, 3, fmpitest.Options{})
	want := `bootstrap: rank 2: aborted the job with code 7: bad input`
	expectFail(t, out, err, 7,
		`RESULT rank=0 saw ErrAborted: `+want,
		`RESULT rank=1 saw ErrAborted: `+want,
		`(?m)^fmpirun: rank 2: aborted the job with code 7: bad input$`)
	if c := strings.Count(out, "fmpirun: "); c != 1 {
		t.Errorf("fmpirun printed %d messages, want 1:\n%s", c, out)
	}
	if strings.Contains(out, "barrier after its own abort") {
		t.Errorf("a blocking call after Abort did not return ErrAborted:\n%s", out)
	}
}

// TestEarlyExit: a process that finalizes and exits with status 0 while
// another still runs is not a failure: the job succeeds, its records stay
// readable, and only a collective that needs it fails, naming it.
func TestEarlyExit(t *testing.T) {
	if fmpitest.Child() {
		b := mustDetect(t)
		if err := b.Put("k", []byte("v1")); err != nil {
			t.Fatal(err)
		}
		if err := b.Fence(); err != nil {
			t.Fatal(err)
		}
		if b.Rank() == 1 {
			if os.Getenv("FMPITEST_CLOSE") == "1" {
				if err := b.Close(); err != nil {
					t.Fatal(err)
				}
				return // exit status 0
			}
			syscall.Exit(0) // without Close (and so without the leak check, which would see the open connection)
		}
		err := b.Barrier()
		var pe *bootstrap.PeerError
		if !errors.As(err, &pe) || pe.Rank != 1 || !errors.Is(err, bootstrap.ErrPeerLost) {
			t.Fatalf("Barrier without rank 1: %v, want a PeerError for rank 1 wrapping ErrPeerLost", err)
		}
		result("rank=0 barrier: %v", err)
		if v, err := b.Get(1, "k"); err != nil || string(v) != "v1" {
			t.Errorf("Get(1, k) after rank 1 left: %q, %v", v, err)
		}
		if err := b.Fence(); !errors.Is(err, bootstrap.ErrPeerLost) {
			t.Errorf("a second collective without rank 1: %v, want ErrPeerLost", err)
		}
		select {
		case err := <-b.Failed():
			t.Errorf("Failed fired because a process exited with status 0: %v", err)
		default:
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		return
	}
	for _, closeFirst := range []string{"1", "0"} {
		out, err := fmpitest.RunTest(t, 2, fmpitest.Options{Env: []string{"FMPITEST_CLOSE=" + closeFirst}})
		if err != nil {
			t.Fatalf("close=%s: %v\n%s", closeFirst, err, out)
		}
		expectOutput(t, out, `RESULT rank=0 barrier: bootstrap: rank 1: (finalized \(called Close\)|exit status 0|finalized \(called Close\) and exit status 0)`)
	}
}

// TestSignals: fmpirun forwards SIGINT and SIGTERM to every process.
func TestSignals(t *testing.T) {
	if fmpitest.Child() {
		handle := os.Getenv("FMPITEST_HANDLE") == "1"
		sigs := make(chan os.Signal, 1)
		if handle {
			signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
			defer signal.Stop(sigs)
		}
		b := mustDetect(t)
		if err := b.Fence(); err != nil {
			t.Fatal(err)
		}
		result("rank=%d ready", b.Rank())
		select {
		case s := <-sigs:
			result("rank=%d got %v", b.Rank(), s)
		case err := <-b.Failed():
			result("rank=%d failed: %v", b.Rank(), err)
			os.Exit(3)
		case <-time.After(childWait):
			t.Fatal("no signal came")
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Run("handled", func(t *testing.T) {
		j := fmpitest.Start(t, 2, fmpitest.Options{Env: []string{"FMPITEST_HANDLE=1"}}, fmpitest.TestCommand(t, 0)...)
		if !j.WaitFor("ready", 2, time.Minute) {
			t.Fatalf("the processes did not get ready:\n%s", j.Output())
		}
		j.Signal(syscall.SIGINT)
		out, err := j.Wait()
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		expectOutput(t, out, `RESULT rank=0 got interrupt`, `RESULT rank=1 got interrupt`)
	})
	t.Run("default", func(t *testing.T) {
		j := fmpitest.Start(t, 2, fmpitest.Options{}, fmpitest.TestCommand(t, 0)...)
		if !j.WaitFor("ready", 2, time.Minute) {
			t.Fatalf("the processes did not get ready:\n%s", j.Output())
		}
		j.Signal(syscall.SIGTERM)
		out, err := j.Wait()
		expectFail(t, out, err, 128+15, `(?m)^fmpirun: rank [01]: killed by signal 15 \(SIGTERM\)$`)
	})
}

// TestLauncherDies: when fmpirun is killed, the processes' Failed fires.
func TestLauncherDies(t *testing.T) {
	if fmpitest.Child() {
		b := mustDetect(t)
		if err := b.Fence(); err != nil {
			t.Fatal(err)
		}
		result("rank=%d ready boot=%s", b.Rank(), os.Getenv(bootstrap.EnvBoot))
		select {
		case err := <-b.Failed():
			var pe *bootstrap.PeerError
			errors.As(err, &pe)
			result("rank=%d saw %s rank=%d: %v", b.Rank(), sentinel(err), pe.Rank, err)
			os.Exit(3)
		case <-time.After(childWait):
			t.Fatal("Failed did not fire")
		}
		return
	}
	j := fmpitest.Start(t, 2, fmpitest.Options{}, fmpitest.TestCommand(t, 0)...)
	ready := j.WaitFor("ready", 2, time.Minute)
	// fmpirun cannot remove its socket directory when it is killed.
	if m := regexp.MustCompile(`boot=(\S+)`).FindStringSubmatch(j.Output()); m != nil {
		t.Cleanup(func() { os.RemoveAll(filepath.Dir(m[1])) })
	}
	if !ready {
		t.Fatalf("the processes did not get ready:\n%s", j.Output())
	}
	j.Signal(syscall.SIGKILL)
	out, err := j.Wait()
	want := `bootstrap: launcher: connection to fmpirun closed while the job ran`
	expectFail(t, out, err, -1,
		`RESULT rank=0 saw ErrPeerLost rank=-1: `+want,
		`RESULT rank=1 saw ErrPeerLost rank=-1: `+want)
}

// TestShmRemoved: the job's /dev/shm/fibermpi-<jobid>* files are removed
// when it ends, whether it failed or not, and nobody else's.
func TestShmRemoved(t *testing.T) {
	if fmpitest.Child() {
		b := mustDetect(t)
		name := fmt.Sprintf("/dev/shm/fibermpi-%s-%d", b.JobID(), b.Rank())
		if err := os.WriteFile(name, []byte("segment"), 0o600); err != nil {
			t.Fatal(err)
		}
		result("rank=%d made %s", b.Rank(), name)
		if err := b.Fence(); err != nil {
			t.Fatal(err)
		}
		if os.Getenv("FMPITEST_FAIL") == "1" && b.Rank() == 1 {
			os.Exit(5)
		}
		b.Close()
		return
	}
	if st, err := os.Stat("/dev/shm"); err != nil || !st.IsDir() {
		t.Skip("no /dev/shm here")
	}
	// Another job's file, which must stay.
	other := "/dev/shm/fibermpi-" + strings.Repeat("0", 16) + "-other"
	if err := os.WriteFile(other, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(other) })
	for _, fail := range []string{"0", "1"} {
		out, err := fmpitest.RunTest(t, 2, fmpitest.Options{Env: []string{"FMPITEST_FAIL=" + fail}})
		made := regexp.MustCompile(`made (\S+)`).FindAllStringSubmatch(out, -1)
		for _, m := range made {
			t.Cleanup(func() { os.Remove(m[1]) })
			if _, serr := os.Stat(m[1]); serr == nil {
				t.Errorf("fail=%s: %s is still there after the job", fail, m[1])
			}
		}
		if len(made) != 2 {
			t.Errorf("fail=%s: %d files made, want 2:\n%s", fail, len(made), out)
		}
		if (err != nil) != (fail == "1") {
			t.Errorf("fail=%s: fmpirun: %v\n%s", fail, err, out)
		}
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("another job's file went: %v", err)
	}
}

// writeRebuilt writes at path a copy of this test binary whose Go build ID
// differs in one character, as a rebuilt binary's would: another program,
// as far as the join can tell, that still runs these tests.
func writeRebuilt(t *testing.T, path string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := f.Section(".note.go.buildid")
	if s == nil {
		t.Skip("this test binary has no Go build ID note")
	}
	note, err := s.Data()
	if err != nil {
		t.Fatal(err)
	}
	off, id, err := bootstrap.ParseGoNote(note, f.ByteOrder)
	if err != nil {
		t.Fatal(err)
	}
	i := int(s.Offset) + off + len(id) - 1
	if data[i] == 'x' {
		data[i] = 'y'
	} else {
		data[i] = 'x'
	}
	if err := os.WriteFile(path, data, 0o755); err != nil {
		t.Fatal(err)
	}
	orig, _ := bootstrap.GoBuildID(self)
	changed, err := bootstrap.GoBuildID(path)
	if err != nil || changed == orig {
		t.Fatalf("the copy's build ID %q (%v) is the original's %q", changed, err, orig)
	}
}
