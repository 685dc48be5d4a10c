package bootstrap

import (
	"bufio"
	"bytes"
	"errors"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fibermpi/fibermpi/internal/testenv"
)

// fakePMI1 is the server side of a PMI-1 connection handed to the client
// as PMI_FD: it answers the handshake and what the test scripts.
type fakePMI1 struct {
	t    *testing.T
	conn net.Conn
	r    *bufio.Reader
	env  map[string]string
}

// newFakePMI1 makes a socket pair; the client's end is a descriptor of this
// process named by PMI_FD in env.
func newFakePMI1(t *testing.T, rank, size int) *fakePMI1 {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(fds[0]), "server")
	conn, err := net.FileConn(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &fakePMI1{t: t, conn: conn, r: bufio.NewReader(conn), env: map[string]string{
		EnvPMIFD: strconv.Itoa(fds[1]), EnvPMIRank: strconv.Itoa(rank), EnvPMISize: strconv.Itoa(size)}}
}

// expect reads one command and checks its name, answering with reply.
func (f *fakePMI1) expect(cmd, reply string) pmiMsg {
	f.t.Helper()
	_ = f.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	m, err := readPMI1(f.r)
	if err != nil {
		f.t.Fatalf("server: reading %s: %v", cmd, err)
	}
	if m.cmd() != cmd {
		f.t.Fatalf("server: got cmd=%s, want %s (%v)", m.cmd(), cmd, m)
	}
	if reply != "" {
		if _, err := f.conn.Write([]byte(reply + "\n")); err != nil {
			f.t.Fatal(err)
		}
	}
	return m
}

func (f *fakePMI1) handshake() {
	f.expect("init", "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0")
	f.expect("get_maxes", "cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=100")
	f.expect("get_my_kvsname", "cmd=my_kvsname kvsname=kvs_42_0")
}

// openFake runs openPMI1 against f while the test goroutine plays f's
// side through serve.
func openFake(t *testing.T, f *fakePMI1, serve func()) Bootstrap {
	t.Helper()
	type res struct {
		b   Bootstrap
		err error
	}
	done := make(chan res, 1)
	go func() {
		b, err := openPMI1(envOf(f.env))
		done <- res{b, err}
	}()
	serve()
	r := <-done
	if r.err != nil {
		t.Fatalf("openPMI1: %v", r.err)
	}
	return r.b
}

func TestPMI1Client(t *testing.T) {
	f := newFakePMI1(t, 1, 2)
	b := openFake(t, f, f.handshake)
	defer b.Close()
	codes := make(chan int, 1)
	exit = func(code int) { codes <- code }
	defer func() { exit = os.Exit }()
	var stderr testenv.Buffer
	b.(*pmiClient).stderr = &stderr
	if b.Name() != "pmi" || b.Rank() != 1 || b.Size() != 2 || b.JobID() != "pmi-kvs_42_0" {
		t.Fatalf("%s rank %d size %d job %q", b.Name(), b.Rank(), b.Size(), b.JobID())
	}
	// A value longer than the server's vallen_max goes in chunks.
	big := bytes.Repeat([]byte("xy"), 100)
	if err := b.Put("k", big); err != nil {
		t.Fatal(err)
	}
	if v, err := b.Get(1, "k"); err != nil || !bytes.Equal(v, big) {
		t.Fatalf("own record before the fence: %q, %v", v, err)
	}
	kvs := map[string]string{}
	errc := make(chan error, 1)
	go func() { errc <- b.Fence() }()
	for {
		m := f.read()
		if m.cmd() == "barrier_in" {
			f.conn.Write([]byte("cmd=barrier_out\n"))
			break
		}
		if m["kvsname"] != "kvs_42_0" || len(m["value"]) >= 100 {
			t.Errorf("put %v", m)
		}
		kvs[m["key"]] = m["value"]
		f.conn.Write([]byte("cmd=put_result rc=0 msg=success\n"))
	}
	if err := <-errc; err != nil {
		t.Fatalf("Fence: %v", err)
	}
	if len(kvs) != 5 || kvs["1/k~4"] == "" {
		t.Errorf("the record went in %d chunks: %v", len(kvs), kvs)
	}
	// Rank 0's record, as the server has it: read once, then cached.
	type got struct {
		v   []byte
		err error
	}
	gc := make(chan got, 1)
	go func() { v, err := b.Get(0, "k"); gc <- got{v, err} }()
	m := f.expect("get", "cmd=get_result rc=0 msg=success value=1:6869")
	if m["key"] != "0/k" {
		t.Errorf("get of key %q", m["key"])
	}
	if g := <-gc; g.err != nil || string(g.v) != "hi" {
		t.Errorf("Get(0, k) = %q, %v", g.v, g.err)
	}
	if v, err := b.Get(0, "k"); err != nil || string(v) != "hi" {
		t.Errorf("cached Get(0, k) = %q, %v", v, err)
	}
	go func() { _, err := b.Get(0, "none"); gc <- got{nil, err} }()
	f.expect("get", "cmd=get_result rc=-1 msg=key_0/none_not_found value=unknown")
	if g := <-gc; !errors.Is(g.err, ErrNotFound) {
		t.Errorf("Get of a missing record: %v", g.err)
	}
	// The launcher goes away: Failed fires, blocking calls fail with it.
	f.conn.Close()
	select {
	case err := <-b.Failed():
		pe, ok := errors.AsType[*PeerError](err)
		if !ok || pe.Rank != -1 || !errors.Is(err, ErrPeerLost) || !strings.Contains(err.Error(), "closed the connection") {
			t.Errorf("Failed: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no Failed for 10 s after the server closed")
	}
	if err := b.Barrier(); !errors.Is(err, ErrPeerLost) {
		t.Errorf("Barrier after the launcher left: %v", err)
	}
	// Not closed: the process ends itself rather than live on orphaned.
	select {
	case code := <-codes:
		if code != 1 {
			t.Errorf("the process would end with %d, want 1", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the process did not end itself within 10 s of losing its launcher")
	}
	if !strings.Contains(stderr.String(), "ending this process") {
		t.Errorf("nothing said why the process ends: %q", stderr.String())
	}
}

// read reads the next command, whatever it is.
func (f *fakePMI1) read() pmiMsg {
	f.t.Helper()
	_ = f.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	m, err := readPMI1(f.r)
	if err != nil {
		f.t.Fatalf("server: %v", err)
	}
	return m
}

func TestPMI1AbortAndClose(t *testing.T) {
	f := newFakePMI1(t, 0, 2)
	b := openFake(t, f, f.handshake)
	var stderr bytes.Buffer
	b.(*pmiClient).stderr = &stderr
	if err := b.Abort(9, "the reason"); err != nil {
		t.Fatal(err)
	}
	m := f.expect("abort", "")
	if m["exitcode"] != "9" || stderr.String() != "bootstrap: rank 0 aborted the job with code 9: the reason\n" {
		t.Errorf("abort sent %v, printed %q", m, stderr.String())
	}
	if err := b.Fence(); !errors.Is(err, ErrAborted) {
		t.Errorf("Fence after Abort: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := b.Close(); !errors.Is(err, ErrClosed) {
		t.Errorf("second Close: %v", err)
	}

	// Close finalizes a job that is still running.
	f = newFakePMI1(t, 0, 2)
	b = openFake(t, f, f.handshake)
	errc := make(chan error, 1)
	go func() { errc <- b.Close() }()
	f.expect("finalize", "cmd=finalize_ack")
	if err := <-errc; err != nil {
		t.Errorf("Close: %v", err)
	}
}

// A server that answers the handshake wrongly is an error, not a hang.
func TestPMI1BadServer(t *testing.T) {
	f := newFakePMI1(t, 0, 2)
	done := make(chan error, 1)
	go func() { _, err := openPMI1(envOf(f.env)); done <- err }()
	f.expect("init", "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=-1 msg=nope")
	if err := <-done; !errors.Is(err, ErrEnvironment) || !strings.Contains(err.Error(), "rc=-1") {
		t.Errorf("refused init: %v", err)
	}
	f = newFakePMI1(t, 0, 2)
	go func() { _, err := openPMI1(envOf(f.env)); done <- err }()
	f.expect("init", "")
	f.conn.Close()
	if err := <-done; !errors.Is(err, ErrPeerLost) {
		t.Errorf("server gone during init: %v", err)
	}
}
