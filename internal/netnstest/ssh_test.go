package netnstest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fibermpi/fibermpi/internal/fmpitest"
	"github.com/fibermpi/fibermpi/internal/testenv"
)

// sshPort is where each node's sshd listens, on the node's address only.
const sshPort = 2222

// envRequired, a list, makes the skips of the launchers named in it
// failures (make test-launch sets "ssh" once it has installed sshd).
const envRequired = "FIBERMPI_ENGINES_REQUIRED"

// skipOrFail skips the test with why, printed, unless the launcher is
// required.
func skipOrFail(t *testing.T, launcher, why string) {
	t.Helper()
	for _, k := range strings.Split(os.Getenv(envRequired), ",") {
		if k == launcher {
			t.Fatalf("%s (and %s=%s)", why, envRequired, os.Getenv(envRequired))
		}
	}
	fmt.Printf("netnstest: %s: skipped\n", why)
	t.Skip(why)
}

// sshNodes is an sshd in every namespace, reached with a client key made
// for the run.
type sshNodes struct {
	ssh []string // the client command, before the host
}

// startSSHD generates host and client keys in a temporary directory and
// starts an sshd in each namespace (in its own UTS namespace, named as the
// node, as its processes will be), listening on the node's address; a
// cleanup stops each one. It returns an error when sshd cannot run here.
func startSSHD(t *testing.T, n *netns) (*sshNodes, error) {
	sshd, err := exec.LookPath("sshd")
	if err != nil {
		if _, serr := os.Stat("/usr/sbin/sshd"); serr != nil {
			return nil, fmt.Errorf("no sshd (Debian's openssh-server; make test-launch installs it): %v", err)
		}
		sshd = "/usr/sbin/sshd"
	}
	for _, tool := range []string{"ssh", "ssh-keygen"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, fmt.Errorf("no %s: %v", tool, err)
		}
	}
	// sshd's privilege separation directory, which the package's service
	// would make.
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
		return nil, fmt.Errorf("sshd's /run/sshd: %v", err)
	}
	dir := t.TempDir()
	for _, key := range []string{"host_key", "id"} {
		if err := run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "netnstest", "-f", filepath.Join(dir, key)); err != nil {
			return nil, err
		}
	}
	pub, err := os.ReadFile(filepath.Join(dir, "id.pub"))
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "authorized_keys"), pub, 0o600); err != nil {
		return nil, err
	}
	nodes := &sshNodes{ssh: []string{"ssh", "-x", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no",
		"-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR", "-o", "ConnectTimeout=10",
		"-i", filepath.Join(dir, "id"), "-p", strconv.Itoa(sshPort)}}
	for i, ns := range n.names {
		conf := filepath.Join(dir, fmt.Sprintf("sshd-%d.conf", i))
		text := strings.Join([]string{
			fmt.Sprintf("Port %d", sshPort),
			"ListenAddress " + n.addrs[i],
			"HostKey " + filepath.Join(dir, "host_key"),
			"AuthorizedKeysFile " + filepath.Join(dir, "authorized_keys"),
			"PidFile none",
			"PermitRootLogin prohibit-password",
			"PasswordAuthentication no",
			"KbdInteractiveAuthentication no",
			"UsePAM no",
			"StrictModes no", // the keys live in a temporary directory
			"LogLevel ERROR",
		}, "\n") + "\n"
		if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
			return nil, err
		}
		log := &testenv.Buffer{}
		cmd := exec.Command("ip", "netns", "exec", ns, "unshare", "--uts", "sh", "-c",
			`hostname "fmpi-node$0" && exec "$@"`, strconv.Itoa(i), sshd, "-D", "-e", "-f", conf)
		cmd.Stdout, cmd.Stderr = log, log
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			return nil, fmt.Errorf("starting sshd in %s: %v", ns, err)
		}
		t.Cleanup(func() { stopSSHD(t, cmd, log) })
		// Up when a login from node 0 works (bounded).
		deadline := time.Now().Add(15 * time.Second)
		for {
			probe := append([]string{"ip", "netns", "exec", n.names[0]}, nodes.ssh...)
			out, err := exec.Command(probe[0], append(probe[1:], n.addrs[i], "hostname")[:]...).CombinedOutput()
			if err == nil && strings.TrimSpace(string(out)) == fmt.Sprintf("fmpi-node%d", i) {
				break
			}
			if time.Now().After(deadline) || cmd.ProcessState != nil {
				return nil, fmt.Errorf("sshd in %s does not answer: %v: %s; its log: %s", ns, err, bytes.TrimSpace(out), log.String())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return nodes, nil
}

// stopSSHD ends one sshd (SIGTERM, then SIGKILL after 5 s) and waits for it.
func stopSSHD(t *testing.T, cmd *exec.Cmd, log *testenv.Buffer) {
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
	if t.Failed() && log.String() != "" {
		t.Logf("sshd (pid %d) log:\n%s", cmd.Process.Pid, log.String())
	}
}

// sshSetup makes the namespaces and their sshds, or skips the test with
// the reason.
func sshSetup(t *testing.T) (*netns, *sshNodes) {
	t.Helper()
	n, err := makeNetns(t, false)
	if err != nil {
		skipOrFail(t, "ssh", "no network namespaces: "+err.Error())
	}
	nodes, err := startSSHD(t, n)
	if err != nil {
		skipOrFail(t, "ssh", "sshd cannot run here: "+err.Error())
	}
	return n, nodes
}

// inNode0 is the wrapper of a launcher run on node 0: its namespace and
// host name.
func (n *netns) inNode0() []string {
	return []string{"ip", "netns", "exec", n.names[0], "unshare", "--uts", "sh", "-c", `hostname fmpi-node0 && exec "$@"`, "sh"}
}

// TestSSHLaunch: fmpirun on node 0 with -hosts <node 0>:2,<node 1>:2
// starts ranks 0–1 itself and ranks 2–3 through the real ssh client and
// node 1's sshd; they join its bootstrap over TCP and run the
// point-to-point, rendezvous and collective checks of child, shared
// memory inside a node and TCP between (child checks which each pair
// used).
func TestSSHLaunch(t *testing.T) {
	if fmpitest.Child() {
		if err := child(); err != nil {
			t.Fatal(err)
		}
		return
	}
	n, nodes := sshSetup(t)
	out, err := fmpitest.Start(t, procs, fmpitest.Options{
		Wrap: n.inNode0(),
		Env:  []string{expectEnv + "=nodes"},
		Flags: []string{"-hosts", fmt.Sprintf("%s:%d,%s:%d", n.addrs[0], perNode, n.addrs[1], perNode),
			"-ssh", strings.Join(nodes.ssh, " "), "-x", "FMPITEST_CHILD", "-x", expectEnv, "-x", "GORACE", "-v"},
	}, fmpitest.TestCommand(t, 0)...).Wait()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for r := range procs {
		node := r / perNode
		if !regexp.MustCompile(fmt.Sprintf(`netnstest: rank %d ok on fmpi-node%d,`, r, node)).MatchString(out) {
			t.Errorf("rank %d did not report from fmpi-node%d\n%s", r, node, out)
		}
	}
	if !strings.Contains(out, "listening for remote processes on "+n.addrs[0]+":") {
		t.Errorf("fmpirun did not listen on node 0's address only\n%s", out)
	}
	t.Logf("\n%s", grep(out, "netnstest:"))
}

// TestHydraHosts: MPICH's mpiexec on node 0 with -hosts <node 0>:2,<node
// 1>:2, its proxies started through the same ssh (-launcher ssh
// -launcher-exec): the processes join through the PMI bootstrap and run
// the same checks.
func TestHydraHosts(t *testing.T) {
	if os.Getenv("NETNSTEST_HYDRA_CHILD") == "1" {
		if err := child(); err != nil {
			t.Fatal(err)
		}
		return
	}
	if _, err := exec.LookPath("mpiexec.hydra"); err != nil {
		skipOrFail(t, "hydra", "mpiexec.hydra is not installed (make test-launch installs it)")
	}
	n, nodes := sshSetup(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	launcherExec := filepath.Join(dir, "ssh")
	// Hydra splits -launcher-exec at no space: a script holds the options.
	script := "#!/bin/sh\nexec " + strings.Join(nodes.ssh, " ") + ` "$@"` + "\n"
	if err := os.WriteFile(launcherExec, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	argv := append(n.inNode0(), "mpiexec.hydra", "-launcher", "ssh", "-launcher-exec", launcherExec,
		"-iface", n.veth[0], "-hosts", fmt.Sprintf("%s:%d,%s:%d", n.addrs[0], perNode, n.addrs[1], perNode),
		"-n", strconv.Itoa(procs), "-genv", "NETNSTEST_HYDRA_CHILD", "1", "-genv", expectEnv, "nodes",
		self, "-test.run=^TestHydraHosts$", "-test.timeout=2m")
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out testenv.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(3 * time.Minute):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		err = errors.Join(<-done, errors.New("mpiexec ran past 3 minutes"))
	}
	if err != nil {
		t.Fatalf("mpiexec: %v\n%s", err, out.String())
	}
	for r := range procs {
		node := r / perNode
		if !regexp.MustCompile(fmt.Sprintf(`netnstest: rank %d ok on fmpi-node%d,`, r, node)).MatchString(out.String()) {
			t.Errorf("rank %d did not report from fmpi-node%d\n%s", r, node, out.String())
		}
	}
	t.Logf("\n%s", grep(out.String(), "netnstest:"))
}
