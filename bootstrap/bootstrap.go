package bootstrap

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/fibermpi/fibermpi/internal/bootwire"
)

// Bootstrap is one process's view of the job's launch: its rank among the
// processes, the job size, and a small key-value exchange. Its methods may be
// called from several goroutines; the collective ones (Fence, Barrier) run
// one at a time per process. Every blocking method parks the calling
// goroutine; called from a fiber it blocks the fiber's whole worker, so call
// them from plain goroutines (they belong to start-up and shut-down).
type Bootstrap interface {
	// Name is the backend: "fmpirun", "pmi", "pmi2", "slurm", "torchrun",
	// or "single" for the embedded default.
	Name() string
	// Rank is this process's rank, 0..Size()-1.
	Rank() int
	// Size is the number of processes in the job.
	Size() int
	// JobID is unique per job and safe in a file name (it names the job's
	// /dev/shm segments, "fibermpi-<JobID>…").
	JobID() string
	// Host identifies this node: equal for the processes on one node,
	// different across nodes (host name and kernel boot id).
	Host() string
	// Put publishes value under key for this rank, replacing an earlier
	// value. Other processes see it after the next Fence; this process sees
	// it at once. The key is 1..MaxKey bytes and the value at most MaxValue
	// bytes, or Put returns an error wrapping ErrRecord. Put copies value
	// and does not block.
	Put(key string, value []byte) error
	// Fence is collective: it returns when every process has called it,
	// and then every Put made by any process before its Fence is visible
	// to Get. It parks the calling goroutine.
	Fence() error
	// Get returns a copy of the record rank published under key, as of the
	// last Fence (or this process's own Put). It returns an error wrapping
	// ErrNotFound if there is none and ErrRank for a rank out of range. It
	// does not block: records are kept by every process.
	Get(rank int, key string) ([]byte, error)
	// Barrier is collective: it returns when every process has called it.
	// It parks the calling goroutine.
	Barrier() error
	// Failed returns a channel that receives one error when the job is
	// ending because another process failed or aborted, or the launcher
	// went away. The error is a *PeerError wrapping ErrPeerLost or
	// ErrAborted. The channel is never closed. After it fires, blocking
	// calls return the same error.
	Failed() <-chan error
	// Abort asks the launcher to end the whole job with exit code code,
	// printing reason once. It does not end the calling process: the caller
	// exits with code after Abort returns (fmpirun kills it after its grace
	// period otherwise). It does not block on the other processes.
	Abort(code int, reason string) error
	// Close leaves the job cleanly: it tells the launcher that this process
	// has finalized. Puts not followed by a Fence are dropped. Calls after
	// Close, and a second Close, return ErrClosed; a blocking call under way
	// in another goroutine returns ErrClosed.
	Close() error
}

// Limits of records, the same for every backend.
const (
	MaxKey   = bootwire.MaxKey   // bytes in a key
	MaxValue = bootwire.MaxValue // bytes in a value
)

// Errors of the bootstrap. Failures of other processes are *PeerError
// values wrapping ErrPeerLost or ErrAborted.
var (
	// ErrNotFound is returned by Get for a record that was not published
	// (or not before the last Fence).
	ErrNotFound = errors.New("bootstrap: record not found")
	// ErrPeerLost is wrapped by the *PeerError of a process that failed,
	// exited or closed its bootstrap before a collective it was needed
	// for, and of a launcher that went away.
	ErrPeerLost = errors.New("bootstrap: peer lost")
	// ErrAborted is wrapped by the *PeerError of a process that called
	// Abort.
	ErrAborted = errors.New("bootstrap: job aborted")
	// ErrEnvironment is returned by Detect when the launch environment is
	// partial or contradictory; the message names the variables.
	ErrEnvironment = errors.New("bootstrap: bad launch environment")
	// ErrMismatch is returned when the processes of a job disagree: a
	// different binary, job size or job id, a rank claimed twice, or
	// different collectives called at once.
	ErrMismatch = errors.New("bootstrap: processes disagree")
	// ErrClosed is returned by calls after Close.
	ErrClosed = errors.New("bootstrap: closed")
	// ErrRank is returned by Get for a rank outside 0..Size()-1.
	ErrRank = errors.New("bootstrap: rank out of range")
	// ErrRecord is returned by Put for an empty or too long key or a too
	// long value.
	ErrRecord = errors.New("bootstrap: bad record")
)

// PeerError says which process made the job fail, or could not take part,
// and why. Rank is -1 when the launcher itself is meant.
type PeerError struct {
	Rank  int    // the process concerned, or -1 for the launcher
	Cause string // e.g. "killed by signal 9 (SIGKILL)", "exit status 3", "aborted the job with code 7: bad input"
	Err   error  // ErrPeerLost or ErrAborted
}

func (e *PeerError) Error() string {
	if e.Rank < 0 {
		return "bootstrap: launcher: " + e.Cause
	}
	return fmt.Sprintf("bootstrap: rank %d: %s", e.Rank, e.Cause)
}

// Unwrap returns ErrPeerLost or ErrAborted.
func (e *PeerError) Unwrap() error { return e.Err }

func checkRecord(key string, value []byte) error {
	if key == "" || len(key) > MaxKey {
		return fmt.Errorf("%w: key of %d bytes (1..%d)", ErrRecord, len(key), MaxKey)
	}
	if len(value) > MaxValue {
		return fmt.Errorf("%w: value of %d bytes under %q (at most %d)", ErrRecord, len(value), key, MaxValue)
	}
	return nil
}

// EnvBootstrap names the variable that forces a backend by name, e.g.
// FIBERMPI_BOOTSTRAP=single.
const EnvBootstrap = bootwire.EnvBootstrap

// lookupFunc reads one environment variable, as os.LookupEnv.
type lookupFunc func(string) (string, bool)

// A backend is one row of the detection table: claims reports whether the
// environment shows that launcher, open joins the job through it.
type backend struct {
	name   string
	claims func(lookupFunc) bool
	open   func(lookupFunc) (Bootstrap, error)
}

// backends is the detection order. A launcher fibermpi cannot join yet
// (Open MPI's) has a guard that refuses to start, so that a program started
// N times by it fails with a clear error instead of running as N copies of
// rank 0; a backend for it replaces its guard here.
var backends = []backend{
	{name: "fmpirun", claims: fmpirunClaims, open: openFmpirun},
	{name: "pmi2", claims: pmi2Claims, open: openPMI2},
	{name: "pmi", claims: pmiClaims, open: openPMI1},
	guard("pmix", "Open MPI's mpirun", "it speaks PMIx, fibermpi PMI-1 and PMI-2", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
	{name: "slurm", claims: slurmClaims, open: openSlurm},
	{name: "torchrun", claims: torchClaims, open: openTorchrun},
	{name: "single", claims: func(lookupFunc) bool { return true }, open: func(lookupFunc) (Bootstrap, error) { return Single(), nil }},
}

// Detect joins the job this process was launched into. It tries, in order
// (see the package doc): fmpirun's environment; PMI-2 (srun --mpi=pmi2);
// PMI-1 (MPICH's mpiexec); refuses Open MPI's mpirun, which it cannot join
// yet; plain srun's SLURM_* variables; torchrun's RANK and WORLD_SIZE; else
// Single. FIBERMPI_BOOTSTRAP=<name> forces one. A partial or contradictory
// environment gives ErrEnvironment, and processes that disagree with their
// peers get ErrMismatch: Detect never falls back to Single for a process
// that was launched as one of many.
//
// Detect returns when every process of the job has joined (under PMI, when
// this process has initialized PMI); it parks the calling goroutine until
// then.
func Detect() (Bootstrap, error) { return detect(os.LookupEnv) }

func detect(env lookupFunc) (Bootstrap, error) {
	if name, ok := env(EnvBootstrap); ok && name != "" {
		for _, b := range backends {
			if b.name == name {
				return b.open(env)
			}
		}
		names := make([]string, len(backends))
		for i, b := range backends {
			names[i] = b.name
		}
		return nil, fmt.Errorf("%w: %s=%q is not a bootstrap (known: %s)", ErrEnvironment, EnvBootstrap, name, strings.Join(names, ", "))
	}
	for _, b := range backends {
		if b.claims(env) {
			return b.open(env)
		}
	}
	panic("bootstrap: no backend claimed the environment") // single always does
}

// guard is the table row of a launcher fibermpi cannot join yet: it claims
// an environment whose sizeVar is above 1 and refuses it, saying why (and
// what to launch with instead).
func guard(name, who, why, rankVar, sizeVar string) backend {
	claims := func(env lookupFunc) bool {
		v, ok := env(sizeVar)
		n, err := strconv.Atoi(v)
		return ok && err == nil && n > 1
	}
	open := func(env lookupFunc) (Bootstrap, error) {
		r, _ := env(rankVar)
		s, _ := env(sizeVar)
		return nil, fmt.Errorf("%w: started by %s (%s=%q, %s=%q), which fibermpi cannot join yet (%s): "+
			"launch with fmpirun, MPICH's mpiexec or srun, or set %s=single to run each process on its own",
			ErrEnvironment, who, rankVar, r, sizeVar, s, why, EnvBootstrap)
	}
	return backend{name: name, claims: claims, open: open}
}
