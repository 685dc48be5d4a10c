package bootstrap

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// The variables a PMI launcher (MPICH's mpiexec, srun --mpi=pmi2) gives
// each process.
const (
	EnvPMIFD    = "PMI_FD"    // an inherited socket connected to the PMI server
	EnvPMIPort  = "PMI_PORT"  // host:port of the PMI server, when there is no PMI_FD
	EnvPMIID    = "PMI_ID"    // this process's id for PMI_PORT
	EnvPMIRank  = "PMI_RANK"  // this process's rank
	EnvPMISize  = "PMI_SIZE"  // the number of processes
	EnvPMIJobID = "PMI_JOBID" // the job id (Slurm's PMI-2)
)

// pmiVars are the variables whose presence makes the pmi rows claim the
// environment.
var pmiVars = [...]string{EnvPMIFD, EnvPMIPort, EnvPMIRank, EnvPMISize}

func pmiClaims(env lookupFunc) bool {
	for _, v := range pmiVars {
		if _, ok := env(v); ok {
			return true
		}
	}
	return false
}

// pmi2Claims claims a PMI environment that says it is PMI-2's: Slurm's
// srun --mpi=pmi2 sets PMI_JOBID, which Hydra (PMI-1 by default) does not.
func pmi2Claims(env lookupFunc) bool {
	_, ok := env(EnvPMIJobID)
	return ok && pmiClaims(env)
}

// pmiEnv is what the environment says about a PMI launch.
type pmiEnv struct {
	fd         int    // PMI_FD, or -1
	port, id   string // PMI_PORT and PMI_ID when there is no PMI_FD
	rank, size int    // PMI_RANK and PMI_SIZE, or -1 when unset (PMI_PORT)
	jobID      string // PMI_JOBID, or ""
}

// readPMIEnv reads and checks the PMI variables: a PMI_FD or a PMI_PORT
// (with PMI_ID), and a consistent PMI_RANK and PMI_SIZE where set.
func readPMIEnv(env lookupFunc) (pmiEnv, error) {
	e := pmiEnv{fd: -1, rank: -1, size: -1}
	e.jobID, _ = env(EnvPMIJobID)
	get := func(k string) (string, bool) {
		v, ok := env(k)
		return v, ok && v != ""
	}
	fd, hasFD := get(EnvPMIFD)
	port, hasPort := get(EnvPMIPort)
	rank, hasRank := get(EnvPMIRank)
	size, hasSize := get(EnvPMISize)
	switch {
	case hasFD:
		n, err := strconv.Atoi(fd)
		if err != nil || n < 0 {
			return e, fmt.Errorf("%w: %s=%q is not a file descriptor", ErrEnvironment, EnvPMIFD, fd)
		}
		e.fd = n
		if !hasRank || !hasSize {
			return e, fmt.Errorf("%w: %s is set but %s=%q and %s=%q are not both set: a PMI launcher sets all three",
				ErrEnvironment, EnvPMIFD, EnvPMIRank, rank, EnvPMISize, size)
		}
	case hasPort:
		id, ok := get(EnvPMIID)
		if !ok {
			return e, fmt.Errorf("%w: %s=%q is set without %s", ErrEnvironment, EnvPMIPort, port, EnvPMIID)
		}
		if _, _, err := net.SplitHostPort(port); err != nil {
			return e, fmt.Errorf("%w: %s=%q is not host:port", ErrEnvironment, EnvPMIPort, port)
		}
		e.port, e.id = port, id
	default:
		return e, fmt.Errorf("%w: %s=%q and %s=%q are set but neither %s nor %s: this is not a complete PMI launch",
			ErrEnvironment, EnvPMIRank, rank, EnvPMISize, size, EnvPMIFD, EnvPMIPort)
	}
	if hasSize {
		n, err := strconv.Atoi(size)
		if err != nil || n < 1 {
			return e, fmt.Errorf("%w: %s=%q is not a job size (a positive integer)", ErrEnvironment, EnvPMISize, size)
		}
		e.size = n
	}
	if hasRank {
		n, err := strconv.Atoi(rank)
		if err != nil || n < 0 || (e.size > 0 && n >= e.size) {
			return e, fmt.Errorf("%w: %s=%q is not a rank below %s=%q", ErrEnvironment, EnvPMIRank, rank, EnvPMISize, size)
		}
		e.rank = n
	}
	return e, nil
}

// pmiClient is a process's side of a PMI-1 or PMI-2 job. PMI is request
// and answer, one at a time; a reader goroutine reads the answers so that
// the socket closing (the launcher died or ended the job) is seen at once.
type pmiClient struct {
	version    int // 1 or 2
	rank, size int
	jobID      string
	kvsname    string // PMI-1's key-value space
	slurm      bool   // the server is Slurm's (SLURM_JOB_ID is set)
	keyMax     int    // longest key the server takes
	valMax     int    // longest value the server takes
	conn       net.Conn
	stderr     io.Writer

	fate
	reqMu   sync.Mutex // one request at a time
	replies chan pmiMsg
	ending  atomic.Bool // set by Close before it finalizes: the server may then hang up

	mu      sync.Mutex
	pending map[string][]string // puts not yet sent: the encoded chunks by key
	order   []string            // the keys of pending, in the order of their Puts
	vers    map[string]int      // PMI-2: the version of each of this process's keys
	seen    map[string]int      // PMI-2: the latest version of others' records found, by "rank/key"
	own     map[string][]byte   // this process's records
	cache   map[string][]byte   // others' records read since the last fence, by "rank/key"
	closed  bool
}

func openPMI1(env lookupFunc) (Bootstrap, error) { return openPMI(env, 1) }
func openPMI2(env lookupFunc) (Bootstrap, error) { return openPMI(env, 2) }

// openPMI connects to the PMI server and initializes PMI version.
func openPMI(env lookupFunc, version int) (Bootstrap, error) {
	e, err := readPMIEnv(env)
	if err != nil {
		return nil, err
	}
	var conn net.Conn
	where := EnvPMIFD + "=" + strconv.Itoa(e.fd)
	if e.fd >= 0 {
		// Only a socket is taken (and its descriptor closed once
		// duplicated): a stale PMI_FD may name any file of this process.
		var st unix.Stat_t
		if err := unix.Fstat(e.fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFSOCK {
			why := "not a socket"
			if err != nil {
				why = err.Error()
			}
			return nil, fmt.Errorf("%w: %s=%d is not an open socket (%s): is this environment left over from another job?", ErrEnvironment, EnvPMIFD, e.fd, why)
		}
		f := os.NewFile(uintptr(e.fd), "PMI_FD")
		conn, err = net.FileConn(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%w: %s=%d is not an open socket: %v (has the environment been left over from another job?)",
				ErrEnvironment, EnvPMIFD, e.fd, err)
		}
	} else {
		where = EnvPMIPort + "=" + e.port
		conn, err = net.DialTimeout("tcp", e.port, dialTimeout)
		if err != nil {
			return nil, fmt.Errorf("%w: cannot reach the PMI server at %s=%s: %v", ErrEnvironment, EnvPMIPort, e.port, err)
		}
	}
	c := &pmiClient{
		version: version, rank: e.rank, size: e.size, conn: conn, stderr: os.Stderr,
		keyMax: 64, valMax: 1024, slurm: hasEnv(env, EnvSlurmJobID),
		replies: make(chan pmiMsg, 1),
		own:     make(map[string][]byte),
		pending: make(map[string][]string),
		vers:    make(map[string]int),
		seen:    make(map[string]int),
		cache:   make(map[string][]byte),
	}
	c.fate.init(pmiEndGrace, c.end)
	r := bufio.NewReader(conn)
	if err := c.handshake(r, e); err != nil {
		conn.Close()
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, &PeerError{Rank: -1, Cause: fmt.Sprintf("the PMI server (%s) closed the connection while this process joined", where), Err: ErrPeerLost}
		}
		return nil, err
	}
	go c.read(r)
	return c, nil
}

// handshake initializes PMI before the reader starts: it reads the answers
// itself.
func (c *pmiClient) handshake(r *bufio.Reader, e pmiEnv) error {
	ask := func(b []byte, want string) (pmiMsg, error) {
		if _, err := c.conn.Write(b); err != nil {
			return nil, err
		}
		var m pmiMsg
		var err error
		if c.version == 1 {
			m, err = readPMI1(r)
		} else {
			m, err = readPMI2(r)
		}
		if err != nil {
			return nil, err
		}
		if m.cmd() != want {
			return nil, fmt.Errorf("%w: PMI server answered %q with %q", ErrMismatch, strings.TrimSpace(string(b)), m.cmd())
		}
		if rc := m["rc"]; rc != "" && rc != "0" {
			return nil, fmt.Errorf("%w: PMI server refused %q: rc=%s %s", ErrEnvironment, strings.TrimSpace(string(b)), rc, m["msg"]+m["errmsg"])
		}
		return m, nil
	}
	if c.version == 1 {
		if e.port != "" {
			// The PMI_PORT handshake: the server answers with our size,
			// rank and debug flag.
			if _, err := ask(formatPMI1("initack", "pmiid", e.id), "initack"); err != nil {
				return err
			}
			for range 3 {
				m, err := readPMI1(r)
				if err != nil {
					return err
				}
				if m.cmd() != "set" {
					return fmt.Errorf("%w: PMI server sent %q after initack", ErrMismatch, m.cmd())
				}
				if v, ok := m["size"]; ok {
					c.size, _ = strconv.Atoi(v)
				}
				if v, ok := m["rank"]; ok {
					c.rank, _ = strconv.Atoi(v)
				}
			}
		}
		if _, err := ask(formatPMI1("init", "pmi_version", "1", "pmi_subversion", "1"), "response_to_init"); err != nil {
			return err
		}
		m, err := ask(formatPMI1("get_maxes"), "maxes")
		if err != nil {
			return err
		}
		if n, err := strconv.Atoi(m["keylen_max"]); err == nil && n > 8 {
			c.keyMax = n
		}
		if n, err := strconv.Atoi(m["vallen_max"]); err == nil && n > 32 {
			c.valMax = n
		}
		m, err = ask(formatPMI1("get_my_kvsname"), "my_kvsname")
		if err != nil {
			return err
		}
		c.kvsname = m["kvsname"]
		if c.kvsname == "" {
			return fmt.Errorf("%w: the PMI server gave no kvsname", ErrMismatch)
		}
		c.jobID = safeJobID(c.kvsname)
	} else {
		// PMI-2 starts with PMI-1's init line asking for version 2 (Slurm
		// requires it, Hydra accepts it), answered in PMI-1's format.
		if _, err := c.conn.Write(formatPMI1("init", "pmi_version", "2", "pmi_subversion", "0")); err != nil {
			return err
		}
		m, err := readPMI1(r)
		if err != nil {
			return err
		}
		if m.cmd() != "response_to_init" || m["rc"] != "0" || m["pmi_version"] != "2" {
			return fmt.Errorf("%w: the PMI server does not speak PMI-2: it answered init with %v", ErrEnvironment, map[string]string(m))
		}
		// Slurm wants the job id it gave (PMI_JOBID) with the rank.
		var kv []string
		if e.jobID != "" {
			kv = append(kv, "pmijobid", e.jobID)
		}
		if e.port != "" && e.rank < 0 {
			// PMI-2's fullinit names the process by pmirank; over
			// PMI_PORT the launcher gives no PMI_RANK but PMI_ID,
			// which is it (Hydra matches pmirank against the ranks it
			// started and refuses a fullinit without one).
			kv = append(kv, "pmirank", e.id)
		} else {
			kv = append(kv, "pmirank", strconv.Itoa(e.rank))
		}
		m, err = ask(formatPMI2("fullinit", append(kv, "threaded", "FALSE")...), "fullinit-response")
		if err != nil {
			return err
		}
		rank, rerr := strconv.Atoi(m["rank"])
		size, serr := strconv.Atoi(m["size"])
		if rerr != nil || serr != nil {
			return fmt.Errorf("%w: PMI-2 fullinit answered rank=%q size=%q", ErrMismatch, m["rank"], m["size"])
		}
		if (e.rank >= 0 && rank != e.rank) || (e.size > 0 && size != e.size) {
			return fmt.Errorf("%w: %s=%d and %s=%d, but the PMI server says rank %d of %d", ErrEnvironment, EnvPMIRank, e.rank, EnvPMISize, e.size, rank, size)
		}
		c.rank, c.size = rank, size
		if e.jobID != "" {
			c.jobID = safeJobID(e.jobID)
		} else {
			if m, err = ask(formatPMI2("job-getid"), "job-getid-response"); err != nil {
				return err
			}
			c.jobID = safeJobID(m["jobid"])
		}
	}
	if c.size < 1 || c.rank < 0 || c.rank >= c.size {
		return fmt.Errorf("%w: the PMI server gave rank %d of %d", ErrEnvironment, c.rank, c.size)
	}
	if (e.rank >= 0 && c.rank != e.rank) || (e.size > 0 && c.size != e.size) {
		return fmt.Errorf("%w: %s=%d and %s=%d, but the PMI server says rank %d of %d", ErrEnvironment, EnvPMIRank, e.rank, EnvPMISize, e.size, c.rank, c.size)
	}
	return nil
}

// safeJobID makes a PMI job id or kvsname safe in a file name, and short.
func safeJobID(s string) string {
	b := []byte("pmi-")
	for i := 0; i < len(s) && len(b) < 48; i++ {
		switch ch := s[i]; {
		case ch >= 'a' && ch <= 'z', ch >= 'A' && ch <= 'Z', ch >= '0' && ch <= '9', ch == '-', ch == '_':
			b = append(b, ch)
		default:
			b = append(b, '_')
		}
	}
	if len(s) > 44 || string(b[4:]) != s {
		sum := sha256.Sum256([]byte(s))
		b = append(b[:min(len(b), 32)], '-')
		b = hex.AppendEncode(b, sum[:6])
	}
	return string(b)
}

// read is the reader goroutine: it hands answers to the waiting request and
// turns the end of the connection into the job's failure.
func (c *pmiClient) read(r *bufio.Reader) {
	defer close(c.done)
	for {
		var m pmiMsg
		var err error
		if c.version == 1 {
			m, err = readPMI1(r)
		} else {
			m, err = readPMI2(r)
		}
		if err != nil {
			select {
			case <-c.closing:
			default:
				if c.ending.Load() {
					c.die(ErrClosed, false)
					return
				}
				cause := fmt.Sprintf("the PMI server (mpiexec or srun) closed the connection while the job ran: it died or is ending the job (%v)", err)
				if errors.Is(err, io.EOF) {
					cause = "the PMI server (mpiexec or srun) closed the connection while the job ran: it died or is ending the job"
				}
				c.die(&PeerError{Rank: -1, Cause: cause, Err: ErrPeerLost}, true)
			}
			return
		}
		select {
		case c.replies <- m:
		default:
			c.die(&PeerError{Rank: -1, Cause: fmt.Sprintf("PMI protocol error: an answer nobody asked for (cmd=%s)", m.cmd()), Err: ErrPeerLost}, true)
		}
	}
}

// pmiEndGrace is how long a process may go on after its PMI server went
// away (Failed fired) before it ends itself, unless it closed its
// bootstrap: a launcher that died cannot kill it, and its job is over.
const pmiEndGrace = time.Second

// end ends the process after the PMI server went away, naming the cause.
func (c *pmiClient) end(err error) {
	if c.ending.Load() {
		return
	}
	fmt.Fprintf(c.stderr, "%v; ending this process (exit status 1): the job is over\n", err)
	exit(1)
}

// request sends one command and waits for its answer, which must be want
// with rc=0 (or no rc). The caller holds reqMu.
func (c *pmiClient) request(b []byte, want string) (pmiMsg, error) {
	if err := c.usable(); err != nil {
		return nil, err
	}
	if _, err := c.conn.Write(b); err != nil {
		if e := c.usable(); e != nil {
			return nil, e
		}
		pe := &PeerError{Rank: -1, Cause: "cannot write to the PMI server: " + err.Error(), Err: ErrPeerLost}
		c.die(pe, true)
		return nil, c.deadErr
	}
	var m pmiMsg
	select {
	case m = <-c.replies:
	case <-c.dead:
		select {
		case m = <-c.replies:
		default:
			return nil, c.deadErr
		}
	case <-c.closing:
		return nil, ErrClosed
	}
	if m.cmd() != want {
		pe := &PeerError{Rank: -1, Cause: fmt.Sprintf("PMI protocol error: %q answered with cmd=%s", strings.TrimSpace(string(b)), m.cmd()), Err: ErrPeerLost}
		c.die(pe, true)
		return nil, pe
	}
	return m, nil
}

func (c *pmiClient) Name() string {
	if c.version == 2 {
		return "pmi2"
	}
	return "pmi"
}
func (c *pmiClient) Rank() int     { return c.rank }
func (c *pmiClient) Size() int     { return c.size }
func (c *pmiClient) JobID() string { return c.jobID }
func (c *pmiClient) Host() string  { return hostIdentity() }

// kvsKey is the PMI key of chunk i of version ver of rank's record key:
// "<rank>/<key>" when that is short and plain enough, else a hash of the
// key, then "~<chunk>" and "^<ver>" when not 0.
//
// Versions exist because a PMI-2 server (Hydra's) keeps the first value
// put under a key: a record replaced in a later epoch is put under the
// next version's key, and Get reads versions until one is missing.
func (c *pmiClient) kvsKey(rank int, key string, chunk, ver int) string {
	base := strconv.Itoa(rank) + "/" + key
	plain := len(base)+16 < c.keyMax
	for i := 0; plain && i < len(key); i++ {
		ch := key[i]
		plain = ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || strings.IndexByte("/_.:-", ch) >= 0
	}
	if !plain {
		sum := sha256.Sum256([]byte(key))
		base = strconv.Itoa(rank) + "#" + hex.EncodeToString(sum[:12])
	}
	if chunk > 0 {
		base += "~" + strconv.Itoa(chunk)
	}
	if ver > 0 {
		base += "^" + strconv.Itoa(ver)
	}
	return base
}

// chunkHex is how many hex digits of a value one PMI value carries.
func (c *pmiClient) chunkHex() int { return (c.valMax - 16) &^ 1 }

// encode splits value into the PMI values of its chunks: the first is
// "<chunks>:<hex>", the others "<hex>".
func (c *pmiClient) encode(value []byte) []string {
	h := hex.EncodeToString(value)
	n := c.chunkHex()
	parts := []string{}
	for len(h) > n {
		parts = append(parts, h[:n])
		h = h[n:]
	}
	parts = append(parts, h)
	parts[0] = strconv.Itoa(len(parts)) + ":" + parts[0]
	return parts
}

func (c *pmiClient) Put(key string, value []byte) error {
	if err := checkRecord(key, value); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	if _, ok := c.pending[key]; !ok {
		c.order = append(c.order, key)
		if v, ok := c.vers[key]; ok && c.version == 2 {
			c.vers[key] = v + 1
		} else {
			c.vers[key] = 0
		}
	}
	c.pending[key] = c.encode(value)
	c.own[key] = append([]byte(nil), value...)
	return nil
}

// get asks the server for one PMI key; found is false if it has none.
func (c *pmiClient) get(k string) (v string, found bool, err error) {
	if c.version == 1 {
		m, err := c.request(formatPMI1("get", "kvsname", c.kvsname, "key", k), "get_result")
		if err != nil {
			return "", false, err
		}
		return m["value"], m["rc"] == "0", nil
	}
	m, err := c.request(formatPMI2("kvs-get", "key", k), "kvs-get-response")
	if err != nil {
		return "", false, err
	}
	return m["value"], m["found"] == "TRUE" && m["rc"] == "0", nil
}

// Get returns this process's own records at once; another process's record
// takes a round trip to the PMI server (on this node) the first time after
// each Fence, which parks the calling goroutine.
func (c *pmiClient) Get(rank int, key string) ([]byte, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, ErrClosed
	}
	if rank < 0 || rank >= c.size {
		c.mu.Unlock()
		return nil, fmt.Errorf("%w: rank %d of a job of %d", ErrRank, rank, c.size)
	}
	if rank == c.rank {
		v, ok := c.own[key]
		c.mu.Unlock()
		if !ok {
			return nil, fmt.Errorf("%w: rank %d published no %q", ErrNotFound, rank, key)
		}
		return append([]byte(nil), v...), nil
	}
	ck := strconv.Itoa(rank) + "/" + key
	if v, ok := c.cache[ck]; ok {
		c.mu.Unlock()
		return append([]byte(nil), v...), nil
	}
	c.mu.Unlock()

	c.reqMu.Lock()
	defer c.reqMu.Unlock()
	c.mu.Lock()
	ver := c.seen[ck]
	c.mu.Unlock()
	v, ok, err := c.fetch(rank, key, ver)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: rank %d published no %q before the last fence", ErrNotFound, rank, key)
	}
	for c.version == 2 {
		next, ok, err := c.fetch(rank, key, ver+1)
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		v, ver = next, ver+1
	}
	c.mu.Lock()
	if !c.closed {
		c.cache[ck] = v
		c.seen[ck] = ver
	}
	c.mu.Unlock()
	return append([]byte(nil), v...), nil
}

// fetch reads version ver of rank's record key from the server: its first
// chunk, which says how many there are, then the others. The caller holds
// reqMu.
func (c *pmiClient) fetch(rank int, key string, ver int) ([]byte, bool, error) {
	first, ok, err := c.get(c.kvsKey(rank, key, 0, ver))
	if err != nil || !ok {
		return nil, false, err
	}
	ns, h, ok := strings.Cut(first, ":")
	n, err := strconv.Atoi(ns)
	if !ok || err != nil || n < 1 || n > MaxValue/(c.chunkHex()/2)+1 {
		return nil, false, fmt.Errorf("%w: rank %d's record %q is not fibermpi's (%.40q)", ErrMismatch, rank, key, first)
	}
	var sb strings.Builder
	sb.WriteString(h)
	for i := 1; i < n; i++ {
		part, ok, err := c.get(c.kvsKey(rank, key, i, ver))
		if err != nil {
			return nil, false, err
		}
		if !ok {
			return nil, false, fmt.Errorf("%w: rank %d's record %q lacks chunk %d of %d", ErrMismatch, rank, key, i, n)
		}
		sb.WriteString(part)
	}
	v, err := hex.DecodeString(sb.String())
	if err != nil {
		return nil, false, fmt.Errorf("%w: rank %d's record %q: %v", ErrMismatch, rank, key, err)
	}
	return v, true, nil
}

// Fence sends the pending Puts, one request each, then waits in PMI's
// barrier (PMI-1) or kvs-fence (PMI-2).
func (c *pmiClient) Fence() error {
	c.reqMu.Lock()
	defer c.reqMu.Unlock()
	if err := c.usable(); err != nil {
		return err
	}
	c.mu.Lock()
	var puts [][2]string
	for _, key := range c.order {
		for i, part := range c.pending[key] {
			puts = append(puts, [2]string{c.kvsKey(c.rank, key, i, c.vers[key]), part})
		}
	}
	clear(c.pending)
	c.order = nil
	c.mu.Unlock()
	for _, kv := range puts {
		var m pmiMsg
		var err error
		if c.version == 1 {
			m, err = c.request(formatPMI1("put", "kvsname", c.kvsname, "key", kv[0], "value", kv[1]), "put_result")
		} else {
			m, err = c.request(formatPMI2("kvs-put", "key", kv[0], "value", kv[1]), "kvs-put-response")
		}
		if err != nil {
			return err
		}
		if m["rc"] != "0" {
			return fmt.Errorf("%w: the PMI server refused to store key %q: rc=%s %s", ErrRecord, kv[0], m["rc"], m["msg"]+m["errmsg"])
		}
	}
	if err := c.barrier(); err != nil {
		return err
	}
	c.mu.Lock()
	clear(c.cache)
	c.mu.Unlock()
	return nil
}

// pmi2BarrierKey is a key nobody puts (fibermpi's keys start with a rank):
// getting it after kvs-fence waits for the fence to complete everywhere.
const pmi2BarrierKey = "fibermpi-barrier"

// barrier is PMI's collective; the caller holds reqMu. PMI-2 has only
// kvs-fence, which Slurm makes a barrier but Hydra (MPICH 4.0) answers at
// once, having only flushed this process's puts; Hydra holds a kvs-get of
// a missing key until every process has fenced, so a get of a key nobody
// puts follows the fence and makes it a barrier under both (Slurm answers
// it at once, not found).
func (c *pmiClient) barrier() error {
	var m pmiMsg
	var err error
	if c.version == 1 {
		m, err = c.request(formatPMI1("barrier_in"), "barrier_out")
	} else {
		m, err = c.request(formatPMI2("kvs-fence"), "kvs-fence-response")
		if err == nil && (m["rc"] == "" || m["rc"] == "0") {
			_, _, err = c.get(pmi2BarrierKey)
		}
	}
	if err != nil {
		return err
	}
	if rc := m["rc"]; rc != "" && rc != "0" {
		return &PeerError{Rank: -1, Cause: fmt.Sprintf("the PMI server failed the barrier: rc=%s %s", rc, m["msg"]+m["errmsg"]), Err: ErrPeerLost}
	}
	return nil
}

// Barrier waits in PMI's barrier; Puts stay pending for the next Fence.
func (c *pmiClient) Barrier() error {
	c.reqMu.Lock()
	defer c.reqMu.Unlock()
	return c.barrier()
}

// Abort prints the reason once, here, and asks the PMI server to end the
// job with code: mpiexec and srun then kill every process and exit with it.
func (c *pmiClient) Abort(code int, reason string) error {
	if err := c.usable(); err != nil && !errors.As(err, new(*PeerError)) {
		return err
	}
	fmt.Fprintf(c.stderr, "bootstrap: rank %d aborted the job with code %d: %s\n", c.rank, code, reason)
	// The launcher kills the job as soon as it reads the abort, and may
	// not have forwarded the reason from this process's stderr by then
	// (Hydra lost it now and then): a short pause lets it read both.
	time.Sleep(abortPause)
	// Hydra (MPICH 4.0) does not know PMI-2's abort command but takes
	// PMI-1's on a PMI-2 connection; Slurm knows PMI-2's. The reason is
	// printed here, so the server gets only a pointer to it.
	b := formatPMI1("abort", "exitcode", strconv.Itoa(code))
	if c.version == 2 && c.slurm {
		b = formatPMI2("abort", "isworld", "1", "msg", fmt.Sprintf("rank %d called Abort with code %d (the reason is printed above)", c.rank, code))
	}
	if _, err := c.conn.Write(b); err != nil {
		return &PeerError{Rank: -1, Cause: "cannot send the abort to the PMI server: " + err.Error(), Err: ErrPeerLost}
	}
	c.die(&PeerError{Rank: c.rank, Cause: fmt.Sprintf("aborted the job with code %d: %s", code, reason), Err: ErrAborted}, false)
	return nil
}

// Close finalizes PMI (the launcher then counts this process as finished
// cleanly) and closes the connection.
func (c *pmiClient) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return ErrClosed
	}
	c.closed = true
	c.pending, c.order, c.own, c.cache = nil, nil, nil, nil
	c.mu.Unlock()
	var err error
	c.ending.Store(true)
	if t := c.endTimer.Load(); t != nil {
		t.Stop()
	}
	// A Fence or Get under way in another goroutine holds reqMu: it gets
	// ErrClosed below, and PMI is not finalized (the socket just closes).
	if c.usable() == nil && c.reqMu.TryLock() {
		if c.version == 1 {
			_, err = c.request(formatPMI1("finalize"), "finalize_ack")
		} else {
			_, err = c.request(formatPMI2("finalize"), "finalize-response")
		}
		c.reqMu.Unlock()
	}
	close(c.closing)
	if cerr := c.conn.Close(); err == nil {
		err = cerr
	}
	<-c.done
	if err != nil {
		return fmt.Errorf("bootstrap: finalizing PMI: %w", err)
	}
	return nil
}

// abortPause is the pause between printing an abort's reason and sending
// the abort.
const abortPause = 50 * time.Millisecond

func hasEnv(env lookupFunc, k string) bool {
	_, ok := env(k)
	return ok
}
