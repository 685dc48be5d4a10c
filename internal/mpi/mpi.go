//go:build mpi

package mpi

/*
#cgo noescape fmpi_testsome
#cgo nocallback fmpi_testsome
#cgo noescape fmpi_test
#cgo nocallback fmpi_test
#cgo nocallback fmpi_isend
#cgo nocallback fmpi_irecv
#include "fmpi.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// MaxMessage is the largest single message the package sends: longer
// transfers are split by the caller (MPI counts are C ints).
const MaxMessage = 1 << 30

// Errors of the package. An MPI call that fails returns an *Error, which
// matches ErrMPI.
var (
	// ErrMPI is matched (errors.Is) by every *Error.
	ErrMPI = errors.New("mpi: call failed")
	// ErrThreadLevel is returned by Init when MPI was initialized before
	// (by the program) below MPI_THREAD_SERIALIZED.
	ErrThreadLevel = errors.New("mpi: MPI initialized below MPI_THREAD_SERIALIZED")
	// ErrFinalized is returned by every call after Finalize.
	ErrFinalized = errors.New("mpi: MPI finalized")
)

// Error is a failed MPI call: the operation, MPI's error code and the
// string MPI_Error_string gives for it.
type Error struct {
	Op   string
	Code int
	Msg  string
}

func (e *Error) Error() string { return fmt.Sprintf("mpi: %s: %s (error %d)", e.Op, e.Msg, e.Code) }

// Is makes errors.Is(err, ErrMPI) true.
func (e *Error) Is(target error) bool { return target == ErrMPI }

// check turns an MPI return code into nil or an *Error.
func check(op string, code C.int) error {
	if code == C.MPI_SUCCESS {
		return nil
	}
	var buf [C.MPI_MAX_ERROR_STRING + 1]C.char
	var n C.int
	C.fmpi_error_string(code, &buf[0], &n)
	msg := C.GoStringN(&buf[0], n)
	if msg == "" {
		msg = "unknown error"
	}
	return &Error{Op: op, Code: int(code), Msg: msg}
}

// World is what Init learned: this process's place in MPI_COMM_WORLD and
// a duplicate of it for fibermpi's traffic (so that tags never meet a
// program's own MPI messages).
type World struct {
	Rank, Size int
	// Comm is fibermpi's duplicate of MPI_COMM_WORLD.
	Comm Comm
	// TagUB is the largest tag MPI allows (MPI_TAG_UB).
	TagUB int
	// Library is MPI_Get_library_version's first line.
	Library string
	// Provided is the thread level MPI gave (MPI_THREAD_SERIALIZED or
	// above).
	Provided int
}

var (
	// mu serializes every MPI call made after Init (MPI_THREAD_SERIALIZED).
	mu sync.Mutex

	initOnce  sync.Once
	world     World
	initErr   error
	mainCalls chan func() // run on the MPI main thread
	finalized atomic.Bool
	ourInit   bool // MPI_Init_thread was ours (Finalize calls MPI_Finalize)
)

// Lock takes the lock every MPI call needs; it parks the calling goroutine
// while another holds it (a fiber's whole worker blocks: hold it briefly).
func Lock() { mu.Lock() }

// TryLock takes the lock if it is free.
func TryLock() bool { return mu.TryLock() }

// Unlock releases the lock.
func Unlock() { mu.Unlock() }

// Finalized reports whether Finalize has run.
func Finalized() bool { return finalized.Load() }

// Init initializes MPI once per process (MPI_Init_thread at
// MPI_THREAD_SERIALIZED on a goroutine locked to its OS thread for good,
// unless the program initialized MPI already), sets MPI_ERRORS_RETURN and
// duplicates MPI_COMM_WORLD. It is collective over MPI_COMM_WORLD the
// first time. Later calls return the same World. It parks the calling
// goroutine until done.
func Init() (World, error) {
	initOnce.Do(func() {
		mainCalls = make(chan func())
		ready := make(chan struct{})
		go mainThread(ready)
		<-ready
		runMain(func() { world, initErr = initialize() })
	})
	if finalized.Load() {
		return world, ErrFinalized
	}
	return world, initErr
}

// mainThread is the MPI main thread: it initializes and finalizes MPI
// and runs nothing else. It never unlocks its OS thread.
func mainThread(ready chan<- struct{}) {
	runtime.LockOSThread()
	close(ready)
	for f := range mainCalls {
		f()
	}
}

// runMain runs f on the MPI main thread and waits for it.
func runMain(f func()) {
	done := make(chan struct{})
	mainCalls <- func() { f(); close(done) }
	<-done
}

func initialize() (World, error) {
	mu.Lock()
	defer mu.Unlock()
	var provided, already C.int
	if err := check("MPI_Init_thread", C.fmpi_init(&provided, &already)); err != nil {
		return World{}, err
	}
	ourInit = already == 0
	w := World{Provided: int(provided)}
	if provided < C.MPI_THREAD_SERIALIZED {
		return w, fmt.Errorf("%w (provided %d)", ErrThreadLevel, provided)
	}
	var lib [C.MPI_MAX_LIBRARY_VERSION_STRING + 1]C.char
	var n C.int
	if C.fmpi_library_version(&lib[0], &n) == C.MPI_SUCCESS {
		s := C.GoStringN(&lib[0], n)
		for i, c := range s {
			if c == '\n' || c == ',' {
				s = s[:i]
				break
			}
		}
		w.Library = s
	}
	var dup C.MPI_Comm
	if err := check("MPI_Comm_dup", C.fmpi_comm_dup(C.fmpi_world(), &dup)); err != nil {
		return w, err
	}
	if err := check("MPI_Comm_set_errhandler", C.fmpi_comm_ready(dup)); err != nil {
		return w, err
	}
	w.Comm = Comm{c: dup}
	var rank, size, ub C.int
	if err := check("MPI_Comm_rank", C.fmpi_comm_rank_size(dup, &rank, &size)); err != nil {
		return w, err
	}
	_ = C.fmpi_tag_ub(dup, &ub)
	w.Rank, w.Size, w.TagUB = int(rank), int(size), int(ub)
	return w, nil
}

// Finalize cancels the receives the transports' rings keep posted, frees
// fibermpi's communicator and calls MPI_Finalize on the MPI main thread
// (unless the program had initialized MPI itself: then it is the
// program's to finalize, and the receives stay posted). MPI_Finalize is
// collective in practice: call it when this process is done with every
// peer. Later calls, and every MPI call after it, return ErrFinalized. It
// parks the calling goroutine.
func Finalize() error {
	var err error
	started := false
	initOnce.Do(func() {}) // nothing to finalize if never initialized
	if mainCalls == nil || initErr != nil && world.Comm.c == C.fmpi_comm_null() {
		return nil
	}
	if !finalized.CompareAndSwap(false, true) {
		return ErrFinalized
	}
	started = true
	runMain(func() {
		mu.Lock()
		defer mu.Unlock()
		if ourInit {
			// Not when the program finalizes MPI itself: it may go on
			// receiving, and a receive posted after such a cancel can
			// match wrongly on MPICH 4.0.2 (fmpi.h, fmpi_ring_abandon).
			err = cancelRings()
		}
		if world.Comm.c != C.fmpi_comm_null() {
			err = errors.Join(err, check("MPI_Comm_free", C.fmpi_comm_free(&world.Comm.c)))
		}
		if ourInit {
			err = errors.Join(err, check("MPI_Finalize", C.MPI_Finalize()))
		}
	})
	_ = started
	close(mainCalls) // the MPI main thread ends
	return err
}

// Abort calls MPI_Abort on MPI_COMM_WORLD: the MPI launcher ends every
// process of the job, this one included, with code.
func Abort(code int) error {
	if finalized.Load() {
		return ErrFinalized
	}
	mu.Lock()
	defer mu.Unlock()
	return check("MPI_Abort", C.fmpi_abort(C.fmpi_world(), C.int(code)))
}

// Comm is an MPI communicator.
type Comm struct{ c C.MPI_Comm }

// RankSize returns this process's rank in c and c's size; the caller
// holds the lock.
func (c Comm) RankSize() (rank, size int, err error) {
	var r, s C.int
	err = check("MPI_Comm_rank", C.fmpi_comm_rank_size(c.c, &r, &s))
	return int(r), int(s), err
}

// SplitShared splits c into one communicator per shared-memory node
// (MPI_Comm_split_type with MPI_COMM_TYPE_SHARED). It is collective and
// blocking: call it at start-up, holding the lock.
func (c Comm) SplitShared(key int) (Comm, error) {
	var out C.MPI_Comm
	err := check("MPI_Comm_split_type", C.fmpi_split_shared(c.c, C.int(key), &out))
	return Comm{c: out}, err
}

// Free frees c; the caller holds the lock.
func (c *Comm) Free() error {
	if c.c == C.fmpi_comm_null() {
		return nil
	}
	return check("MPI_Comm_free", C.fmpi_comm_free(&c.c))
}

// Request is an MPI request handle.
type Request struct{ r C.MPI_Request }

// requestNull is MPI_REQUEST_NULL, read once: a constant of MPICH's and the
// address of a global of Open MPI's, the same for the life of the process.
// Null is asked of every active request after each Testsome that retires
// one (rdma/mpi's testOps); with a cgo call each time, that call alone was
// 5.6 % of all samples of fmpi-osu bw at 16 KiB over MPICH (BENCHMARKS.md,
// issue 17, session 23).
var requestNull = C.fmpi_request_null()

// NullRequest is MPI_REQUEST_NULL.
func NullRequest() Request { return Request{r: requestNull} }

// Null reports whether r is MPI_REQUEST_NULL (a completed or never
// started request). It makes no cgo call.
func (r *Request) Null() bool { return r.r == requestNull }

// Test tests r once; the caller holds the lock.
func (r *Request) Test() (bool, error) {
	var done C.int
	err := check("MPI_Test", C.fmpi_test(&r.r, &done))
	return done != 0, err
}

// TestCount tests a receive once and returns the bytes it received; the
// caller holds the lock.
func (r *Request) TestCount() (bool, int, error) {
	var done, n C.int
	err := check("MPI_Test", C.fmpi_test_count(&r.r, &done, &n))
	return done != 0, int(n), err
}

// Free leaves r to MPI (MPI_Request_free): the operation completes when
// it can, and its buffer must stay valid until then. The caller holds the
// lock.
func (r *Request) Free() error { return check("MPI_Request_free", C.fmpi_request_free(&r.r)) }

// Testsome tests every request of reqs once (null ones are skipped) and
// writes the indices of those that completed into idx (len(idx) ≥
// len(reqs)); they become null. The caller holds the lock.
func Testsome(reqs []Request, idx []int32) (int, error) {
	if len(reqs) == 0 {
		return 0, nil
	}
	_ = idx[len(reqs)-1]
	var n C.int
	// Safety: Request is a struct of one C.MPI_Request, so the slice's
	// elements are an array of MPI_Request; int32 is C int. Both arrays
	// are read and written during the call only.
	err := check("MPI_Testsome", C.fmpi_testsome(C.int(len(reqs)), (*C.MPI_Request)(unsafe.Pointer(&reqs[0])),
		(*C.int)(unsafe.Pointer(&idx[0])), &n))
	return int(n), err
}

// bufPtr returns the address of b's first byte, or nil for an empty b.
func bufPtr(b []byte) unsafe.Pointer {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Pointer(&b[0])
}

// Isend starts sending buf (at most MaxMessage bytes) to dest with tag.
// MPI reads buf until the request completes: buf must be C memory or
// pinned Go memory (runtime.Pinner) until then. The caller holds the lock.
func (c Comm) Isend(buf []byte, dest, tag int) (Request, error) {
	var r Request
	// Safety: the caller keeps buf pinned (or in C memory) until r
	// completes, the cgo rule for memory C keeps a pointer to.
	err := check("MPI_Isend", C.fmpi_isend(bufPtr(buf), C.int(len(buf)), C.int(dest), C.int(tag), c.c, &r.r))
	return r, err
}

// Irecv starts receiving at most len(buf) bytes from src with tag into
// buf, which must be C memory or pinned until the request completes. The
// caller holds the lock.
func (c Comm) Irecv(buf []byte, src, tag int) (Request, error) {
	var r Request
	// Safety: as for Isend.
	err := check("MPI_Irecv", C.fmpi_irecv(bufPtr(buf), C.int(len(buf)), C.int(src), C.int(tag), c.c, &r.r))
	return r, err
}

// wait tests r until it completes, taking the lock for each test and
// releasing it between tests (other goroutines' progress goes on). It
// parks the calling goroutine between tests when the wait is long.
func wait(op string, r *Request) error {
	for spin := 0; ; spin++ {
		mu.Lock()
		if finalized.Load() {
			mu.Unlock()
			return ErrFinalized
		}
		done, err := r.Test()
		mu.Unlock()
		if err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
		if done {
			return nil
		}
		backoff(spin)
	}
}

// backoff yields for short waits and sleeps a little for long ones.
func backoff(spin int) {
	switch {
	case spin < 100:
		runtime.Gosched()
	case spin < 1000:
		time.Sleep(10 * time.Microsecond)
	default:
		time.Sleep(200 * time.Microsecond)
	}
}

// Barrier is MPI_Ibarrier on c, waited for without holding the lock.
func (c Comm) Barrier() error {
	mu.Lock()
	var r Request
	err := check("MPI_Ibarrier", C.fmpi_ibarrier(c.c, &r.r))
	mu.Unlock()
	if err != nil {
		return err
	}
	return wait("MPI_Ibarrier", &r)
}

// Bcast broadcasts buf from root to every process of c (MPI_Ibcast, waited
// for without holding the lock).
func (c Comm) Bcast(buf []byte, root int) error {
	var p runtime.Pinner
	defer p.Unpin()
	if len(buf) > 0 {
		p.Pin(&buf[0])
	}
	mu.Lock()
	var r Request
	err := check("MPI_Ibcast", C.fmpi_ibcast(bufPtr(buf), C.int(len(buf)), C.int(root), c.c, &r.r))
	mu.Unlock()
	if err != nil {
		return err
	}
	return wait("MPI_Ibcast", &r)
}

// Allgather gathers every process's mine, in rank order (MPI_Iallgather of
// the lengths, then MPI_Iallgatherv of the bytes, each waited for without
// holding the lock).
func (c Comm) Allgather(mine []byte) ([][]byte, error) {
	mu.Lock()
	_, size, err := c.RankSize()
	mu.Unlock()
	if err != nil {
		return nil, err
	}
	if len(mine) > MaxMessage {
		return nil, fmt.Errorf("mpi: Allgather of %d bytes", len(mine))
	}
	// C memory for everything MPI holds while the collectives run.
	lens := (*[1 << 28]C.int)(C.calloc(C.size_t(size+1), C.size_t(unsafe.Sizeof(C.int(0)))))[: size+1 : size+1]
	defer C.free(unsafe.Pointer(&lens[0]))
	lens[size] = C.int(len(mine))
	mu.Lock()
	var r Request
	err = check("MPI_Iallgather", C.fmpi_iallgather_int(&lens[size], &lens[0], c.c, &r.r))
	mu.Unlock()
	if err == nil {
		err = wait("MPI_Iallgather", &r)
	}
	if err != nil {
		return nil, err
	}
	displs := (*[1 << 28]C.int)(C.calloc(C.size_t(size), C.size_t(unsafe.Sizeof(C.int(0)))))[:size:size]
	defer C.free(unsafe.Pointer(&displs[0]))
	total := 0
	for i := range size {
		displs[i] = C.int(total)
		total += int(lens[i])
		if total > MaxMessage {
			return nil, fmt.Errorf("mpi: Allgather of %d bytes in all", total)
		}
	}
	send := C.malloc(C.size_t(len(mine) + 1))
	defer C.free(send)
	recv := C.malloc(C.size_t(total + 1))
	defer C.free(recv)
	copy(unsafe.Slice((*byte)(send), len(mine)), mine)
	mu.Lock()
	err = check("MPI_Iallgatherv", C.fmpi_iallgatherv(send, C.int(len(mine)), recv, &lens[0], &displs[0], c.c, &r.r))
	mu.Unlock()
	if err == nil {
		err = wait("MPI_Iallgatherv", &r)
	}
	if err != nil {
		return nil, err
	}
	all := unsafe.Slice((*byte)(recv), total)
	out := make([][]byte, size)
	for i := range size {
		out[i] = append([]byte(nil), all[displs[i]:int(displs[i])+int(lens[i])]...)
	}
	return out, nil
}
