package bootstrap_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/fibermpi/fibermpi/bootstrap"
	"github.com/fibermpi/fibermpi/internal/fmpitest"
)

// fakeSSH writes a stand-in for ssh: "fakessh host command" runs command
// with sh on this machine, as ssh would on the host, and logs the host.
func fakeSSH(t *testing.T) (script, log string) {
	t.Helper()
	dir := t.TempDir()
	script, log = filepath.Join(dir, "fakessh"), filepath.Join(dir, "hosts.log")
	body := fmt.Sprintf("#!/bin/sh\necho \"$1\" >> %s\nshift\nexec sh -c \"$1\"\n", log)
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return script, log
}

// TestRemoteHosts: fmpirun -hosts with two hosts that are not this machine
// starts their processes through the -ssh command, which runs the remote
// shell command (cd, env with the variables, the program); they join over
// TCP (FIBERMPI_BOOT=tcp:…) and exchange records with each other.
func TestRemoteHosts(t *testing.T) {
	if fmpitest.Child() {
		b := mustDetect(t)
		defer b.Close()
		if err := b.Put("boot", []byte(os.Getenv(bootstrap.EnvBoot))); err != nil {
			t.Fatal(err)
		}
		if err := b.Fence(); err != nil {
			t.Fatal(err)
		}
		var boots []string
		for q := range b.Size() {
			v, err := b.Get(q, "boot")
			if err != nil {
				t.Fatal(err)
			}
			boots = append(boots, string(v))
		}
		result("rank %d forwarded=%s boots=%s", b.Rank(), os.Getenv("REMOTE_TEST_FORWARDED"), strings.Join(boots, " "))
		return
	}
	ssh, log := fakeSSH(t)
	out, err := fmpitest.RunTest(t, 3, fmpitest.Options{
		Flags: []string{"-hosts", "fake-a.invalid:2,fake-b.invalid", "-listen", "127.0.0.1:0", "-ssh", ssh,
			"-x", "FMPITEST_CHILD", "-x", "REMOTE_TEST_FORWARDED", "-x", "GORACE"},
		Env: []string{"REMOTE_TEST_FORWARDED=yes"},
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for r := range 3 {
		expectOutput(t, out, fmt.Sprintf(`RESULT rank %d forwarded=yes boots=tcp:127\.0\.0\.1:\d+ tcp:127\.0\.0\.1:\d+ tcp:127\.0\.0\.1:\d+`, r))
	}
	hosts, _ := os.ReadFile(log)
	if got := strings.Fields(string(hosts)); len(got) != 3 || strings.Count(string(hosts), "fake-a.invalid") != 2 {
		t.Errorf("the ssh stand-in was run for %q, want fake-a.invalid twice and fake-b.invalid once", got)
	}
}

// TestRemoteHostKilled: in a job of a local and a remote process, the
// remote one is killed (here its "ssh" is the process itself): fmpirun
// fails the job naming the rank, the signal and the host, and the local
// process's barrier returns ErrPeerLost.
func TestRemoteHostKilled(t *testing.T) {
	if fmpitest.Child() {
		b := mustDetect(t)
		result("rank %d pid %d ppid %d joined", b.Rank(), os.Getpid(), os.Getppid())
		if b.Rank() == 1 {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
		err := b.Barrier()
		result("rank %d barrier %s", b.Rank(), sentinel(err))
		select {} // ended by the bootstrap (remote) or by fmpirun (local)
	}
	ssh, _ := fakeSSH(t)
	out, err := fmpitest.RunTest(t, 2, fmpitest.Options{
		Flags: []string{"-hosts", "localhost,fake-b.invalid", "-listen", "127.0.0.1:0", "-ssh", ssh, "-x", "FMPITEST_CHILD", "-x", "GORACE"},
	})
	// The remote rank's "ssh" (sh, exec'd into the program) is the process
	// killed; fmpirun names it and the host.
	expectFail(t, out, err, 137, `rank 1: killed by signal 9 \(SIGKILL\) \(on fake-b\.invalid, through `, `RESULT rank 0 barrier ErrPeerLost`)
}
