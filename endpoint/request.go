package endpoint

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/fibermpi/fibermpi/fiber"
	"github.com/fibermpi/fibermpi/internal/invariants"
	"github.com/fibermpi/fibermpi/match"
	"github.com/fibermpi/fibermpi/packet"
	"github.com/fibermpi/fibermpi/rdma"
)

// Status describes a completed receive (or a probed message): who sent it,
// with which tag, how many bytes it had, and whether it failed.
type Status struct {
	Source int32 // the sender's rank in the communicator
	Tag    int32
	Count  int   // bytes in the message (a truncated receive got fewer)
	Err    error // nil, a *TruncateError, ErrCancelled, ...
}

// TruncateError reports a message longer than the receive buffer. The
// message is consumed, as in MPI: the buffer holds its first Have bytes.
type TruncateError struct {
	Have, Got int // receive buffer size, message size, in bytes
}

// Error describes the truncation.
func (e *TruncateError) Error() string {
	return fmt.Sprintf("endpoint: message of %d bytes truncated to the %d-byte receive buffer", e.Got, e.Have)
}

// Is makes errors.Is(err, ErrTruncate) true.
func (e *TruncateError) Is(target error) bool { return target == ErrTruncate }

// reqKind tells sends from receives.
type reqKind uint8

const (
	reqSend reqKind = iota + 1
	reqRecv
	// reqHold is Mprobe's receive without a buffer: the message it
	// matches is held for a later Mrecv (mprobe.go), not delivered.
	reqHold
)

// A Request is a pending send or receive. It completes once, after which
// Status is final. Requests are not pooled: a Request belongs to the caller
// that made it, for as long as the caller keeps it, and the caller may pass
// a completed one to IrecvInto or IsendInto to reuse its memory. (An eager
// Isend, complete when it returns, returns a shared request that is complete
// and immutable.)
//
// WaitFor, WaitTimeout and WaitForContext wait the way of the waiter they
// are given, the request's caller's: a fiber yields, a goroutine parks;
// WaitContext finds out which the caller is. Done is for goroutines: a
// select on it in a fiber blocks its worker, and every fiber of it.
type Request struct {
	ev     fiber.Event
	ep     *core
	key    match.Key // a receive's key, for Cancel
	buf    []byte    // receive buffer, or the data of a rendezvous send
	status Status

	// Rendezvous state.
	id          uint64    // registry id while a rendezvous is in flight
	peer        rdma.Addr // the other side
	kind        reqKind   // (here, with the flags, to fill peer's word)
	hasRegion   bool      // region is registered (a receive's buffer)
	offered     bool      // the buffer was offered to the sender (offer.go)
	withdrawing bool      // Cancel asked the sender to withdraw the offer
	region      rdma.Region

	// doneCh is made on the first Done call; complete closes it.
	doneCh atomic.Pointer[doneState]
	// gen counts the request's reuses (recycle). complete reads it before
	// its Signal and closes only a Done channel of that generation: after
	// the Signal the owner may reuse the request and take a new channel
	// while complete is still finishing. Only recycle writes it, after the
	// owner saw the event fired: complete's read comes before its Signal,
	// so the two never race, and a plain field spares every reuse a locked
	// instruction.
	gen uint64

	// owner is the registration that started the request, for the
	// deadlock watchdog (noteWait); nil if unknown.
	owner *caller

	// held is the message a reqHold request matched (mprobe.go): the
	// eager packet or RTS, or nil with the data of a direct delivery in
	// buf.
	held *packet.Packet
}

// doneState is a request's Done channel, for one generation of it.
type doneState struct {
	ch     chan struct{}
	gen    uint64
	closed atomic.Bool
}

// close closes the channel once.
func (d *doneState) close() {
	if d.closed.CompareAndSwap(false, true) {
		close(d.ch)
	}
}

// reset readies a handle's scratch request for another blocking call.
func (r *Request) reset(kind reqKind, c *core, w *fiber.Waiter) {
	r.ev.Rearm(w)
	r.kind, r.ep = kind, c
	r.key, r.buf, r.status = match.Key{}, nil, Status{}
	r.hasRegion, r.offered, r.withdrawing = false, false, false
	// id, peer and region are written by the rendezvous paths before use.
}

// complete finishes the request: status is final, waiters wake.
func (r *Request) complete() {
	gen := r.gen
	r.ev.Signal()
	if invariants.Enabled && completeHook != nil {
		completeHook(r)
	}
	if d := r.doneCh.Load(); d != nil && d.gen == gen {
		d.close()
	}
}

// fail completes r, which never started (the call that was to start it
// failed), with err: it may then be reused like any completed request.
func (r *Request) fail(err error) {
	r.status.Err = err
	r.complete()
}

// completeHook, when set (by tests, in invariants builds), runs inside
// complete between the Signal and the rest, to widen that window.
var completeHook func(*Request)

// recycle readies r for another operation of the given kind on c: r must
// be new (zero) or complete, else it returns ErrRequestActive. The old
// status is dropped. Its caller owns r: nothing else may use it meanwhile.
func (r *Request) recycle(kind reqKind, c *core) error {
	if r.ep != nil {
		if !r.ev.Done() {
			return ErrRequestActive
		}
		// The completer may still be finishing after its Signal; it
		// touches only the Done channel of its generation.
		r.gen++
		r.ev.Reset()
		r.key, r.buf, r.status = match.Key{}, nil, Status{}
		r.id, r.peer, r.region = 0, 0, rdma.Region{}
		r.hasRegion, r.offered, r.withdrawing = false, false, false
		if r.doneCh.Load() != nil {
			r.doneCh.Store(nil)
		}
	}
	r.kind, r.ep = kind, c
	return nil
}

// Test reports whether the request has completed. It never blocks.
func (r *Request) Test() bool { return r.ev.Done() }

// Status returns the request's status; it is final once Test is true.
func (r *Request) Status() Status { return r.status }

// WaitFor blocks the caller that w belongs to until the request completes,
// and returns its status' error: a fiber yields, a goroutine parks.
func (r *Request) WaitFor(w *fiber.Waiter) error {
	if !r.ev.Done() {
		r.noteWait(w) // for the deadlock watchdog (job.go)
		// Endpoint.Recv has the same lines, to keep its wait one frame
		// above the fiber switch.
		if r.ep.tr != nil {
			r.tracedWait(w)
		} else if r.ep.p.opts.Progress == ProgressCaller {
			r.poll(w)
		} else if !r.spin(w) {
			r.ev.Wait(w)
		}
	}
	return r.status.Err
}

// spinTime bounds a waiting fiber's spin (a few times a round trip between
// two processes here); the worker's idle loop polls after that. A bound by
// count was too short: an empty poll takes about 10 ns, so 256 polls ended
// the spin after some 3 µs, about one round trip, and latency_mt's last
// waiting fiber parked just before its answer came (two processes, 8
// alternated pairs, medians: latency_mt -t 4 2.23 → 1.76 µs, latency
// 0.69 → 0.61 µs, mbw_mr 3.17 → 3.45 M/s).
const spinTime = 20 * time.Microsecond

// spin is the first part of a wait under ProgressIdle in a job of several
// processes: while the waiting fiber's worker has nothing else to run
// (fiber.Fiber.WorkerIdle), the fiber polls the transport itself, as the
// worker's idle hook would once the fiber blocked, for about spinTime
// (the clock is read every 64 polls, from the 64th on, so a short spin
// reads it not at all), and reports whether r completed meanwhile. An arrival that
// completes r then costs no coroutine switch and no wake-up. Its waiter is
// disarmed first, so the Signal that completes r does not mark the fiber
// runnable while it runs; the Wait that follows a spin without completion
// arms it again. It does nothing for goroutines and within one process,
// where senders deliver into posted receives themselves.
//
// Whether another fiber can run is asked every 8 polls, and after every
// poll that handled something: that poll has most likely woken another
// fiber of this worker (latency_mt's fibers wait for one answer each), and
// every poll before the fiber yields delays that fiber (latency_mt -t 4
// between two processes, 12 alternated pairs, medians: 1.28 → 1.16 µs).
func (r *Request) spin(w *fiber.Waiter) bool {
	p := r.ep.p
	f := w.Fiber()
	if f == nil || p.procs == 1 {
		return false
	}
	r.ev.Disarm(w)
	worker := f.Worker()
	var start time.Time // read lazily: most spins end before the first look
	for i, n := 0, 0; ; i++ {
		if (i%8 == 0 || n > 0) && !f.WorkerIdle() {
			break // another fiber can run: let it
		}
		n = p.progress(worker)
		if r.ev.Done() {
			return true
		}
		if i%64 == 63 {
			now := time.Now()
			if start.IsZero() {
				start = now
			} else if now.Sub(start) >= spinTime {
				break
			}
		}
	}
	return r.ev.Done()
}

// poll waits for r with caller-driven progress: poll the transport, then
// let others run, until r is done.
func (r *Request) poll(w *fiber.Waiter) {
	p := r.ep.p
	worker := packet.NoWorker
	if f := w.Fiber(); f != nil {
		worker = f.Worker()
	}
	for !r.ev.Done() {
		p.progress(worker)
		if r.ev.Done() {
			break
		}
		p.pause(w)
	}
}

// Done returns a channel closed when the request completes, for select.
// The first call makes the channel; requests nobody asks for a channel pay
// one atomic load at completion.
func (r *Request) Done() <-chan struct{} {
	if d := r.doneCh.Load(); d != nil {
		return d.ch
	}
	d := &doneState{ch: make(chan struct{}), gen: r.gen}
	if !r.doneCh.CompareAndSwap(nil, d) {
		return r.doneCh.Load().ch
	}
	if r.ev.Done() {
		d.close()
	}
	return d.ch
}

// WaitContext waits until the request completes or ctx ends: a goroutine
// parks; a fiber yields, as in WaitForContext (a select would block its
// worker), which costs WaitContext a system call to tell fibers from
// goroutines (fiber.Current) — WaitForContext, given the waiter, does not.
// If ctx ends first it returns ctx's error and the request stays pending;
// cancel a receive with Cancel.
func (r *Request) WaitContext(ctx context.Context) error {
	if r.Test() {
		return r.status.Err
	}
	if f := fiber.Current(); f != nil {
		return r.WaitForContext(f.Waiter(), ctx)
	}
	select {
	case <-r.Done():
		return r.status.Err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Cancel withdraws a pending receive that has not matched a message: it
// then completes with ErrCancelled. It reports whether it did; a receive
// that matched already, and any send, cannot be cancelled.
//
// A receive that offered its buffer to a sender in another process
// (receiver-driven rendezvous) cannot be withdrawn at once: Cancel asks the
// sender, reports true, and the request completes later, with ErrCancelled
// if the sender had not used the offer, else with the message. As in MPI,
// Wait (or Test) tells which.
func (r *Request) Cancel() bool {
	if r.kind != reqRecv || r.Test() {
		return false
	}
	if r.offered {
		if !r.withdrawing {
			r.withdrawing = true
			r.withdraw()
		}
		return true
	}
	if !r.ep.table.Cancel(r.key, r) {
		return false
	}
	r.ep.cancelled(r)
	return true
}

// WaitAll waits for every request with w, and returns the first error of
// their statuses (all complete either way).
func WaitAll(w *fiber.Waiter, reqs ...*Request) error {
	var first error
	for _, r := range reqs {
		if r == nil {
			return ErrNilRequest
		}
		if err := r.WaitFor(w); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// WaitAny waits until one of reqs completes and returns its index. Nil
// requests are skipped; with none left it returns -1 and ErrNilRequest.
// The requests may belong to different endpoints.
func WaitAny(w *fiber.Waiter, reqs ...*Request) (int, error) {
	for {
		done, armed := armAny(w, reqs)
		if done >= 0 {
			return done, reqs[done].status.Err
		}
		if armed == 0 {
			return -1, ErrNilRequest
		}
		for _, r := range reqs { // for the deadlock watchdog (job.go)
			if r != nil {
				r.noteWait(w)
				break
			}
		}
		w.Block()
		disarm(w, reqs)
		if i := firstDone(reqs); i >= 0 {
			return i, reqs[i].status.Err
		}
	}
}

// armAny arms w on every request of reqs (nil ones skipped) and returns
// how many it armed. If one has completed already, it disarms those armed
// before it and returns its index as done (−1 otherwise).
func armAny(w *fiber.Waiter, reqs []*Request) (done, armed int) {
	for i, r := range reqs {
		if r == nil {
			continue
		}
		if !r.ev.Arm(w) {
			disarm(w, reqs[:i])
			return i, armed
		}
		armed++
	}
	return -1, armed
}

// firstDone returns the index of the first completed request of reqs, or
// −1.
func firstDone(reqs []*Request) int {
	for i, r := range reqs {
		if r != nil && r.Test() {
			return i
		}
	}
	return -1
}

func disarm(w *fiber.Waiter, reqs []*Request) {
	for _, r := range reqs {
		if r != nil {
			r.ev.Disarm(w)
		}
	}
}

// WaitSome waits until at least one of reqs completes and returns the
// indices of all that have.
func WaitSome(w *fiber.Waiter, reqs ...*Request) ([]int, error) {
	if _, err := WaitAny(w, reqs...); errors.Is(err, ErrNilRequest) {
		return nil, err
	}
	var done []int
	for i, r := range reqs {
		if r != nil && r.Test() {
			done = append(done, i)
		}
	}
	return done, nil
}

// TestAll reports whether every request has completed, without blocking.
func TestAll(reqs ...*Request) bool {
	for _, r := range reqs {
		if r != nil && !r.Test() {
			return false
		}
	}
	return true
}
