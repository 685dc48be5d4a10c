package bootstrap

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fibermpi/fibermpi/internal/bootwire"
)

// envOf is a lookupFunc over a map.
func envOf(m map[string]string) lookupFunc {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestDetectTable(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string   // the backend's name, if Detect succeeds
		err  error    // else the sentinel
		msg  []string // and what the message names
	}{
		{name: "nothing", env: nil, want: "single"},
		{name: "forced single", env: map[string]string{EnvBootstrap: "single", EnvRank: "1", EnvSize: "4"}, want: "single"},
		{name: "forced unknown", env: map[string]string{EnvBootstrap: "mpich"}, err: ErrEnvironment,
			msg: []string{`FIBERMPI_BOOTSTRAP="mpich"`, "fmpirun", "single"}},
		{name: "forced fmpirun without its variables", env: map[string]string{EnvBootstrap: "fmpirun"}, err: ErrEnvironment,
			msg: []string{"FIBERMPI_RANK, FIBERMPI_SIZE, FIBERMPI_JOBID, FIBERMPI_BOOT not set"}},
		{name: "rank alone", env: map[string]string{EnvRank: "1"}, err: ErrEnvironment,
			msg: []string{"FIBERMPI_SIZE, FIBERMPI_JOBID, FIBERMPI_BOOT not set", `FIBERMPI_RANK="1" set`}},
		{name: "boot missing", env: map[string]string{EnvRank: "0", EnvSize: "2", EnvJobID: "x"}, err: ErrEnvironment,
			msg: []string{"FIBERMPI_BOOT not set"}},
		{name: "empty value", env: map[string]string{EnvRank: "0", EnvSize: "2", EnvJobID: "", EnvBoot: "/s"}, err: ErrEnvironment,
			msg: []string{"FIBERMPI_JOBID not set"}},
		{name: "rank beyond size", env: map[string]string{EnvRank: "2", EnvSize: "2", EnvJobID: "j", EnvBoot: "/s"}, err: ErrEnvironment,
			msg: []string{`FIBERMPI_RANK="2" is not a rank below FIBERMPI_SIZE=2`}},
		{name: "negative rank", env: map[string]string{EnvRank: "-1", EnvSize: "2", EnvJobID: "j", EnvBoot: "/s"}, err: ErrEnvironment,
			msg: []string{`FIBERMPI_RANK="-1"`}},
		{name: "size zero", env: map[string]string{EnvRank: "0", EnvSize: "0", EnvJobID: "j", EnvBoot: "/s"}, err: ErrEnvironment,
			msg: []string{`FIBERMPI_SIZE="0" is not a job size`}},
		{name: "no socket", env: map[string]string{EnvRank: "0", EnvSize: "2", EnvJobID: "j", EnvBoot: "/nonexistent/boot.sock"}, err: ErrEnvironment,
			msg: []string{"cannot reach fmpirun at FIBERMPI_BOOT=/nonexistent/boot.sock"}},
		{name: "mpiexec, stale PMI_FD", env: map[string]string{"PMI_RANK": "1", "PMI_SIZE": "4", "PMI_FD": "987654"}, err: ErrEnvironment,
			msg: []string{"PMI_FD=987654 is not an open socket"}},
		{name: "PMI_FD without rank", env: map[string]string{"PMI_SIZE": "4", "PMI_FD": "5"}, err: ErrEnvironment,
			msg: []string{"PMI_FD is set but", `PMI_RANK=""`}},
		{name: "PMI rank beyond size", env: map[string]string{"PMI_RANK": "4", "PMI_SIZE": "4", "PMI_FD": "987654"}, err: ErrEnvironment,
			msg: []string{`PMI_RANK="4" is not a rank below PMI_SIZE="4"`}},
		{name: "PMI without a connection", env: map[string]string{"PMI_RANK": "0", "PMI_SIZE": "1"}, err: ErrEnvironment,
			msg: []string{"neither PMI_FD nor PMI_PORT"}},
		{name: "PMI_PORT without PMI_ID", env: map[string]string{"PMI_PORT": "localhost:1"}, err: ErrEnvironment,
			msg: []string{`PMI_PORT="localhost:1" is set without PMI_ID`}},
		{name: "PMI_PORT not host:port", env: map[string]string{"PMI_PORT": "nowhere", "PMI_ID": "0"}, err: ErrEnvironment,
			msg: []string{`PMI_PORT="nowhere" is not host:port`}},
		{name: "forced pmi2 without PMI", env: map[string]string{EnvBootstrap: "pmi2"}, err: ErrEnvironment,
			msg: []string{"neither PMI_FD nor PMI_PORT"}},
		{name: "open mpi", env: map[string]string{"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "2"}, err: ErrEnvironment,
			msg: []string{"Open MPI"}},
		{name: "srun without job ids", env: map[string]string{"SLURM_PROCID": "3", "SLURM_STEP_NUM_TASKS": "8"}, err: ErrEnvironment,
			msg: []string{"srun's environment is incomplete", "SLURM_JOB_ID, SLURM_STEP_ID, SLURM_STEP_NODELIST not set"}},
		{name: "srun rank beyond size", env: map[string]string{"SLURM_PROCID": "8", "SLURM_STEP_NUM_TASKS": "8"}, err: ErrEnvironment,
			msg: []string{`SLURM_PROCID="8" is not a rank below SLURM_STEP_NUM_TASKS=8`}},
		{name: "srun -n 1", env: map[string]string{"SLURM_PROCID": "0", "SLURM_STEP_NUM_TASKS": "1"}, want: "single"},
		{name: "sbatch script", env: map[string]string{"SLURM_PROCID": "0", "SLURM_NTASKS": "8"}, want: "single"},
		{name: "torchrun without MASTER_PORT", env: map[string]string{"RANK": "1", "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1"}, err: ErrEnvironment,
			msg: []string{"torchrun's environment is incomplete: MASTER_PORT not set", `RANK="1"`}},
		{name: "RANK without WORLD_SIZE", env: map[string]string{"RANK": "1"}, err: ErrEnvironment,
			msg: []string{"WORLD_SIZE, MASTER_ADDR, MASTER_PORT not set"}},
		{name: "LOCAL_RANK alone", env: map[string]string{"LOCAL_RANK": "0"}, err: ErrEnvironment,
			msg: []string{"RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT not set"}},
		{name: "RANK beyond WORLD_SIZE", env: map[string]string{"RANK": "2", "WORLD_SIZE": "2", "MASTER_ADDR": "h", "MASTER_PORT": "1"}, err: ErrEnvironment,
			msg: []string{`RANK="2" is not a rank below WORLD_SIZE=2`}},
		{name: "LOCAL_RANK beyond LOCAL_WORLD_SIZE", env: map[string]string{"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "1", "MASTER_ADDR": "h", "MASTER_PORT": "1"}, err: ErrEnvironment,
			msg: []string{`LOCAL_RANK="1" is not a local rank below 1`}},
		{name: "bad MASTER_PORT", env: map[string]string{"RANK": "1", "WORLD_SIZE": "2", "MASTER_ADDR": "h", "MASTER_PORT": "http"}, err: ErrEnvironment,
			msg: []string{`MASTER_PORT="http" is not a TCP port`}},
		{name: "WORLD_SIZE=0", env: map[string]string{"RANK": "0", "WORLD_SIZE": "0"}, err: ErrEnvironment,
			msg: []string{`WORLD_SIZE="0" is not a job size`}},
		{name: "torchrun of one", env: map[string]string{"RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0"}, want: "single"},
		{name: "torchrun forced single", env: map[string]string{"RANK": "1", "WORLD_SIZE": "2", EnvBootstrap: "single"}, want: "single"},
		{name: "fmpirun before pmi", env: map[string]string{EnvRank: "0", "PMI_SIZE": "4"}, err: ErrEnvironment,
			msg: []string{"fmpirun's environment is incomplete"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := detect(envOf(tc.env))
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("detect = %v, %v; want %v", b, err, tc.err)
				}
				for _, m := range tc.msg {
					if !strings.Contains(err.Error(), m) {
						t.Errorf("error %q does not say %q", err, m)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("detect: %v", err)
			}
			defer b.Close()
			if b.Name() != tc.want {
				t.Errorf("detect chose %q, want %q", b.Name(), tc.want)
			}
		})
	}
}

func TestSingle(t *testing.T) {
	s := Single()
	if s.Name() != "single" || s.Rank() != 0 || s.Size() != 1 {
		t.Fatalf("Single: %s rank %d size %d", s.Name(), s.Rank(), s.Size())
	}
	if id := s.JobID(); len(id) != 16 || id == Single().JobID() {
		t.Errorf("JobID %q: want 16 hex digits, fresh each time", id)
	}
	if s.Host() == "" || s.Host() != Single().Host() {
		t.Errorf("Host %q differs between two bootstraps of one process", s.Host())
	}
	v := []byte("value")
	if err := s.Put("k", v); err != nil {
		t.Fatal(err)
	}
	v[0] = 'X' // Put copied it
	if got, err := s.Get(0, "k"); err != nil || string(got) != "value" {
		t.Errorf("Get before the fence: %q, %v", got, err)
	}
	for _, err := range []error{s.Fence(), s.Barrier()} {
		if err != nil {
			t.Errorf("collective: %v", err)
		}
	}
	if _, err := s.Get(1, "k"); !errors.Is(err, ErrRank) {
		t.Errorf("Get(1): %v, want ErrRank", err)
	}
	if _, err := s.Get(0, "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get of a missing key: %v, want ErrNotFound", err)
	}
	for _, bad := range []struct {
		k string
		v []byte
	}{{"", nil}, {strings.Repeat("k", MaxKey+1), nil}, {"k", make([]byte, MaxValue+1)}} {
		if err := s.Put(bad.k, bad.v); !errors.Is(err, ErrRecord) {
			t.Errorf("Put(key %d bytes, value %d bytes): %v, want ErrRecord", len(bad.k), len(bad.v), err)
		}
	}
	var stderr bytes.Buffer
	s.(*single).stderr = &stderr
	if err := s.Abort(3, "because"); err != nil || stderr.String() != "bootstrap: the job aborted with code 3: because\n" {
		t.Errorf("Abort: %v, printed %q", err, stderr.String())
	}
	select {
	case err := <-s.Failed():
		t.Errorf("Failed fired: %v", err)
	default:
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{"Close": s.Close(), "Fence": s.Fence(), "Barrier": s.Barrier(), "Put": s.Put("k", nil), "Abort": s.Abort(1, "")} {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", name, err)
		}
	}
}

func TestPeerError(t *testing.T) {
	e := error(&PeerError{Rank: 2, Cause: "exit status 3", Err: ErrPeerLost})
	if e.Error() != "bootstrap: rank 2: exit status 3" || !errors.Is(e, ErrPeerLost) || errors.Is(e, ErrAborted) {
		t.Errorf("%v", e)
	}
	l := &PeerError{Rank: -1, Cause: "gone", Err: ErrPeerLost}
	if l.Error() != "bootstrap: launcher: gone" {
		t.Errorf("%v", l)
	}
}

func TestIdentity(t *testing.T) {
	id, exe := exeIdentity()
	if !strings.HasPrefix(id, "go build ID ") || exe == "" {
		t.Errorf("identity of this test binary: %q (%q), want its Go build ID", id, exe)
	}
	if _, err := goBuildID("/nonexistent"); err == nil {
		t.Error("goBuildID of a missing file succeeded")
	}
	// A file that is not ELF.
	txt := filepath.Join(t.TempDir(), "x")
	os.WriteFile(txt, []byte("#!/bin/sh\n"), 0o755)
	if _, err := goBuildID(txt); err == nil {
		t.Error("goBuildID of a script succeeded")
	}
	note := func(namesz, descsz, typ uint32, name string, desc string) []byte {
		b := binary.LittleEndian.AppendUint32(nil, namesz)
		b = binary.LittleEndian.AppendUint32(b, descsz)
		b = binary.LittleEndian.AppendUint32(b, typ)
		return append(append(b, name...), desc...)
	}
	if off, d, err := parseGoNote(note(4, 3, 4, "Go\x00\x00", "abc"), binary.LittleEndian); err != nil || string(d) != "abc" || off != 16 {
		t.Errorf("a good note: %d %q %v", off, d, err)
	}
	for name, n := range map[string][]byte{
		"short":      {1, 2, 3},
		"wrong type": note(4, 3, 1, "Go\x00\x00", "abc"),
		"wrong name": note(4, 3, 4, "GNU\x00", "abc"),
		"desc long":  note(4, 9, 4, "Go\x00\x00", "abc"),
		"empty desc": note(4, 0, 4, "Go\x00\x00", "abcd"),
	} {
		if _, _, err := parseGoNote(n, binary.LittleEndian); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// fakeLauncher is a scripted fmpirun side of one connection.
type fakeLauncher struct {
	t    *testing.T
	ln   *net.UnixListener
	conn net.Conn
	r    *bootwire.Reader
	env  map[string]string
}

func newFake(t *testing.T) *fakeLauncher {
	sock := filepath.Join(t.TempDir(), "s")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return &fakeLauncher{t: t, ln: ln,
		env: map[string]string{EnvRank: "1", EnvSize: "3", EnvJobID: "0123456789abcdef", EnvBoot: sock}}
}

// open runs Detect against the fake, which answers the join with reply.
func (f *fakeLauncher) open(reply bootwire.Msg) (Bootstrap, error) {
	type res struct {
		b   Bootstrap
		err error
	}
	done := make(chan res, 1)
	go func() { b, err := detect(envOf(f.env)); done <- res{b, err} }()
	f.ln.SetDeadline(time.Now().Add(10 * time.Second))
	conn, err := f.ln.Accept()
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	f.conn, f.r = conn, bootwire.NewReader(conn)
	hello := f.read()
	self, _ := os.Executable()
	id, _ := exeIdentity()
	want := bootwire.Msg{Type: bootwire.Hello, Version: bootwire.Version, Rank: 1, Size: 3, PID: int32(os.Getpid()),
		JobID: "0123456789abcdef", Identity: id, Exe: self, Host: hostIdentity()}
	if d := cmp.Diff(want, hello); d != "" {
		f.t.Errorf("Hello (-want +got):\n%s", d)
	}
	f.send(reply)
	select {
	case r := <-done:
		return r.b, r.err
	case <-time.After(10 * time.Second):
		f.t.Fatal("Detect did not return")
		return nil, nil
	}
}

// joined runs Detect against the fake, which accepts the join.
func (f *fakeLauncher) joined() Bootstrap {
	f.t.Helper()
	b, err := f.open(bootwire.Msg{Type: bootwire.OK})
	if err != nil {
		f.t.Fatal(err)
	}
	return b
}

// waitFailed waits for b's Failed to fire.
func waitFailed(t *testing.T, b Bootstrap) error {
	t.Helper()
	select {
	case err := <-b.Failed():
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("Failed did not fire")
		return nil
	}
}

func (f *fakeLauncher) read() bootwire.Msg {
	f.t.Helper()
	m, err := f.r.Read()
	if err != nil {
		f.t.Fatalf("fake launcher: %v", err)
	}
	return m
}

func (f *fakeLauncher) send(ms ...bootwire.Msg) {
	f.t.Helper()
	var b []byte
	for _, m := range ms {
		b = bootwire.Append(b, &m)
	}
	if _, err := f.conn.Write(b); err != nil {
		f.t.Fatalf("fake launcher: %v", err)
	}
}

// async runs fn in a goroutine and returns its error on a channel.
func async(fn func() error) <-chan error {
	c := make(chan error, 1)
	go func() { c <- fn() }()
	return c
}

func recv(t *testing.T, c <-chan error, what string) error {
	t.Helper()
	select {
	case err := <-c:
		return err
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not return", what)
		return nil
	}
}

func TestClientFence(t *testing.T) {
	f := newFake(t)
	b := f.joined()
	if b.Name() != "fmpirun" || b.Rank() != 1 || b.Size() != 3 || b.JobID() != "0123456789abcdef" {
		t.Errorf("%s rank %d size %d job %s", b.Name(), b.Rank(), b.Size(), b.JobID())
	}
	b.Put("a", []byte("1"))
	b.Put("b", nil)
	b.Put("a", []byte("2"))
	fence := async(b.Fence)
	// The Puts come with the Fence, in order.
	var got []string
	for m := f.read(); ; m = f.read() {
		got = append(got, m.Type.String()+":"+m.Key+"="+string(m.Value))
		if m.Type == bootwire.Fence {
			break
		}
	}
	if want := []string{"Put:a=1", "Put:b=", "Put:a=2", "Fence:="}; !cmp.Equal(got, want) {
		t.Errorf("frames sent: %q, want %q", got, want)
	}
	f.send(bootwire.Msg{Type: bootwire.Record, Rank: 0, Key: "a", Value: []byte("zero")},
		bootwire.Msg{Type: bootwire.Record, Rank: 2, Key: "a", Value: []byte("two")},
		bootwire.Msg{Type: bootwire.OK})
	if err := recv(t, fence, "Fence"); err != nil {
		t.Fatal(err)
	}
	for r, want := range []string{"zero", "2", "two"} {
		if v, err := b.Get(r, "a"); err != nil || string(v) != want {
			t.Errorf("Get(%d, a) = %q, %v; want %q", r, v, err, want)
		}
	}
	// A collective that fails for want of a peer.
	barrier := async(b.Barrier)
	if m := f.read(); m.Type != bootwire.Barrier {
		t.Fatalf("sent %v, want Barrier", m.Type)
	}
	f.send(bootwire.Msg{Type: bootwire.Error, Kind: bootwire.KindPeerLost, Rank: 2, Text: "exit status 0"})
	err := recv(t, barrier, "Barrier")
	var pe *PeerError
	if !errors.As(err, &pe) || pe.Rank != 2 || !errors.Is(err, ErrPeerLost) {
		t.Errorf("Barrier: %v, want a PeerError for rank 2", err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if m := f.read(); m.Type != bootwire.Close {
		t.Errorf("Close sent %v", m.Type)
	}
}

func TestClientFailed(t *testing.T) {
	f := newFake(t)
	b := f.joined()
	fence := async(b.Fence)
	f.read()
	f.send(bootwire.Msg{Type: bootwire.Failed, Kind: bootwire.KindAborted, Rank: 0, Text: "aborted the job with code 2: no"})
	want := "bootstrap: rank 0: aborted the job with code 2: no"
	if err := waitFailed(t, b); !errors.Is(err, ErrAborted) || err.Error() != want {
		t.Errorf("Failed: %v", err)
	}
	if err := recv(t, fence, "Fence"); err == nil || err.Error() != want {
		t.Errorf("pending Fence: %v, want %s", err, want)
	}
	if err := b.Barrier(); err == nil || err.Error() != want {
		t.Errorf("Barrier after Failed: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Errorf("Close after Failed: %v", err)
	}
}

func TestClientLauncherGone(t *testing.T) {
	f := newFake(t)
	b := f.joined()
	barrier := async(b.Barrier)
	f.read()
	f.conn.Close()
	var pe *PeerError
	if err := waitFailed(t, b); !errors.As(err, &pe) || pe.Rank != -1 || !errors.Is(err, ErrPeerLost) {
		t.Errorf("Failed: %v, want the launcher lost", err)
	}
	if err := recv(t, barrier, "Barrier"); !errors.Is(err, ErrPeerLost) {
		t.Errorf("pending Barrier: %v", err)
	}
	b.Close()
}

func TestClientCloseWhileWaiting(t *testing.T) {
	f := newFake(t)
	b := f.joined()
	fence := async(b.Fence)
	f.read()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := recv(t, fence, "Fence"); !errors.Is(err, ErrClosed) {
		t.Errorf("Fence under way at Close: %v, want ErrClosed", err)
	}
	select {
	case err := <-b.Failed():
		t.Errorf("Close made Failed fire: %v", err)
	default:
	}
}

func TestClientAbort(t *testing.T) {
	f := newFake(t)
	b := f.joined()
	if err := b.Abort(9, strings.Repeat("r", 5000)); err != nil {
		t.Fatal(err)
	}
	m := f.read()
	if m.Type != bootwire.Abort || m.Code != 9 || len(m.Text) != bootwire.MaxString {
		t.Errorf("sent %v code %d reason of %d bytes", m.Type, m.Code, len(m.Text))
	}
	if err := b.Fence(); !errors.Is(err, ErrAborted) {
		t.Errorf("Fence after Abort: %v, want ErrAborted", err)
	}
	select {
	case err := <-b.Failed():
		t.Errorf("a process's own Abort made its Failed fire: %v", err)
	default:
	}
	b.Close()
}

func TestClientJoinRefused(t *testing.T) {
	for _, tc := range []struct {
		reply bootwire.Msg
		want  error
	}{
		{bootwire.Msg{Type: bootwire.Error, Kind: bootwire.KindMismatch, Rank: -1, Text: "different binary"}, ErrMismatch},
		{bootwire.Msg{Type: bootwire.Error, Kind: bootwire.KindEnvironment, Rank: -1, Text: "bad rank"}, ErrEnvironment},
		{bootwire.Msg{Type: bootwire.Error, Kind: bootwire.KindProtocol, Rank: -1, Text: "?"}, ErrMismatch},
		{bootwire.Msg{Type: bootwire.Failed, Kind: bootwire.KindPeerLost, Rank: 0, Text: "exit status 1"}, ErrPeerLost},
		{bootwire.Msg{Type: bootwire.Record, Rank: 0, Key: "k"}, ErrMismatch},
	} {
		f := newFake(t)
		b, err := f.open(tc.reply)
		if !errors.Is(err, tc.want) || b != nil {
			t.Errorf("join answered by %v %v: %v, want %v", tc.reply.Type, tc.reply.Kind, err, tc.want)
		}
	}
}

func TestClientBadFrames(t *testing.T) {
	for name, frames := range map[string][]byte{
		"garbage":          {0, 0, 0, 3, 0xff, 0, 0},
		"record of rank 9": bootwire.Append(nil, &bootwire.Msg{Type: bootwire.Record, Rank: 9, Key: "k"}),
		"unexpected type":  bootwire.Append(nil, &bootwire.Msg{Type: bootwire.Put, Key: "k"}),
		"two answers":      bootwire.Append(bootwire.Append(nil, &bootwire.Msg{Type: bootwire.OK}), &bootwire.Msg{Type: bootwire.OK}),
	} {
		t.Run(name, func(t *testing.T) {
			f := newFake(t)
			b := f.joined()
			f.conn.Write(frames)
			if err := waitFailed(t, b); !errors.Is(err, ErrPeerLost) {
				t.Errorf("Failed: %v", err)
			}
			b.Close()
		})
	}
}
