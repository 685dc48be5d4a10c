package bootstrap

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fibermpi/fibermpi/internal/bootwire"
)

// The environment fmpirun gives each process (see the package doc).
const (
	EnvBoot  = bootwire.EnvBoot  // path of fmpirun's unix socket, or "tcp:host:port" on another host
	EnvRank  = bootwire.EnvRank  // this process's rank
	EnvSize  = bootwire.EnvSize  // the number of processes
	EnvJobID = bootwire.EnvJobID // the job id
)

// fmpirunVars are the variables of an fmpirun launch, all required.
var fmpirunVars = [...]string{EnvRank, EnvSize, EnvJobID, EnvBoot}

// dialTimeout bounds connecting to fmpirun's socket, which accepts at once
// while it runs.
const dialTimeout = 5 * time.Second

func fmpirunClaims(env lookupFunc) bool {
	for _, v := range fmpirunVars {
		if _, ok := env(v); ok {
			return true
		}
	}
	return false
}

// fmpirunEnv reads and checks the fmpirun variables.
func fmpirunEnv(env lookupFunc) (rank, size int, jobID, sock string, err error) {
	var missing, set []string
	vals := make(map[string]string, len(fmpirunVars))
	for _, v := range fmpirunVars {
		if x, ok := env(v); ok && x != "" {
			vals[v] = x
			set = append(set, fmt.Sprintf("%s=%q", v, x))
		} else {
			missing = append(missing, v)
		}
	}
	if len(missing) > 0 {
		have := "none of the others is"
		if len(set) > 0 {
			have = strings.Join(set, ", ") + " set"
		}
		return 0, 0, "", "", fmt.Errorf("%w: fmpirun's environment is incomplete: %s not set (%s); was this process started by fmpirun?",
			ErrEnvironment, strings.Join(missing, ", "), have)
	}
	size, err = strconv.Atoi(vals[EnvSize])
	if err != nil || size < 1 {
		return 0, 0, "", "", fmt.Errorf("%w: %s=%q is not a job size (a positive integer)", ErrEnvironment, EnvSize, vals[EnvSize])
	}
	rank, err = strconv.Atoi(vals[EnvRank])
	if err != nil || rank < 0 || rank >= size {
		return 0, 0, "", "", fmt.Errorf("%w: %s=%q is not a rank below %s=%d", ErrEnvironment, EnvRank, vals[EnvRank], EnvSize, size)
	}
	return rank, size, vals[EnvJobID], vals[EnvBoot], nil
}

// client is a process's side of an fmpirun job.
type client struct {
	fate
	name       string
	server     serverInfo
	afterClose func() // rank 0 of a store job: waits for the others, stops the store
	rank, size int
	jobID      string
	conn       net.Conn

	reqMu   sync.Mutex          // one collective at a time
	wmu     sync.Mutex          // one write at a time
	replies chan bootwire.Msg   // OK and Error frames, from the reader to the waiting collective
	mu      sync.Mutex          // guards what follows
	records []map[string][]byte // by rank: what Get returns
	pending []byte              // encoded Put frames, sent with the next collective
	closed  bool
}

// openFmpirun connects to fmpirun and joins the job: it returns when every
// process has joined and fmpirun found them in agreement.
func openFmpirun(env lookupFunc) (Bootstrap, error) {
	rank, size, jobID, sock, err := fmpirunEnv(env)
	if err != nil {
		return nil, err
	}
	network, addr, endAfter := "unix", sock, time.Duration(0)
	if a, ok := strings.CutPrefix(sock, bootwire.TCPPrefix); ok {
		// A process fmpirun started on another host, through ssh: killing
		// ssh does not reach it, so it ends itself once the job failed or
		// fmpirun is gone, as a store job's processes do.
		network, addr, endAfter = "tcp", a, storeEndGrace
	}
	conn, err := net.DialTimeout(network, addr, dialTimeout)
	if err != nil {
		return nil, fmt.Errorf("%w: cannot reach fmpirun at %s=%s: %v (has the job ended, or is this environment left over from another one?)",
			ErrEnvironment, EnvBoot, sock, err)
	}
	return join(conn, "fmpirun", fmpirunServer, rank, size, jobID, endAfter)
}

// fmpirunServer names fmpirun in the errors of a lost connection.
var fmpirunServer = serverInfo{name: "fmpirun", death: "fmpirun died or was killed", rank: -1}

// serverInfo names the other end of a client's connection in its errors.
type serverInfo struct {
	name  string // "fmpirun", "the store on rank 0"
	death string // what a closed connection means
	rank  int    // the rank the server runs in, or -1 for a launcher
}

// join sends the Hello of rank on conn, a connection to a server of the
// bootwire protocol (fmpirun, or the store of the torchrun and slurm
// backends), and returns the client once the server answered that every
// process joined. It closes conn on failure.
// A positive endAfter makes the process end itself that long after a
// failure (see client.end).
func join(conn net.Conn, name string, server serverInfo, rank, size int, jobID string, endAfter time.Duration) (Bootstrap, error) {
	id, exe := exeIdentity()
	hello := bootwire.Msg{Type: bootwire.Hello, Version: bootwire.Version, Rank: int32(rank), Size: int32(size),
		PID: int32(os.Getpid()), JobID: jobID, Identity: id, Exe: exe, Host: hostIdentity()}
	if err := bootwire.Check(&hello); err != nil {
		conn.Close()
		return nil, fmt.Errorf("%w: %v", ErrEnvironment, err)
	}
	r := bootwire.NewReader(conn)
	m, err := joinReply(conn, r, &hello, server)
	if err != nil {
		conn.Close()
		return nil, err
	}
	if m.Type != bootwire.OK {
		conn.Close()
		return nil, replyError(m)
	}
	c := &client{
		name: name, server: server, rank: rank, size: size, jobID: hello.JobID, conn: conn,
		replies: make(chan bootwire.Msg, 1),
		records: make([]map[string][]byte, size),
	}
	c.fate.init(endAfter, c.end)
	go c.read(r)
	return c, nil
}

// joinReply sends hello and reads fmpirun's answer: OK, Error, or Failed if
// the job ended before everyone joined. It waits as long as the slowest
// process takes to start; fmpirun's -timeout bounds that.
func joinReply(conn net.Conn, r *bootwire.Reader, hello *bootwire.Msg, server serverInfo) (bootwire.Msg, error) {
	if _, err := conn.Write(bootwire.Append(nil, hello)); err != nil {
		return bootwire.Msg{}, &PeerError{Rank: -1, Cause: "cannot send the join request: " + err.Error(), Err: ErrPeerLost}
	}
	m, err := r.Read()
	if err != nil {
		return bootwire.Msg{}, connLost(server, err, "while joining")
	}
	if m.Type == bootwire.Record && m.Key == jobIDKey {
		// A store names the job before it answers (fmpirun never does).
		hello.JobID = string(m.Value)
		if m, err = r.Read(); err != nil {
			return bootwire.Msg{}, connLost(server, err, "while joining")
		}
	}
	switch m.Type {
	case bootwire.OK, bootwire.Error, bootwire.Failed:
		return m, nil
	}
	return bootwire.Msg{}, fmt.Errorf("%w: protocol error: %s answered the join with %v", ErrMismatch, server.name, m.Type)
}

// connLost is the error of a connection to the server that ended.
func connLost(server serverInfo, err error, when string) *PeerError {
	cause := "connection to " + server.name + " closed " + when + " (" + server.death + ")"
	if !errors.Is(err, io.EOF) {
		cause = fmt.Sprintf("connection to %s lost %s: %v", server.name, when, err)
	}
	return &PeerError{Rank: server.rank, Cause: cause, Err: ErrPeerLost}
}

// replyError turns an Error or Failed frame into the error the caller sees.
func replyError(m bootwire.Msg) error {
	switch m.Kind {
	case bootwire.KindEnvironment:
		return fmt.Errorf("%w: %s", ErrEnvironment, m.Text)
	case bootwire.KindMismatch:
		return fmt.Errorf("%w: %s", ErrMismatch, m.Text)
	case bootwire.KindAborted:
		return &PeerError{Rank: int(m.Rank), Cause: m.Text, Err: ErrAborted}
	case bootwire.KindPeerLost:
		return &PeerError{Rank: int(m.Rank), Cause: m.Text, Err: ErrPeerLost}
	}
	return fmt.Errorf("%w: protocol error reported by fmpirun: %s", ErrMismatch, m.Text)
}

// read is the reader goroutine: it files records, hands replies to the
// waiting collective and turns Failed frames and the end of the connection
// into die. It returns when the connection is closed.
func (c *client) read(r *bootwire.Reader) {
	defer close(c.done)
	for {
		m, err := r.Read()
		if err != nil {
			select {
			case <-c.closing:
			default:
				c.die(connLost(c.server, err, "while the job ran"), true)
			}
			return
		}
		switch m.Type {
		case bootwire.Record:
			if m.Rank < 0 || int(m.Rank) >= c.size {
				c.die(&PeerError{Rank: -1, Cause: fmt.Sprintf("protocol error: a record of rank %d in a job of %d", m.Rank, c.size), Err: ErrPeerLost}, true)
				continue
			}
			c.mu.Lock()
			if c.records[m.Rank] == nil {
				c.records[m.Rank] = make(map[string][]byte)
			}
			c.records[m.Rank][m.Key] = m.Value
			c.mu.Unlock()
		case bootwire.OK, bootwire.Error:
			select {
			case c.replies <- m:
			default:
				c.die(&PeerError{Rank: -1, Cause: "protocol error: an answer nobody asked for", Err: ErrPeerLost}, true)
			}
		case bootwire.Failed:
			c.die(replyError(m), true)
		default:
			c.die(&PeerError{Rank: -1, Cause: fmt.Sprintf("protocol error: unexpected %v frame", m.Type), Err: ErrPeerLost}, true)
		}
	}
}

// end is what a store job does when the process neither closed its
// bootstrap nor exited within endAfter of the job's failure: no launcher
// will kill it, so it ends itself, naming the cause, with the abort's code
// or 1.
func (c *client) end(err error) {
	select {
	case <-c.closing:
		return
	default:
	}
	code := 1
	if pe, ok := errors.AsType[*PeerError](err); ok && errors.Is(err, ErrAborted) {
		var n int
		if _, serr := fmt.Sscanf(pe.Cause, "aborted the job with code %d", &n); serr == nil && n != 0 {
			code = n
		}
	}
	fmt.Fprintf(os.Stderr, "%v; ending this process (exit status %d): the job is over\n", err, code)
	exit(code)
}

// exit ends the process; tests replace it.
var exit = os.Exit

func (c *client) Name() string  { return c.name }
func (c *client) Rank() int     { return c.rank }
func (c *client) Size() int     { return c.size }
func (c *client) JobID() string { return c.jobID }
func (c *client) Host() string  { return hostIdentity() }

func (c *client) Put(key string, value []byte) error {
	if err := checkRecord(key, value); err != nil {
		return err
	}
	m := bootwire.Msg{Type: bootwire.Put, Key: key, Value: value}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	c.pending = bootwire.Append(c.pending, &m)
	if c.records[c.rank] == nil {
		c.records[c.rank] = make(map[string][]byte)
	}
	c.records[c.rank][key] = append([]byte(nil), value...)
	return nil
}

func (c *client) Get(rank int, key string) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrClosed
	}
	if rank < 0 || rank >= c.size {
		return nil, fmt.Errorf("%w: rank %d of a job of %d", ErrRank, rank, c.size)
	}
	v, ok := c.records[rank][key]
	if !ok {
		return nil, fmt.Errorf("%w: rank %d published no %q before the last fence", ErrNotFound, rank, key)
	}
	return append([]byte(nil), v...), nil
}

func (c *client) Fence() error   { return c.collective(bootwire.Fence) }
func (c *client) Barrier() error { return c.collective(bootwire.Barrier) }

// collective sends the pending Puts and the collective's frame in one write
// and waits for fmpirun's answer, which comes when every process has called
// the same collective.
func (c *client) collective(t bootwire.Type) error {
	c.reqMu.Lock()
	defer c.reqMu.Unlock()
	if err := c.usable(); err != nil {
		return err
	}
	c.mu.Lock()
	buf := bootwire.Append(c.pending, &bootwire.Msg{Type: t})
	c.pending = nil
	c.mu.Unlock()
	if err := c.write(buf); err != nil {
		return err
	}
	var m bootwire.Msg
	select {
	case m = <-c.replies:
	case <-c.dead:
		// The reader hands over a reply before it reads what follows: a
		// collective that completed before the job failed has its answer
		// here already.
		select {
		case m = <-c.replies:
		default:
			return c.deadErr
		}
	case <-c.closing:
		return ErrClosed
	}
	if m.Type == bootwire.OK {
		return nil
	}
	return replyError(m)
}

func (c *client) write(b []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if _, err := c.conn.Write(b); err != nil {
		select {
		case <-c.closing:
			return ErrClosed
		default:
		}
		pe := connLost(c.server, err, "while sending")
		c.die(pe, true)
		return c.deadErr
	}
	return nil
}

func (c *client) Abort(code int, reason string) error {
	if err := c.usable(); err != nil && !errors.As(err, new(*PeerError)) {
		return err // closed; after a failure the abort is still worth sending
	}
	if len(reason) > bootwire.MaxString {
		reason = reason[:bootwire.MaxString]
	}
	if err := c.write(bootwire.Append(nil, &bootwire.Msg{Type: bootwire.Abort, Code: int32(code), Text: reason})); err != nil {
		return err
	}
	// fmpirun tells the others; this process's pending and later calls end
	// here, with the abort as their error.
	c.die(&PeerError{Rank: c.rank, Cause: bootwire.AbortCause(int32(code), reason), Err: ErrAborted}, false)
	return nil
}

func (c *client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return ErrClosed
	}
	c.closed = true
	c.pending = nil
	c.mu.Unlock()
	close(c.closing)
	if t := c.endTimer.Load(); t != nil {
		t.Stop()
	}
	var err error
	select {
	case <-c.dead:
	default:
		c.wmu.Lock()
		_, err = c.conn.Write(bootwire.Append(nil, &bootwire.Msg{Type: bootwire.Close}))
		c.wmu.Unlock()
	}
	if cerr := c.conn.Close(); err == nil {
		err = cerr
	}
	<-c.done
	if c.afterClose != nil {
		c.afterClose()
	}
	if err != nil {
		return fmt.Errorf("bootstrap: closing the connection to %s: %w", c.server.name, err)
	}
	return nil
}
