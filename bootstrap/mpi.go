//go:build mpi

package bootstrap

import (
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"sync"

	"github.com/fibermpi/fibermpi/internal/bootwire"
	cmpi "github.com/fibermpi/fibermpi/internal/mpi"
)

// In builds with the tag mpi, the MPI library itself is the first
// bootstrap tried when an MPI launcher's environment is present
// (mpiexec.hydra's PMI_*, Open MPI's OMPI_COMM_WORLD_* and PMIX_*, MPICH's
// MPI_LOCALRANKID): MPI_Init_thread, the rank and size of MPI_COMM_WORLD,
// the host identity from MPI_Comm_split_type(MPI_COMM_TYPE_SHARED).
func init() {
	backends = append([]backend{{name: "mpi", claims: mpiClaims, open: openMPI}}, backends...)
}

// mpiVars are variables of which any one shows an MPI launcher.
var mpiVars = []string{"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_FD", "PMI_SIZE", "MPI_LOCALRANKID"}

func mpiClaims(env lookupFunc) bool {
	for _, v := range mpiVars {
		if _, ok := env(v); ok {
			return true
		}
	}
	return false
}

// mpiBoot is the bootstrap over MPI_COMM_WORLD. Put keeps records until
// the next Fence, which exchanges them with MPI_Iallgatherv; Barrier is
// MPI_Ibarrier; both wait without holding MPI's lock, so that the rdma/mpi
// transport's progress goes on meanwhile.
type mpiBoot struct {
	world cmpi.World
	jobID string
	host  string

	coll    sync.Mutex // one collective at a time
	mu      sync.Mutex
	pending map[string][]byte
	records []map[string][]byte // by rank, as of the last Fence
	closed  bool
}

func openMPI(lookupFunc) (Bootstrap, error) {
	w, err := cmpi.Init()
	if err != nil {
		return nil, fmt.Errorf("%w: MPI_Init_thread: %w", ErrEnvironment, err)
	}
	b := &mpiBoot{world: w, pending: make(map[string][]byte), records: make([]map[string][]byte, w.Size)}
	for i := range b.records {
		b.records[i] = make(map[string][]byte)
	}
	// The job id: rank 0's, broadcast.
	id := make([]byte, 64)
	if w.Rank == 0 {
		copy(id, bootwire.NewJobID())
	}
	if err := w.Comm.Bcast(id, 0); err != nil {
		return nil, fmt.Errorf("bootstrap: mpi: the job id: %w", err)
	}
	for i, c := range id {
		if c == 0 {
			id = id[:i]
			break
		}
	}
	b.jobID = string(id)
	// The host: the world rank of the first process of this node's
	// shared-memory communicator, with this machine's identity.
	cmpi.Lock()
	node, err := w.Comm.SplitShared(w.Rank)
	cmpi.Unlock()
	if err != nil {
		return nil, fmt.Errorf("bootstrap: mpi: MPI_Comm_split_type: %w", err)
	}
	leader := make([]byte, 4)
	binary.LittleEndian.PutUint32(leader, uint32(w.Rank))
	err = node.Bcast(leader, 0)
	cmpi.Lock()
	_ = node.Free()
	cmpi.Unlock()
	if err != nil {
		return nil, fmt.Errorf("bootstrap: mpi: the node leader: %w", err)
	}
	b.host = hostIdentity() + "/mpi-node-" + strconv.Itoa(int(binary.LittleEndian.Uint32(leader)))
	return b, nil
}

func (b *mpiBoot) Name() string  { return "mpi" }
func (b *mpiBoot) Rank() int     { return b.world.Rank }
func (b *mpiBoot) Size() int     { return b.world.Size }
func (b *mpiBoot) JobID() string { return b.jobID }
func (b *mpiBoot) Host() string  { return b.host }

func (b *mpiBoot) Put(key string, value []byte) error {
	if err := checkRecord(key, value); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return ErrClosed
	}
	v := append([]byte(nil), value...)
	b.pending[key] = v
	b.records[b.world.Rank][key] = v
	return nil
}

func (b *mpiBoot) Get(rank int, key string) ([]byte, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, ErrClosed
	}
	if rank < 0 || rank >= b.world.Size {
		return nil, fmt.Errorf("%w: rank %d of a job of %d", ErrRank, rank, b.world.Size)
	}
	v, ok := b.records[rank][key]
	if !ok {
		return nil, fmt.Errorf("%w: rank %d published no %q", ErrNotFound, rank, key)
	}
	return append([]byte(nil), v...), nil
}

// Fence exchanges the records put since the last one; it parks the
// calling goroutine.
func (b *mpiBoot) Fence() error {
	b.coll.Lock()
	defer b.coll.Unlock()
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return ErrClosed
	}
	var enc []byte
	for k, v := range b.pending {
		enc = binary.LittleEndian.AppendUint32(enc, uint32(len(k)))
		enc = append(enc, k...)
		enc = binary.LittleEndian.AppendUint32(enc, uint32(len(v)))
		enc = append(enc, v...)
	}
	clear(b.pending)
	b.mu.Unlock()
	all, err := b.world.Comm.Allgather(enc)
	if err != nil {
		return fmt.Errorf("bootstrap: mpi: fence: %w", err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for r, e := range all {
		for len(e) >= 4 {
			kl := int(binary.LittleEndian.Uint32(e))
			if len(e) < 8+kl {
				return fmt.Errorf("%w: rank %d sent a malformed record", ErrMismatch, r)
			}
			k := string(e[4 : 4+kl])
			vl := int(binary.LittleEndian.Uint32(e[4+kl:]))
			if len(e) < 8+kl+vl {
				return fmt.Errorf("%w: rank %d sent a malformed record", ErrMismatch, r)
			}
			b.records[r][k] = e[8+kl : 8+kl+vl]
			e = e[8+kl+vl:]
		}
	}
	return nil
}

// Barrier is MPI_Ibarrier; it parks the calling goroutine.
func (b *mpiBoot) Barrier() error {
	b.coll.Lock()
	defer b.coll.Unlock()
	if b.isClosed() {
		return ErrClosed
	}
	if err := b.world.Comm.Barrier(); err != nil {
		return fmt.Errorf("bootstrap: mpi: barrier: %w", err)
	}
	return nil
}

func (b *mpiBoot) isClosed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.closed
}

// Failed never fires: an MPI launcher ends the whole job when one process
// fails (MPI itself reports no peer failure without ULFM).
func (b *mpiBoot) Failed() <-chan error { return failed }

// Abort prints reason and calls MPI_Abort, which ends every process of
// the job, this one included, with code: unlike the other backends it
// does not return to its caller when MPI does what it should.
func (b *mpiBoot) Abort(code int, reason string) error {
	fmt.Fprintf(os.Stderr, "fibermpi: rank %d aborts the job (code %d): %s\n", b.world.Rank, code, reason)
	return cmpi.Abort(code)
}

// Close finalizes MPI (MPI_Finalize on the thread that initialized it):
// close the transports first.
func (b *mpiBoot) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return ErrClosed
	}
	b.closed = true
	b.mu.Unlock()
	return cmpi.Finalize()
}
