package endpoint

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/fibermpi/fibermpi/bootstrap"
	"github.com/fibermpi/fibermpi/rdma"
	"github.com/fibermpi/fibermpi/rdma/inproc"
	"github.com/fibermpi/fibermpi/rdma/route"
	"github.com/fibermpi/fibermpi/rdma/shm"
	"github.com/fibermpi/fibermpi/rdma/tcp"
)

// Environment variables read by connect.
const (
	// EnvTransport = "tcp" makes every pair of processes use TCP, those
	// of one node too (Options.ForceTCP), for tests and comparisons. In
	// a build with the tag mpi, under the MPI bootstrap, "mpi" makes the
	// MPI transport carry the pairs of one node too (by default they use
	// shared memory, measured faster there, and MPI carries the pairs
	// across nodes), and "shm" keeps the default.
	EnvTransport = "FIBERMPI_TRANSPORT"
	// EnvTCPListen is the host:port the TCP transport listens on (its
	// address on the network between the nodes, e.g. "10.0.0.1:0"); the
	// default is loopback when every process runs on this node, else
	// every interface, published with this host's first non-loopback
	// address.
	EnvTCPListen = "FIBERMPI_TCP_LISTEN"
)

// Bootstrap is how a process learns the job it belongs to and exchanges
// small records with the other processes while the job starts: the
// bootstrap package's launchers (fmpirun; see bootstrap.Detect).
type Bootstrap = bootstrap.Bootstrap

// ErrJob is returned by Init when the processes of a job cannot be
// connected (a backend cannot be set up, or no backend reaches a process).
var ErrJob = errors.New("endpoint: cannot connect the processes of the job")

// DetectBootstrap returns the bootstrap of the launcher that started this
// process (bootstrap.Detect): under fmpirun, the job it started; without a
// launcher, a job of this process alone (the embedded default). A partial
// or contradictory launch environment is an error naming the variables,
// never a silent job of one.
func DetectBootstrap() (Bootstrap, error) { return bootstrap.Detect() }

// connect makes the process's transport: the in-process backend for a job
// of one process; for several, a router (rdma/route) over the in-process
// backend for this process's endpoints and, for every other process, the
// backend that reaches it: shared memory (rdma/shm) for the processes of
// this node, which the bootstrap's host identities tell apart, and TCP
// (rdma/tcp) for the processes of other nodes — or for every other
// process with Options.ForceTCP or FIBERMPI_TRANSPORT=tcp.
func (p *Process) connect() (rdma.Transport, error) {
	local := inproc.New()
	if p.procs == 1 {
		return local, nil
	}
	byProc := make([]rdma.Transport, p.procs)
	if p.opts.Remote != nil {
		for q := range byProc {
			if q != p.rank {
				byProc[q] = p.opts.Remote
			}
		}
	} else {
		peers, err := p.peers()
		if err != nil {
			return nil, err
		}
		hosts := make([]string, len(peers))
		for q := range peers {
			hosts[q] = peers[q].host
		}
		p.watchNode(peers)
		forceTCP := p.opts.ForceTCP || os.Getenv(EnvTransport) == "tcp"
		// Under the MPI bootstrap (a build with the tag mpi), the site's
		// MPI carries what TCP would, and with FIBERMPI_TRANSPORT=mpi
		// the pairs of one node too.
		useMPI := mpiBuilt && !forceTCP && p.boot.Name() == "mpi"
		mpiEverywhere := useMPI && os.Getenv(EnvTransport) == "mpi"
		// Every process decides alike whether anyone needs TCP (the
		// hosts are the same list everywhere), since tcp.New is
		// collective.
		oneNode := true
		for _, h := range hosts {
			oneNode = oneNode && h == hosts[0]
		}
		p.place = placeOf(peers, p.rank)
		var same, viaTCP []int
		for q, h := range hosts {
			switch {
			case q == p.rank:
			case h == hosts[p.rank] && !forceTCP && !mpiEverywhere:
				same = append(same, q)
			default:
				viaTCP = append(viaTCP, q)
			}
		}
		// Every process takes part in shm.New's fences, with or without
		// peers of its own node, so that none waits for another.
		tr, err := shm.New(shm.Config{Exchange: p.boot, Layout: p.layout, Peers: same, PayloadSize: p.opts.PayloadSize,
			RingPuts: os.Getenv(EnvShmPut) != "attach", SplitPuts: os.Getenv(EnvShmPut) == "split"})
		if err != nil {
			return nil, fmt.Errorf("%w: shared memory: %w", ErrJob, err)
		}
		for _, q := range same {
			byProc[q] = tr
		}
		if useMPI {
			// Collective (like tcp.New): every process makes it.
			mt, err := p.newMPI(viaTCP)
			if err != nil {
				_ = tr.Close()
				return nil, fmt.Errorf("%w: mpi: %w", ErrJob, err)
			}
			for _, q := range viaTCP {
				byProc[q] = mt
			}
			if len(viaTCP) == 0 {
				_ = mt.Close()
			}
		} else if forceTCP || !oneNode {
			listen := os.Getenv(EnvTCPListen)
			if listen == "" && !oneNode {
				listen = "0.0.0.0:0"
			}
			tt, err := tcp.New(tcp.Config{Exchange: p.boot, Layout: p.layout, Peers: viaTCP, PayloadSize: p.opts.PayloadSize, Listen: listen})
			if err != nil {
				_ = tr.Close()
				return nil, fmt.Errorf("%w: tcp: %w", ErrJob, err)
			}
			for _, q := range viaTCP {
				byProc[q] = tt
			}
			if len(viaTCP) > 0 {
				p.lostWatch.tcp = tt
			}
			if len(viaTCP) == 0 {
				_ = tt.Close()
			}
		}
		if len(same) == 0 && len(viaTCP) > 0 {
			_ = tr.Close()
		}
	}
	r, err := route.New(p.rank, p.layout, local, byProc)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrJob, err)
	}
	return r, nil
}

// A peer is what the processes tell each other about themselves while
// the transports are chosen: the node they run on, and their pid and pid
// namespace, by which a process of the same node is watched (peerwatch.go).
type peer struct {
	host  string // bootstrap.Bootstrap.Host
	pid   int    // 0 if unknown
	pidns string // the pid namespace ("pid:[4026531836]"), "" if unknown
	cpus  string // the CPUs it may use (cpuMask), "" if unknown
}

// place is where a process stands among the processes of its node:
// nodeProcs counts them (known with real processes only; 0 otherwise);
// sharedOS is set when some of them are this OS process too (tests).
// cpuRank and cpuProcs count only those that may use the same CPUs as this
// one: all of them, unless a launcher placed them (bind.go); cpuRank is
// this process's index among them.
type place struct {
	nodeProcs         int
	cpuRank, cpuProcs int
	sharedOS          bool
}

// placeOf returns the place of process rank among peers.
func placeOf(peers []peer, rank int) place {
	var pl place
	me := peers[rank]
	for q, o := range peers {
		if o.host != me.host {
			continue
		}
		pl.nodeProcs++
		// Processes simulated in one OS process (tests) share its
		// threads: binding one would bind them all.
		pl.sharedOS = pl.sharedOS || (q != rank && me.pid != 0 && o.pid == me.pid && o.pidns == me.pidns)
		if o.cpus == me.cpus {
			if q < rank {
				pl.cpuRank++
			}
			pl.cpuProcs++
		}
	}
	return pl
}

// peers exchanges the processes' host identities, pids, pid namespaces and
// the CPUs they may use through the bootstrap, in one fence.
func (p *Process) peers() ([]peer, error) {
	const hostKey, pidKey = "fibermpi/host", "fibermpi/pid"
	if err := p.boot.Put(hostKey, []byte(p.boot.Host())); err != nil {
		return nil, fmt.Errorf("%w: publishing the host: %w", ErrJob, err)
	}
	if err := p.boot.Put(pidKey, []byte(strconv.Itoa(os.Getpid())+" "+pidNamespace()+" "+cpuMask())); err != nil {
		return nil, fmt.Errorf("%w: publishing the pid: %w", ErrJob, err)
	}
	if err := p.boot.Fence(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrJob, err)
	}
	all := make([]peer, p.procs)
	for q := range all {
		h, err := p.boot.Get(q, hostKey)
		if err != nil {
			return nil, fmt.Errorf("%w: the host of process %d: %w", ErrJob, q, err)
		}
		all[q].host = string(h)
		if v, err := p.boot.Get(q, pidKey); err == nil {
			// "pid ns cpus", any of them empty.
			f := strings.SplitN(string(v), " ", 3)
			for len(f) < 3 {
				f = append(f, "")
			}
			all[q].pid, _ = strconv.Atoi(f[0])
			all[q].pidns, all[q].cpus = f[1], f[2]
		}
	}
	return all, nil
}

// pidNamespace names this process's pid namespace, or "" if unknown.
func pidNamespace() string {
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return ""
	}
	return ns
}

// agree exchanges, for a collective endpoint creation, how many endpoints
// each process makes: k here, or a failure (local, reported to every
// process as a negative count so that all of them fail together rather
// than some waiting). It returns the counts of every process in rank order.
func (p *Process) agree(k int, local error) ([]int, error) {
	if local == nil && k < 1 {
		local = fmt.Errorf("%w: CreateEndpoints(%d)", ErrEndpoints, k)
	}
	if p.procs == 1 {
		if local != nil {
			return nil, local
		}
		return []int{k}, nil
	}
	v := k
	if local != nil {
		v = -1
	}
	key := "fibermpi/endpoints/" + strconv.Itoa(p.gen)
	p.gen++
	if err := p.boot.Put(key, strconv.AppendInt(nil, int64(v), 10)); err != nil {
		return nil, fmt.Errorf("%w: publishing the endpoint count: %w", ErrEndpoints, err)
	}
	if err := p.boot.Fence(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrEndpoints, err)
	}
	counts := make([]int, p.procs)
	for r := range counts {
		b, err := p.boot.Get(r, key)
		if err != nil {
			return nil, fmt.Errorf("%w: reading process %d's endpoint count: %w", ErrEndpoints, r, err)
		}
		if counts[r], err = strconv.Atoi(string(b)); err != nil {
			return nil, fmt.Errorf("%w: process %d's endpoint count %q: %w", ErrEndpoints, r, b, err)
		}
	}
	if local != nil {
		return nil, local
	}
	for r, n := range counts {
		if n < 1 {
			return nil, fmt.Errorf("%w: process %d could not create its endpoints", ErrEndpoints, r)
		}
	}
	return counts, nil
}

// watch waits for the bootstrap to report the job's failure (another
// process failed or aborted, or the launcher went away) until Finalize.
func (p *Process) watch() {
	defer close(p.watched)
	select {
	case err := <-p.boot.Failed():
		p.Abort(err) // every blocked and later call here returns it (job.go)
	case <-p.unwatch:
	}
}
