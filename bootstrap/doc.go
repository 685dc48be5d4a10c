// Package bootstrap is how the processes of a job find each other: each
// learns its rank and the job's size, publishes a few small records (its
// transport addresses) and reads the others' after a fence. The endpoint
// layer calls Detect in endpoint.Init; nothing here knows about transports.
//
// # Backends and detection
//
// Detect walks a table of backends in order and opens the first whose
// environment is present:
//
//	fmpirun   FIBERMPI_RANK, FIBERMPI_SIZE, FIBERMPI_JOBID or FIBERMPI_BOOT set
//	pmi       PMI_SIZE > 1          (mpiexec, srun --mpi=pmi2)  refused for now
//	pmix      OMPI_COMM_WORLD_SIZE > 1 (Open MPI's mpirun)       refused for now
//	slurm     SLURM_STEP_NUM_TASKS > 1 (srun)                    refused for now
//	torchrun  WORLD_SIZE > 1                                     refused for now
//	single    always: a job of one process (the embedded default)
//
// FIBERMPI_BOOTSTRAP=<name> forces a row. The refused rows are guards: a
// program started N times by a launcher fibermpi cannot join yet fails with
// ErrEnvironment instead of running as N copies of rank 0; setting
// FIBERMPI_BOOTSTRAP=single runs each copy on its own on purpose. A PMI,
// Slurm or torchrun backend replaces its guard in the table.
//
// # fmpirun's environment
//
// fmpirun (cmd/fmpirun) starts N processes on this node and gives each:
//
//	FIBERMPI_BOOT   path of fmpirun's unix socket (in a private 0700 directory)
//	FIBERMPI_RANK   the process's rank, 0..N-1
//	FIBERMPI_SIZE   N
//	FIBERMPI_JOBID  the job id: 16 hex digits, fresh per job
//
// and removes FIBERMPI_BOOTSTRAP from their environment. All four must be
// present and consistent (rank below size), or Detect returns ErrEnvironment
// naming the variables that are missing or wrong.
//
// Each process opens one connection to the socket and joins: it sends its
// rank, size, job id, pid, host and the identity of its executable (the Go
// build ID, or the file's size and time without one). fmpirun refuses a
// join whose job id or size is not its own, or whose rank is already taken,
// and answers the others when all N have joined, comparing every
// executable with rank 0's: processes that run different binaries all get
// ErrMismatch. So Detect returns once the whole job is there and agrees.
// The frames are specified in internal/bootwire.
//
// # Records and fences
//
// Put buffers the record; the next Fence or Barrier sends the buffered
// records with the collective's request, in one write. When every process
// has called Fence, fmpirun sends each of them every record put since the
// previous Fence, then the answer; every process keeps all records, so Get
// never talks to fmpirun. A fence costs one round trip to fmpirun and no
// polling. Records outlive the process that put them: after it leaves,
// the others can still Get them.
//
// # Failure
//
// fmpirun watches every process. When one exits with a non-zero status or
// is killed, or one calls Abort, or the job times out, fmpirun sends every
// other process a notice: its Failed channel fires with a *PeerError naming
// the rank and the cause ("rank 1: killed by signal 9 (SIGKILL)"), wrapping
// ErrPeerLost or ErrAborted, and its blocking calls return that error. If
// fmpirun itself dies, the connection closes and Failed fires the same way
// (rank -1, the launcher). The job is then over: fibermpi's runtime ends
// the process when Failed fires (a program using this package directly
// should do the same), and fmpirun kills what is left after a grace period.
//
// A process that exits with status 0, or calls Close, while the others run
// is not a failure: the job goes on, and only a later collective that
// needs it (Fence, Barrier, or the join) fails, with a *PeerError wrapping
// ErrPeerLost that says the rank left. Its records stay readable.
//
// # Blocking
//
// Detect (under fmpirun), Fence and Barrier park the calling goroutine
// until every process has made the same call; the other methods do not
// block. None of them yields a fiber: called from a fiber they block its
// worker. They belong to start-up and shut-down, on plain goroutines.
package bootstrap
