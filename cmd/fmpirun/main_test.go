package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"
)

// The binaries under test, built once per test binary into binDir.
var (
	binDir   string
	build    sync.Once
	buildErr error
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "fmpirun-test-")
	if err != nil {
		panic(err)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// binaries builds fmpirun and the start-up benchmark's program and returns
// their paths.
func binaries(tb testing.TB) (fmpirun, startup string) {
	tb.Helper()
	gotool, err := exec.LookPath("go")
	if err != nil {
		tb.Skip("no go command to build fmpirun with")
	}
	build.Do(func() {
		for pkg, out := range map[string]string{".": "fmpirun", "./testdata/startup": "startup"} {
			cmd := exec.Command(gotool, "build", "-o", filepath.Join(binDir, out), pkg)
			if b, err := cmd.CombinedOutput(); err != nil {
				buildErr = errors.New(string(b))
				return
			}
		}
	})
	if buildErr != nil {
		tb.Fatalf("go build: %v", buildErr)
	}
	return filepath.Join(binDir, "fmpirun"), filepath.Join(binDir, "startup")
}

// fmpirun runs the built fmpirun with args and returns its combined output
// and exit code.
func fmpirun(t *testing.T, args ...string) (string, int) {
	t.Helper()
	bin, _ := binaries(t)
	cmd := exec.Command(bin, args...)
	cmd.WaitDelay = 10 * time.Second
	timer := time.AfterFunc(time.Minute, func() { cmd.Process.Kill() })
	defer timer.Stop()
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("fmpirun %q: %v", args, err)
	}
	return string(out), cmd.ProcessState.ExitCode()
}

func TestCommand(t *testing.T) {
	_, startup := binaries(t)
	for _, tc := range []struct {
		args []string
		code int
		out  string // a pattern the output must match
	}{
		{[]string{"-version"}, 0, `^fmpirun github.com/fibermpi/fibermpi \S+.* go1\.`},
		{nil, 2, `need -n N`},
		{[]string{"-n", "0", "true"}, 2, `usage: fmpirun -n N`},
		{[]string{"-n", "2"}, 2, `need -n N`},
		{[]string{"-bogus"}, 2, `flag provided but not defined: -bogus`},
		{[]string{"-n", "2", startup}, 0, `^$`},
		{[]string{"-n", "3", "sh", "-c", `[ "$FIBERMPI_RANK" = 2 ] && exit 3; exit 0`}, 3, `(?m)\Afmpirun: rank 2: exit status 3\n\z`},
		{[]string{"-n", "2", "-prefix", "sh", "-c", `echo "hi"`}, 0, `(?s)\A(\[0\] hi\n\[1\] hi\n|\[1\] hi\n\[0\] hi\n)\z`},
		{[]string{"-n", "1", "-timeout", "50ms", "-grace", "50ms", "sleep", "60"}, 124, `fmpirun: the job timed out after 50ms`},
		{[]string{"-n", "1", "no-such-program"}, 127, `fmpirun: cannot run no-such-program`},
		{[]string{"-n", "2", "-v", "true"}, 0, `fmpirun: job [0-9a-f]{16}: 2 processes of \S*true`},
	} {
		out, code := fmpirun(t, tc.args...)
		if code != tc.code || !regexp.MustCompile(tc.out).MatchString(out) {
			t.Errorf("fmpirun %q: exit %d, output:\n%s\nwant exit %d, output matching %q", tc.args, code, out, tc.code, tc.out)
		}
	}
}

// BenchmarkStartup is the time fmpirun -n 2 takes to run a program that
// joins, fences once and leaves: starting fmpirun and both processes, the
// join, the fence, and the clean-up.
func BenchmarkStartup(b *testing.B) {
	bin, startup := binaries(b)
	for b.Loop() {
		if out, err := exec.Command(bin, "-n", "2", startup).CombinedOutput(); err != nil {
			b.Fatalf("%v\n%s", err, out)
		}
	}
}
