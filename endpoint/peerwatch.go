package endpoint

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/fibermpi/fibermpi/bootstrap"
	"github.com/fibermpi/fibermpi/rdma"
	"github.com/fibermpi/fibermpi/rdma/tcp"
)

// The lost-process watch. A launcher tells the processes of a job when one
// of them dies (fmpirun's notice, the store's) — or does not: Hydra and
// srun kill the rest of the job at once by default, and with
// mpiexec -disable-auto-cleanup or srun --kill-on-bad-exit=0 they tell
// nobody. So each process of a job also watches the others itself, from
// Init to Finalize:
//
//   - the processes of its node through a pidfd each (pidfd_open(2) on the
//     pid every process publishes through the bootstrap, with its pid
//     namespace: a peer in another pid namespace is not watched), in one
//     goroutine parked in poll(2), which wakes when one of them exits;
//   - the processes of other nodes through the TCP transport, whose
//     connections fail when a peer is reset, closes without a goodbye or
//     falls silent (rdma/tcp), checked every lostPoll.
//
// A process found gone before this process's Finalize began is a loss:
// every process of the job passes Finalize's barrier together, so none can
// have finalized and exited while another has not begun to. The job then
// ends here through Process.Abort with a *bootstrap.PeerError naming the
// lost process (errors.Is(err, bootstrap.ErrPeerLost)): every blocked and
// later call returns it. The loss is printed once on standard error, and a
// process that has neither finalized nor exited lostGrace later ends itself
// with status 1 — what a launcher's cleanup would do, for the launchers
// that do none. Finalize stops the watch; a peer lost while this process
// waits in Finalize's barrier is left to the launcher.

// Bounds of the watch.
const (
	// lostPoll is how often the TCP transport's connections are checked.
	lostPoll = 50 * time.Millisecond
	// lostGrace is how long a process that lost a peer may go on before
	// it ends itself (fmpirun's default grace, and the store's).
	lostGrace = time.Second
)

// lostWatch is the watch's state in a Process.
type lostWatch struct {
	node []watched // the other processes of this node that can be watched
	tcp  interface{ CheckPeers() error }

	mu    sync.Mutex
	stop  func()      // ends the goroutine and waits for it; nil when none runs
	timer *time.Timer // lostGrace's, once a loss was found
	off   bool        // Finalize began
}

// watched is one process of this node.
type watched struct {
	rank, pid int
}

// exitProcess ends the process; tests replace it.
var exitProcess = os.Exit

// watchNode records which processes of this node can be watched: those
// with this process's host and pid namespace, and a pid.
func (p *Process) watchNode(peers []peer) {
	me := peers[p.rank]
	for q, o := range peers {
		if q != p.rank && o.host == me.host && o.pid > 0 && o.pid != os.Getpid() && o.pidns != "" && o.pidns == me.pidns {
			p.lostWatch.node = append(p.lostWatch.node, watched{rank: q, pid: o.pid})
		}
	}
}

// startLostWatch starts the watch (Init, once the transports are up).
func (p *Process) startLostWatch() {
	w := &p.lostWatch
	if len(w.node) == 0 && w.tcp == nil {
		return
	}
	stop, err := watchPeers(w.node, w.tcp, p.peerLost)
	if err != nil {
		// The launcher's notice remains; say why the watch is off.
		fmt.Fprintf(os.Stderr, "fibermpi: process %d: not watching the other processes: %v\n", p.rank, err)
		return
	}
	w.mu.Lock()
	w.stop = stop
	w.mu.Unlock()
}

// stopLostWatch ends the watch and the grace timer (Finalize).
func (p *Process) stopLostWatch() {
	w := &p.lostWatch
	w.mu.Lock()
	stop := w.stop
	w.stop, w.off = nil, true
	if w.timer != nil {
		w.timer.Stop()
	}
	w.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// peerLost ends the job for the loss of process rank (cause says how it
// was seen): called once, from the watch's goroutine.
func (p *Process) peerLost(rank int, cause string) {
	err := &bootstrap.PeerError{Rank: rank, Cause: cause, Err: bootstrap.ErrPeerLost}
	w := &p.lostWatch
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.off {
		return
	}
	if !p.fail(-1, err) {
		return // the job had ended already (a launcher's notice, a rank's failure)
	}
	fmt.Fprintf(os.Stderr, "fibermpi: process %d: %v; the job is over\n", p.rank, err)
	w.timer = time.AfterFunc(lostGrace, func() {
		w.mu.Lock()
		off := w.off
		w.mu.Unlock()
		if !off {
			fmt.Fprintf(os.Stderr, "fibermpi: process %d: ending this process (exit status 1) %v after losing process %d\n", p.rank, lostGrace, rank)
			exitProcess(1)
		}
	})
}

// tcpLoss turns the TCP transport's report into the lost rank and the
// cause, or ok false when there is nothing to report.
func tcpLoss(err error) (rank int, cause string, ok bool) {
	if err == nil || errors.Is(err, rdma.ErrClosed) {
		return 0, "", false
	}
	if pe, ok := errors.AsType[*tcp.PeerError](err); ok {
		return pe.Rank, "its connection failed: " + pe.Err.Error(), true
	}
	return -1, "a connection failed: " + err.Error(), true
}
