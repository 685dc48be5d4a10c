package launch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fibermpi/fibermpi/internal/bootwire"
)

// job is one run: its processes, their connections and the collective
// under way. Everything but the goroutines' plumbing is touched only by
// loop (and by Run before and after it).
type job struct {
	cfg    Config
	id     string
	dir    string // the socket's private directory
	sock   string
	ln     *net.UnixListener
	tcp    []net.Listener    // for the processes of other hosts (hosts.go)
	hostOf []string          // each rank's host, nil when every process runs here
	remote []bool            // each rank's host is another (nil: none is)
	boot   map[string]string // FIBERMPI_BOOT of the processes of each remote host
	events chan any
	quit   chan struct{} // closed when the loop is over
	wg     sync.WaitGroup

	procs      []*proc
	byPid      map[int]*proc // the processes started, by pid
	unresolved int           // processes whose exit is not yet classified
	fail       *Failure      // the first cause of the job's end; nil while all goes well
	notice     []byte        // the Failed frame telling fail to the processes
	graceC     <-chan time.Time

	// the collective under way: every process's first is the join (Hello)
	kind    bootwire.Type
	arrived int
	epoch   []byte // Record frames put since the last fence
	fences  int

	out *outputs
}

// proc is one process of the job.
type proc struct {
	rank     int
	cmd      *exec.Cmd
	peer     *peer        // its connection once its Hello was accepted; nil after it ended
	hello    bootwire.Msg // what it said when it joined
	joined   bool         // its Hello was accepted (a second one for this rank is refused)
	arrived  bool         // at the collective under way
	closed   bool         // it sent Close
	connEnd  bool         // its connection ended
	exited   bool         // it was reaped
	state    *os.ProcessState
	resolved bool
	left     string // why it can no longer take part in collectives; "" while it can
	timer    *time.Timer
}

// peer is one connection, with its writer goroutine fed by out.
type peer struct {
	conn   net.Conn
	remote bool // over TCP, from another host: its pid means nothing here
	out    chan []byte
	proc   *proc // nil until its Hello is accepted
	gone   bool  // out is closed
}

// Events the goroutines send to the loop.
type (
	evFrame struct {
		p *peer
		m bootwire.Msg
	}
	evConnEnd struct {
		p   *peer
		err error
	}
	evExit struct {
		pr    *proc
		state *os.ProcessState
	}
	evTimer struct{ pr *proc }
)

// Run runs the job described by cfg and returns when every process has
// exited: nil if all exited with status 0, else a *Failure naming the first
// cause (other errors for a Config it cannot start). Cancelling ctx ends
// the job as a failure would (code CodeCancelled).
func Run(ctx context.Context, cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if cfg.Grace == 0 {
		cfg.Grace = DefaultGrace
	}
	if cfg.Stdout == nil {
		cfg.Stdout = os.Stdout
	}
	if cfg.Stderr == nil {
		cfg.Stderr = os.Stderr
	}
	if cfg.ShmDir == "" {
		cfg.ShmDir = "/dev/shm"
	}
	path, err := exec.LookPath(cfg.Program)
	if err != nil {
		return &Failure{Rank: -1, Cause: fmt.Sprintf("cannot run %s: %v", cfg.Program, err), Code: CodeNotFound}
	}
	j := &job{cfg: cfg, id: bootwire.NewJobID(), events: make(chan any, 64), quit: make(chan struct{})}
	if err := j.listen(); err != nil {
		return err
	}
	defer j.cleanup()
	if err := j.placeHosts(); err != nil {
		return &Failure{Rank: -1, Cause: err.Error(), Code: 1}
	}
	j.out = newOutputs(&cfg)
	j.logf("job %s: %d processes of %s; socket %s", j.id, cfg.N, path, j.sock)
	j.wg.Add(1 + len(j.tcp))
	go j.accept(j.ln, false)
	for _, ln := range j.tcp {
		go j.accept(ln, true)
	}
	j.start(path)
	j.loop(ctx)
	return errOrNil(j.fail)
}

func errOrNil(f *Failure) error {
	if f == nil {
		return nil
	}
	return f
}

func (j *job) logf(format string, args ...any) {
	if j.cfg.Log != nil {
		fmt.Fprintf(j.cfg.Log, "fmpirun: "+format+"\n", args...)
	}
}

// listen makes the socket in a fresh 0700 directory; a path too long for a
// unix socket falls back to /tmp.
func (j *job) listen() error {
	dir, err := os.MkdirTemp(j.cfg.SockDir, "fmpirun-")
	if err == nil && len(dir) > 90 {
		os.Remove(dir)
		dir, err = os.MkdirTemp("/tmp", "fmpirun-")
	}
	if err != nil {
		return fmt.Errorf("launch: socket directory: %w", err)
	}
	j.dir, j.sock = dir, filepath.Join(dir, "boot.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: j.sock, Net: "unix"})
	if err != nil {
		os.RemoveAll(dir)
		return fmt.Errorf("launch: %w", err)
	}
	j.ln = ln
	return nil
}

// cleanup runs when the loop is over: it stops the goroutines (closing
// quit ends every connection), removes the socket and the job's
// shared-memory files.
func (j *job) cleanup() {
	close(j.quit)
	j.ln.Close()
	for _, ln := range j.tcp {
		ln.Close()
	}
	for _, pr := range j.procs {
		if pr.timer != nil {
			pr.timer.Stop()
		}
	}
	if j.out != nil {
		j.out.finish(time.Second)
	}
	j.wg.Wait()
	os.RemoveAll(j.dir)
	j.removeShm()
	j.removeRemoteShm()
}

// removeShm removes the job's shared-memory files, whatever became of it.
func (j *job) removeShm() {
	files, _ := filepath.Glob(filepath.Join(j.cfg.ShmDir, "fibermpi-"+j.id+"*"))
	for _, f := range files {
		if err := os.Remove(f); err == nil {
			j.logf("removed %s", f)
		} else if !errors.Is(err, os.ErrNotExist) {
			fmt.Fprintf(j.cfg.Stderr, "fmpirun: %v\n", err)
		}
	}
}

// childEnv is base without any bootstrap variable, then this rank's.
func (j *job) childEnv(base []string, rank int) []string {
	env := make([]string, 0, len(base)+4)
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case bootwire.EnvBoot, bootwire.EnvRank, bootwire.EnvSize, bootwire.EnvJobID, bootwire.EnvBootstrap:
			continue
		}
		env = append(env, kv)
	}
	return append(env,
		bootwire.EnvBoot+"="+j.sock,
		bootwire.EnvRank+"="+strconv.Itoa(rank),
		bootwire.EnvSize+"="+strconv.Itoa(j.cfg.N),
		bootwire.EnvJobID+"="+j.id)
}

// start starts the processes; a failure to start one ends the job.
func (j *job) start(path string) {
	base := j.cfg.Env
	if base == nil {
		base = os.Environ()
	}
	j.procs = make([]*proc, j.cfg.N)
	j.byPid = make(map[int]*proc, j.cfg.N)
	for r := range j.procs {
		j.procs[r] = &proc{rank: r}
	}
	for _, pr := range j.procs {
		cmd := exec.Command(path, j.cfg.Args...)
		cmd.Env = j.childEnv(base, pr.rank)
		if j.remote != nil && j.remote[pr.rank] {
			cmd = j.remoteCmd(base, pr.rank, path)
		}
		cmd.Dir = j.cfg.Dir
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if pr.rank == 0 && j.cfg.Stdin != nil {
			if st, err := j.cfg.Stdin.Stat(); err == nil && st.Mode()&os.ModeCharDevice == 0 {
				cmd.Stdin = j.cfg.Stdin
			}
		}
		var err error
		cmd.Stdout, cmd.Stderr, err = j.out.files(pr.rank)
		if err == nil {
			err = cmd.Start()
		}
		j.out.started(pr.rank)
		if err != nil {
			for _, q := range j.procs[pr.rank:] {
				q.resolved, q.left = true, "never started"
			}
			j.end(&Failure{Rank: pr.rank, Cause: "cannot start: " + err.Error(), Code: 1}, bootwire.KindPeerLost)
			j.kill(syscall.SIGKILL)
			return
		}
		pr.cmd = cmd
		j.byPid[cmd.Process.Pid] = pr
		j.unresolved++
		j.logf("rank %d: pid %d", pr.rank, cmd.Process.Pid)
		j.wg.Add(1)
		go func() {
			defer j.wg.Done()
			cmd.Wait()
			j.send(evExit{pr, cmd.ProcessState})
		}()
	}
}

// send hands an event to the loop, unless the loop is over.
func (j *job) send(ev any) {
	select {
	case j.events <- ev:
	case <-j.quit:
	}
}

func (j *job) accept(ln net.Listener, remote bool) {
	defer j.wg.Done()
	for {
		conn, err := ln.Accept()
		if err != nil {
			return // the listener was closed
		}
		p := &peer{conn: conn, remote: remote, out: make(chan []byte, 8)}
		j.wg.Add(2)
		go j.write(p)
		go j.read(p)
	}
}

// read passes p's frames to the loop, the first within handshakeTimeout.
func (j *job) read(p *peer) {
	defer j.wg.Done()
	r := bootwire.NewReader(p.conn)
	p.conn.SetReadDeadline(time.Now().Add(handshakeTimeout))
	for first := true; ; first = false {
		m, err := r.Read()
		if err != nil {
			j.send(evConnEnd{p, err})
			return
		}
		if first {
			p.conn.SetReadDeadline(time.Time{})
		}
		j.send(evFrame{p, m})
	}
}

// write sends what the loop queues on p.out, and closes the connection
// when the loop closes p.out or is over (which also ends read).
func (j *job) write(p *peer) {
	defer j.wg.Done()
	defer p.conn.Close()
	for {
		select {
		case b, ok := <-p.out:
			if !ok {
				return
			}
			p.conn.SetWriteDeadline(time.Now().Add(writeTimeout))
			if _, err := p.conn.Write(b); err != nil {
				return // read sees the connection end
			}
		case <-j.quit:
			return
		}
	}
}

// put queues a frame for p; a process that does not read its answers is
// dropped.
func (j *job) put(p *peer, b []byte) {
	if p.gone {
		return
	}
	select {
	case p.out <- b:
	default:
		j.logf("a process does not read its connection; dropping it")
		j.drop(p)
	}
}

// drop closes p (after what is queued is written).
func (j *job) drop(p *peer) {
	if !p.gone {
		p.gone = true
		close(p.out)
	}
	if p.proc != nil && p.proc.peer == p {
		p.proc.peer = nil
	}
}

func frame(m bootwire.Msg) []byte { return bootwire.Append(nil, &m) }

// loop takes every decision of the job, until every process is resolved.
func (j *job) loop(ctx context.Context) {
	var timeoutC <-chan time.Time
	if j.cfg.Timeout > 0 {
		t := time.NewTimer(j.cfg.Timeout)
		defer t.Stop()
		timeoutC = t.C
	}
	done := ctx.Done()
	for j.unresolved > 0 {
		select {
		case ev := <-j.events:
			j.handle(ev)
		case sig := <-j.cfg.Signals:
			j.logf("forwarding %v to every process", sig)
			if s, ok := sig.(syscall.Signal); ok {
				j.kill(s)
			}
		case <-timeoutC:
			timeoutC = nil
			j.end(&Failure{Rank: -1, Cause: fmt.Sprintf("the job timed out after %v", j.cfg.Timeout), Code: CodeTimeout}, bootwire.KindPeerLost)
		case <-done:
			done = nil
			j.end(&Failure{Rank: -1, Cause: "the job was cancelled: " + context.Cause(ctx).Error(), Code: CodeCancelled}, bootwire.KindPeerLost)
		case <-j.graceC:
			j.graceC = nil
			j.logf("grace period over; killing what is left")
			j.kill(syscall.SIGKILL)
		}
	}
}

func (j *job) handle(ev any) {
	switch ev := ev.(type) {
	case evFrame:
		if ev.p.gone {
			return
		}
		if ev.p.proc == nil {
			j.hello(ev.p, ev.m)
			return
		}
		j.frame(ev.p.proc, ev.m)
	case evConnEnd:
		pr := ev.p.proc
		j.drop(ev.p)
		if pr == nil || pr.connEnd {
			return
		}
		pr.connEnd = true
		switch {
		case pr.exited:
			j.resolve(pr)
		case pr.closed:
		default:
			j.arm(pr) // wait a moment for the exit that explains it
		}
	case evExit:
		pr := ev.pr
		pr.exited, pr.state = true, ev.state
		j.logf("rank %d: %s", pr.rank, describe(ev.state))
		if pr.peer != nil && !pr.connEnd {
			j.arm(pr) // frames (an Abort) may still be on their way
			return
		}
		j.resolve(pr)
	case evTimer:
		pr := ev.pr
		pr.timer = nil
		if pr.exited {
			j.resolve(pr)
		} else if pr.connEnd && !pr.closed {
			j.leave(pr, "closed its bootstrap connection without Close")
		}
	}
}

// arm starts pr's settle timer.
func (j *job) arm(pr *proc) {
	if pr.timer != nil {
		pr.timer.Stop()
	}
	pr.timer = time.AfterFunc(settle, func() { j.send(evTimer{pr}) })
}

// resolve classifies pr's exit: status 0 leaves the job, anything else
// ends it.
func (j *job) resolve(pr *proc) {
	if pr.resolved {
		return
	}
	pr.resolved = true
	j.unresolved--
	if pr.timer != nil {
		pr.timer.Stop()
		pr.timer = nil
	}
	if pr.peer != nil {
		j.drop(pr.peer)
	}
	cause, code := describe(pr.state), exitCode(pr.state)
	if j.remote != nil && j.remote[pr.rank] {
		cause += " (on " + j.hostOf[pr.rank] + ", through " + j.ssh()[0] + ")"
	}
	if code != 0 {
		j.leave(pr, cause)
		j.end(&Failure{Rank: pr.rank, Cause: cause, Code: code}, bootwire.KindPeerLost)
		return
	}
	if pr.closed {
		cause = "finalized (called Close) and " + cause
	}
	j.leave(pr, cause)
}

// leave records that pr can no longer take part in collectives, failing
// the one under way if it needs pr.
func (j *job) leave(pr *proc, why string) {
	if pr.left == "" {
		pr.left = why
		j.logf("rank %d left: %s", pr.rank, why)
	}
	j.settle()
}

// describe says how a process ended: "exit status 3", "killed by signal 9
// (SIGKILL)".
func describe(st *os.ProcessState) string {
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		s := fmt.Sprintf("killed by signal %d (%s)", int(ws.Signal()), unix.SignalName(ws.Signal()))
		if ws.CoreDump() {
			s += ", core dumped"
		}
		return s
	}
	return fmt.Sprintf("exit status %d", st.ExitCode())
}

// exitCode is a shell's $? for st: the status, or 128 + the signal.
func exitCode(st *os.ProcessState) int {
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return st.ExitCode()
}

// end begins the end of the job for f, unless it is already ending: the
// processes get a Failed notice of kind (at once if they are connected,
// as the answer to their join if they connect later) and the grace period
// starts.
func (j *job) end(f *Failure, kind bootwire.Kind) {
	if j.fail != nil {
		return
	}
	j.fail = f
	j.logf("the job fails: %v", f)
	j.notice = frame(bootwire.Msg{Type: bootwire.Failed, Kind: kind, Rank: int32(f.Rank), Text: f.Cause})
	for _, pr := range j.procs {
		if pr.rank != f.Rank && pr.peer != nil {
			j.put(pr.peer, j.notice)
		}
	}
	j.graceC = time.After(j.cfg.Grace)
}

// kill sends sig to the process group of every process not yet reaped.
func (j *job) kill(sig syscall.Signal) {
	for _, pr := range j.procs {
		if pr.cmd != nil && !pr.exited {
			signalGroup(pr, sig)
		}
	}
}

// signalGroup signals pr's process group (its pid: it was started with
// Setpgid), which holds whatever it started too.
func signalGroup(pr *proc, sig syscall.Signal) {
	syscall.Kill(-pr.cmd.Process.Pid, sig)
}

// hello handles the first frame of a connection: the join request. A
// refused request fails the job, in the name of the process that sent it
// (found by its pid, as fmpirun started it) or else of the rank it claims.
func (j *job) hello(p *peer, m bootwire.Msg) {
	var sender *proc
	if !p.remote {
		sender = j.byPid[int(m.PID)]
	}
	rank := int(m.Rank)
	if rank < 0 || rank >= j.cfg.N {
		rank = -1
	}
	refuse := func(kind bootwire.Kind, text string) {
		j.put(p, frame(bootwire.Msg{Type: bootwire.Error, Kind: kind, Rank: -1, Text: text}))
		j.drop(p)
		blame := rank
		if sender != nil {
			blame = sender.rank
		}
		if blame < 0 {
			j.logf("refused a connection: %s", text)
			return
		}
		j.end(&Failure{Rank: blame, Cause: "refused at the join: " + text, Code: 1}, bootwire.KindPeerLost)
	}
	switch {
	case j.notice != nil:
		j.put(p, j.notice) // the job is ending: that is the answer
		j.drop(p)
	case m.Type != bootwire.Hello:
		rank = -1
		refuse(bootwire.KindProtocol, fmt.Sprintf("the first frame is %v, not Hello", m.Type))
	case m.Version != bootwire.Version:
		refuse(bootwire.KindMismatch, fmt.Sprintf("pid %d speaks bootstrap protocol %d, fmpirun speaks %d", m.PID, m.Version, bootwire.Version))
	case m.JobID != j.id:
		rank = -1
		refuse(bootwire.KindMismatch, fmt.Sprintf("pid %d has %s=%s but this fmpirun runs job %s (an environment left over from another job?)",
			m.PID, bootwire.EnvJobID, m.JobID, j.id))
	case int(m.Size) != j.cfg.N:
		refuse(bootwire.KindMismatch, fmt.Sprintf("pid %d has %s=%d but fmpirun started %d processes", m.PID, bootwire.EnvSize, m.Size, j.cfg.N))
	case rank < 0:
		refuse(bootwire.KindEnvironment, fmt.Sprintf("pid %d claims rank %d of %d", m.PID, m.Rank, j.cfg.N))
	case sender != nil && sender.rank != rank:
		refuse(bootwire.KindMismatch, fmt.Sprintf("pid %d was started as rank %d but claims rank %d", m.PID, sender.rank, rank))
	case j.procs[rank].joined:
		refuse(bootwire.KindMismatch, fmt.Sprintf("pid %d claims rank %d, which pid %d joined already: did a process inherit another's environment?",
			m.PID, rank, j.procs[rank].hello.PID))
	case j.procs[rank].resolved || j.procs[rank].left != "":
		refuse(bootwire.KindMismatch, fmt.Sprintf("pid %d claims rank %d, whose process has left the job", m.PID, rank))
	default:
		pr := j.procs[rank]
		pr.peer, p.proc, pr.hello, pr.joined = p, pr, m, true
		j.logf("rank %d: pid %d joined (%s)", rank, m.PID, m.Identity)
		j.arrive(pr, bootwire.Hello)
	}
}

// frame handles a frame from a process that has joined.
func (j *job) frame(pr *proc, m bootwire.Msg) {
	switch m.Type {
	case bootwire.Put:
		j.epoch = bootwire.Append(j.epoch, &bootwire.Msg{Type: bootwire.Record, Rank: int32(pr.rank), Key: m.Key, Value: m.Value})
	case bootwire.Fence, bootwire.Barrier:
		if pr.arrived {
			j.protocol(pr, fmt.Sprintf("%v while waiting in %v", m.Type, j.kind))
			return
		}
		j.arrive(pr, m.Type)
	case bootwire.Abort:
		code := int(m.Code)
		if code < 0 || code > 255 {
			code = 1
		}
		j.end(&Failure{Rank: pr.rank, Cause: bootwire.AbortCause(m.Code, m.Text), Code: code}, bootwire.KindAborted)
	case bootwire.Close:
		pr.closed = true
		j.leave(pr, "finalized (called Close)")
	default:
		j.protocol(pr, fmt.Sprintf("unexpected %v frame", m.Type))
	}
}

// protocol ends the job for a process that broke the protocol.
func (j *job) protocol(pr *proc, text string) {
	if pr.peer != nil {
		j.put(pr.peer, frame(bootwire.Msg{Type: bootwire.Error, Kind: bootwire.KindProtocol, Rank: -1, Text: text}))
		j.drop(pr.peer)
	}
	j.leave(pr, "protocol error: "+text)
	j.end(&Failure{Rank: pr.rank, Cause: "protocol error: " + text, Code: 1}, bootwire.KindPeerLost)
}

// arrive records pr at the collective kind and completes or fails it.
func (j *job) arrive(pr *proc, kind bootwire.Type) {
	if j.arrived > 0 && kind != j.kind {
		var other *proc
		for _, q := range j.procs {
			if q.arrived {
				other = q
				break
			}
		}
		pr.arrived = true
		j.arrived++
		j.failCollective(bootwire.KindMismatch, pr.rank, fmt.Sprintf("rank %d called %v while rank %d called %v", pr.rank, kind, other.rank, j.kind))
		return
	}
	j.kind = kind
	pr.arrived = true
	j.arrived++
	j.settle()
}

// settle completes the collective under way if every process is there, or
// fails it if one that is not there has left.
func (j *job) settle() {
	if j.arrived == 0 {
		return
	}
	if j.arrived == j.cfg.N {
		j.complete()
		return
	}
	for _, pr := range j.procs {
		if !pr.arrived && pr.left != "" {
			j.failCollective(bootwire.KindPeerLost, pr.rank, pr.left)
			return
		}
	}
}

// complete answers a collective every process has joined.
func (j *job) complete() {
	var reply []byte
	switch j.kind {
	case bootwire.Hello:
		if bad, text := j.compareJoins(); bad >= 0 {
			j.failCollective(bootwire.KindMismatch, bad, text)
			j.end(&Failure{Rank: bad, Cause: "refused at the join: " + text, Code: 1}, bootwire.KindPeerLost)
			return
		}
		j.logf("all %d processes joined", j.cfg.N)
		reply = frame(bootwire.Msg{Type: bootwire.OK})
	case bootwire.Fence:
		j.fences++
		j.logf("fence %d: %d bytes of records", j.fences, len(j.epoch))
		reply = bootwire.Append(j.epoch, &bootwire.Msg{Type: bootwire.OK})
		j.epoch = nil
	default:
		reply = frame(bootwire.Msg{Type: bootwire.OK})
	}
	for _, pr := range j.procs {
		if pr.peer != nil {
			j.put(pr.peer, reply) // shared: writers only read it
		}
		pr.arrived = false
	}
	j.arrived = 0
}

// compareJoins checks that every process runs rank 0's executable; it
// returns the first that does not (or -1) and the message.
func (j *job) compareJoins() (int, string) {
	ref := &j.procs[0].hello
	for _, pr := range j.procs[1:] {
		if h := &pr.hello; h.Identity != ref.Identity {
			return pr.rank, fmt.Sprintf("rank %d (pid %d, %s) runs a different binary from rank 0 (pid %d, %s): %s, not %s",
				pr.rank, h.PID, h.Exe, ref.PID, ref.Exe, h.Identity, ref.Identity)
		}
	}
	return -1, ""
}

// failCollective answers every process waiting in the collective with an
// Error naming rank.
func (j *job) failCollective(kind bootwire.Kind, rank int, text string) {
	msg := frame(bootwire.Msg{Type: bootwire.Error, Kind: kind, Rank: int32(rank), Text: text})
	j.logf("%v fails: rank %d: %s", j.kind, rank, text)
	for _, pr := range j.procs {
		if pr.arrived && pr.peer != nil {
			j.put(pr.peer, msg)
		}
		pr.arrived = false
	}
	j.arrived = 0
}
