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
//	pmi2      PMI_JOBID and a PMI variable set     (srun --mpi=pmi2)
//	pmi       PMI_FD, PMI_PORT, PMI_RANK or PMI_SIZE set (MPICH's mpiexec: Hydra)
//	pmix      OMPI_COMM_WORLD_SIZE > 1 (Open MPI's mpirun)   refused for now
//	slurm     SLURM_STEP_NUM_TASKS set             (plain srun)
//	torchrun  RANK, WORLD_SIZE or LOCAL_RANK set   (torchrun, or set by hand)
//	single    always: a job of one process (the embedded default)
//
// FIBERMPI_BOOTSTRAP=<name> forces a row: FIBERMPI_BOOTSTRAP=pmi2 makes a
// process under Hydra speak PMI-2. The pmix row is a guard: a program
// started N times by Open MPI's mpirun fails with ErrEnvironment instead of
// running as N copies of rank 0; FIBERMPI_BOOTSTRAP=single runs each copy
// on its own on purpose. A partial or contradictory environment (RANK
// without WORLD_SIZE, PMI_RANK not below PMI_SIZE, a PMI_FD that is not an
// open socket) is ErrEnvironment naming the variables, never a silent job
// of one.
//
// # PMI (mpiexec, srun --mpi=pmi2)
//
// The pmi and pmi2 backends speak the PMI-1 and PMI-2 wire protocols (the
// text protocols of MPICH's pmi-1.1 and PMI-2 documents) on the inherited
// socket PMI_FD, or on a connection to PMI_PORT identified by PMI_ID.
// Records go into the launcher's key-value space, hex-encoded and split
// into chunks of its longest value, under keys "<rank>/<key>" (or a hash of
// a key PMI cannot carry); Put buffers them and Fence sends them, then
// waits in PMI's barrier. Get reads another process's record from the
// launcher once per fence (a round trip to the PMI server on this node,
// which parks the goroutine). The job id is the launcher's (kvsname or
// PMI_JOBID, made safe in a file name). When the socket closes while the
// job runs (the launcher died or is ending the job), Failed fires with a
// *PeerError of rank -1, and a process that has neither exited nor closed
// its bootstrap a second later ends itself (status 1), naming the cause,
// rather than live on as an orphan. Abort prints the reason once, in the aborting
// process, and sends PMI's abort: mpiexec kills the job and exits with the
// code; srun ends the step (with --kill-on-bad-exit, or KillOnBadExit=1,
// also when a task dies, which Slurm's default does not).
//
// # Store (torchrun's variables, plain srun)
//
// Without an exchange from the launcher, rank 0 serves one: a TCP store on
// MASTER_ADDR at MASTER_PORT+1 under torchrun's variables (torch's own
// TCPStore may hold MASTER_PORT), on the step's first node at a port
// derived from SLURM_JOB_ID and SLURM_STEP_ID under plain srun, or at
// FIBERMPI_STORE_PORT. Every process, rank 0 included, joins it as it
// would fmpirun (the same frames, checks and Failed notices, see below):
// a process whose connection ends without Close is reported to the others
// as lost, by rank, within the time TCP takes to see the close. Rank 0's
// Close waits until every other process has left the store. Nobody kills
// what is left of such a job, so a process that has neither exited nor
// closed its bootstrap one second after Failed fired ends itself, printing
// the cause, with the abort's code or status 1.
//
// # fmpirun's environment
//
// fmpirun (cmd/fmpirun) starts N processes, on this node or (-hosts,
// through ssh) on others, and gives each:
//
//	FIBERMPI_BOOT   path of fmpirun's unix socket (in a private 0700 directory),
//	                or tcp:<address>:<port> of its TCP socket on another host
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
// A process on another host (FIBERMPI_BOOT=tcp:…), which fmpirun cannot
// kill, ends itself a second after Failed fires unless it has closed its
// bootstrap, printing the cause, as the processes of a store job do.
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
