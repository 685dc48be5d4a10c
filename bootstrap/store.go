package bootstrap

import (
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/fibermpi/fibermpi/internal/bootwire"
)

// A store is the bootstrap server of a job whose launcher offers none
// (torchrun's variables, plain srun): rank 0 runs it on a TCP port every
// process can compute, as torch's TCPStore does, and every process,
// rank 0 included, is its client over the frames of internal/bootwire,
// exactly as under fmpirun. The store answers the join when all the
// processes are there and agree, keeps the records of a fence, and turns a
// connection that ends without Close into a Failed notice to the others
// naming the rank (the process died or was killed), and an Abort into one
// naming the aborting rank. Without a launcher nobody kills what is left:
// each process learns of the failure through Failed, and one that has
// neither exited nor closed its bootstrap a second later ends itself,
// printing the cause, with the abort's code or status 1.

// jobIDKey is the key of the Record by which a store names the job before
// it answers the join.
const jobIDKey = "fibermpi/jobid"

// storeDialWait bounds how long a process waits for rank 0's store to
// listen: the processes of a job start at about the same time, but not at
// once.
const storeDialWait = 60 * time.Second

// storeEndGrace is how long a process of a store job may go on after
// Failed fired before it ends itself (unless it closed its bootstrap: it
// handled the failure). fmpirun kills a job's processes after the same
// grace.
const storeEndGrace = time.Second

// storeWriteWait bounds one write to a process, so that one that stopped
// reading cannot stall the store.
const storeWriteWait = 10 * time.Second

// store is rank 0's server.
type store struct {
	ln     net.Listener
	n      int
	key    string // the job key every Hello must carry (from the environment)
	jobID  string // the job id the store hands out
	stderr io.Writer

	mu       sync.Mutex
	peers    []*storePeer // by rank, once joined
	joined   int
	conns    int            // connections open
	records  []bootwire.Msg // Record frames since the last fence
	coll     bootwire.Type  // the collective under way, or 0
	arrived  []bool
	narrived int
	failed   bool
	all      chan struct{} // closed when every process joined and then every connection ended
	allOnce  sync.Once
	wg       sync.WaitGroup
}

type storePeer struct {
	rank   int
	conn   net.Conn
	hello  bootwire.Msg
	closed bool // sent Close
}

// startStore listens on addr (falling back to every interface on its port
// when addr's host is not this machine's) and serves the job of n
// processes.
func startStore(addr string, n int, key string) (*store, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		_, port, _ := net.SplitHostPort(addr)
		var err2 error
		if ln, err2 = net.Listen("tcp", ":"+port); err2 != nil {
			return nil, fmt.Errorf("%w: rank 0 cannot listen for the job's store on %s: %v", ErrEnvironment, addr, err)
		}
	}
	s := &store{ln: ln, n: n, key: key, jobID: bootwire.NewJobID(), stderr: os.Stderr,
		peers: make([]*storePeer, n), arrived: make([]bool, n), all: make(chan struct{})}
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

func (s *store) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns++
		s.mu.Unlock()
		s.wg.Add(1)
		go s.serve(c)
	}
}

// stop waits until every process has left (or d has passed), then closes
// the listener and every connection and waits for the goroutines.
func (s *store) stop(d time.Duration) {
	select {
	case <-s.all:
	case <-time.After(d):
	}
	s.ln.Close()
	s.mu.Lock()
	for _, p := range s.peers {
		if p != nil {
			p.conn.Close()
		}
	}
	s.mu.Unlock()
	s.wg.Wait()
}

func (s *store) send(p *storePeer, m bootwire.Msg) {
	_ = p.conn.SetWriteDeadline(time.Now().Add(storeWriteWait))
	_, _ = p.conn.Write(bootwire.Append(nil, &m)) // a dead peer is noticed by its reader
}

// serve reads one connection: a Hello, then requests until it ends.
func (s *store) serve(c net.Conn) {
	defer s.wg.Done()
	r := bootwire.NewReader(c)
	var me *storePeer
	defer func() {
		c.Close()
		s.mu.Lock()
		defer s.mu.Unlock()
		s.conns--
		if me != nil && !me.closed && !s.failed {
			s.fail(me.rank, bootwire.KindPeerLost, "lost its connection to the store on rank 0: the process died or was killed")
		}
		if s.joined == s.n && s.conns == 0 || s.failed && s.conns == 0 {
			s.allOnce.Do(func() { close(s.all) })
		}
	}()
	for {
		m, err := r.Read()
		if err != nil {
			return
		}
		s.mu.Lock()
		if me == nil {
			me = s.hello(c, m)
			s.mu.Unlock()
			if me == nil {
				return
			}
			continue
		}
		quit := s.request(me, m)
		s.mu.Unlock()
		if quit {
			return
		}
	}
}

// hello checks a join and answers everyone once all joined; it returns the
// peer, or nil after refusing. s.mu is held.
func (s *store) hello(c net.Conn, m bootwire.Msg) *storePeer {
	refuse := func(kind bootwire.Kind, text string) *storePeer {
		tmp := &storePeer{rank: -1, conn: c}
		s.send(tmp, bootwire.Msg{Type: bootwire.Error, Kind: kind, Rank: m.Rank, Text: text})
		return nil
	}
	switch {
	case m.Type != bootwire.Hello:
		return refuse(bootwire.KindProtocol, fmt.Sprintf("the store expected Hello, not %v", m.Type))
	case m.Version != bootwire.Version:
		return refuse(bootwire.KindMismatch, fmt.Sprintf("bootstrap protocol version %d, the store speaks %d", m.Version, bootwire.Version))
	case m.JobID != s.key:
		return refuse(bootwire.KindMismatch, fmt.Sprintf("process %d (pid %d) belongs to job %q, the store on rank 0 serves %q: two jobs share the port", m.Rank, m.PID, m.JobID, s.key))
	case int(m.Size) != s.n:
		return refuse(bootwire.KindMismatch, fmt.Sprintf("process %d says the job has %d processes, rank 0 says %d", m.Rank, m.Size, s.n))
	case m.Rank < 0 || int(m.Rank) >= s.n:
		return refuse(bootwire.KindMismatch, fmt.Sprintf("rank %d is outside a job of %d", m.Rank, s.n))
	case s.peers[m.Rank] != nil:
		return refuse(bootwire.KindMismatch, fmt.Sprintf("rank %d joined twice (pids %d and %d)", m.Rank, s.peers[m.Rank].hello.PID, m.PID))
	}
	p := &storePeer{rank: int(m.Rank), conn: c, hello: m}
	s.peers[m.Rank] = p
	s.joined++
	if s.failed {
		s.send(p, bootwire.Msg{Type: bootwire.Failed, Kind: bootwire.KindPeerLost, Rank: -1, Text: "the job failed before this process joined"})
		return p
	}
	if s.joined < s.n {
		return p
	}
	var bad []string
	for _, q := range s.peers {
		if q.hello.Identity != s.peers[0].hello.Identity {
			bad = append(bad, fmt.Sprintf("rank %d runs %s (%s)", q.rank, q.hello.Exe, q.hello.Identity))
		}
	}
	for _, q := range s.peers {
		if bad != nil {
			s.send(q, bootwire.Msg{Type: bootwire.Error, Kind: bootwire.KindMismatch, Rank: -1,
				Text: fmt.Sprintf("the processes run different programs: rank 0 runs %s (%s), %s", s.peers[0].hello.Exe, s.peers[0].hello.Identity, strings.Join(bad, ", "))})
			continue
		}
		s.send(q, bootwire.Msg{Type: bootwire.Record, Rank: 0, Key: jobIDKey, Value: []byte(s.jobID)})
		s.send(q, bootwire.Msg{Type: bootwire.OK})
	}
	if bad != nil {
		s.failed = true
	}
	return p
}

// request handles one frame of a joined process; it reports whether the
// connection is done. s.mu is held.
func (s *store) request(p *storePeer, m bootwire.Msg) bool {
	switch m.Type {
	case bootwire.Put:
		s.records = append(s.records, bootwire.Msg{Type: bootwire.Record, Rank: int32(p.rank), Key: m.Key, Value: m.Value})
	case bootwire.Fence, bootwire.Barrier:
		if s.failed {
			return false // the Failed notice answers it
		}
		if s.coll != 0 && s.coll != m.Type {
			s.failCollective(bootwire.KindMismatch, p.rank, fmt.Sprintf("rank %d called %v while others called %v", p.rank, m.Type, s.coll))
			s.send(p, bootwire.Msg{Type: bootwire.Error, Kind: bootwire.KindMismatch, Rank: int32(p.rank), Text: fmt.Sprintf("this process called %v while others called %v", m.Type, s.coll)})
			return false
		}
		s.coll = m.Type
		s.arrived[p.rank] = true
		s.narrived++
		for _, q := range s.peers {
			if q != nil && q.closed {
				s.failCollective(bootwire.KindPeerLost, q.rank, fmt.Sprintf("rank %d left the job (closed its bootstrap) before this %v", q.rank, m.Type))
				return false
			}
		}
		if s.narrived < s.n {
			return false
		}
		for _, q := range s.peers {
			if m.Type == bootwire.Fence {
				var buf []byte
				for i := range s.records {
					buf = bootwire.Append(buf, &s.records[i])
				}
				buf = bootwire.Append(buf, &bootwire.Msg{Type: bootwire.OK})
				_ = q.conn.SetWriteDeadline(time.Now().Add(storeWriteWait))
				_, _ = q.conn.Write(buf)
			} else {
				s.send(q, bootwire.Msg{Type: bootwire.OK})
			}
		}
		if m.Type == bootwire.Fence {
			s.records = nil
		}
		s.resetCollective()
	case bootwire.Abort:
		if !s.failed {
			fmt.Fprintf(s.stderr, "bootstrap: rank %d %s\n", p.rank, bootwire.AbortCause(m.Code, m.Text))
			s.fail(p.rank, bootwire.KindAborted, bootwire.AbortCause(m.Code, m.Text))
		}
		s.send(p, bootwire.Msg{Type: bootwire.OK})
	case bootwire.Close:
		p.closed = true
		if s.narrived > 0 && !s.failed {
			s.failCollective(bootwire.KindPeerLost, p.rank, fmt.Sprintf("rank %d left the job (closed its bootstrap) during a %v", p.rank, s.coll))
		}
		return true
	default:
		s.send(p, bootwire.Msg{Type: bootwire.Error, Kind: bootwire.KindProtocol, Rank: int32(p.rank), Text: fmt.Sprintf("unexpected %v frame", m.Type)})
		s.fail(p.rank, bootwire.KindPeerLost, fmt.Sprintf("sent an unexpected %v frame to the store", m.Type))
		return true
	}
	return false
}

// failCollective answers the processes waiting in the collective with an
// Error naming rank, rank 0 last (see fail). s.mu is held.
func (s *store) failCollective(kind bootwire.Kind, rank int, text string) {
	for r := len(s.arrived) - 1; r >= 0; r-- {
		if s.arrived[r] && s.peers[r] != nil {
			s.send(s.peers[r], bootwire.Msg{Type: bootwire.Error, Kind: kind, Rank: int32(rank), Text: text})
		}
	}
	s.resetCollective()
}

func (s *store) resetCollective() {
	s.coll = 0
	clear(s.arrived)
	s.narrived = 0
}

// fail ends the job: every other joined process gets a Failed notice naming
// rank. Rank 0 hears last: its process runs this store, and once told it
// may exit at once and take the store with it, and then a process not yet
// told would see rank 0 lost instead of the failure (TestAbort, seen once
// in CI). s.mu is held.
func (s *store) fail(rank int, kind bootwire.Kind, cause string) {
	s.failed = true
	for i := len(s.peers) - 1; i >= 0; i-- {
		if q := s.peers[i]; q != nil && q.rank != rank && !q.closed {
			s.send(q, bootwire.Msg{Type: bootwire.Failed, Kind: kind, Rank: int32(rank), Text: cause})
		}
	}
	s.resetCollective()
}

// storeServer names rank 0's store in the errors of a lost connection.
var storeServer = serverInfo{name: "the store on rank 0", death: "rank 0 died or was killed", rank: 0}

// openStoreJob joins a job through rank 0's store at addr: rank 0 starts
// the store first. Every process dials it, retrying until storeDialWait
// has passed, and joins with key, which must be the same for the whole
// job. It returns when every process joined.
func openStoreJob(name string, rank, size int, addr, key, vars string) (Bootstrap, error) {
	var st *store
	if rank == 0 {
		var err error
		if st, err = startStore(addr, size, key); err != nil {
			return nil, err
		}
		addr = st.ln.Addr().String()
	}
	deadline := time.Now().Add(storeDialWait)
	pause := 5 * time.Millisecond
	var conn net.Conn
	for {
		var err error
		conn, err = net.DialTimeout("tcp", addr, dialTimeout)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			if st != nil {
				st.stop(0)
			}
			return nil, fmt.Errorf("%w: rank %d cannot reach the store on rank 0 at %s for %v (%s): %v",
				ErrEnvironment, rank, addr, storeDialWait, vars, err)
		}
		time.Sleep(pause)
		pause = min(2*pause, 200*time.Millisecond)
	}
	b, err := join(conn, name, storeServer, rank, size, key, storeEndGrace)
	if err != nil {
		if st != nil {
			st.stop(0)
		}
		return nil, err
	}
	if st != nil {
		// Rank 0 keeps the store until every process has left: its Close
		// waits for them.
		b.(*client).afterClose = func() { st.stop(24 * time.Hour) }
	}
	return b, nil
}
