package endpoint

import (
	"errors"
	"slices"
	"sync/atomic"
	"time"

	"github.com/fibermpi/fibermpi/packet"
	"github.com/fibermpi/fibermpi/rdma"
)

// The deadlock watchdog in a job of several processes. Each process can
// tell only its own part: every caller registered there blocked on the same
// marked waits for Watch.Deadlock (a quiet episode), or, once Finalize has
// begun, no caller at all. Process 0 decides for the job, as a termination
// detector does (Mattern's counting, with a double collection):
//
//   - Every watchdog tick (a quarter of Watch.Deadlock), each process sends
//     process 0 a report: quiet or not, its episode's number (a new one
//     begins whenever a caller's wait ends or begins), and how many eager,
//     RTS, RTR and Done packets its endpoints have sent to and taken from
//     endpoints of other processes (offer.go counts every message; the
//     job counts the rendezvous steps).
//   - Process 0 calls the job deadlocked when, at two ticks in a row, every
//     process's last report is recent and quiet, the reports are the same
//     at both ticks, and the job's sent total equals its taken total: no
//     message is in flight (a message queued unmatched counts as taken, and
//     the report lists it), and nothing happened in between.
//   - It then sends each process a verdict naming the episode that process
//     reported. A process whose episode is still that one (its callers have
//     been blocked on the same waits all along) ends its part of the job
//     with a *DeadlockError listing its own ranks; one whose episode moved
//     on ignores it.
//
// A process in Finalize reports quiet until the processes' last barrier
// there is passed: a rank that waits for a message from a rank whose
// process finalized is a deadlock too. The reports and verdicts are packets
// of their own kinds between the processes' Init endpoints (process q's is
// address q); they are not counted, and they wake no caller. A process
// whose sends have a rendezvous Put under way is not quiet: its bytes may
// take longer than Watch.Deadlock to move (1 GiB over MPICH, with a 20 ms
// period, was called a deadlock before that rule), while both callers wait
// and the counts agree. The counts cover eager, RTS, RTR and Done packets.
// Limits, beyond those of one process: the offer protocol's own packets
// are not counted (a receive waits for the Done that follows them, which
// is), and a collective's traffic through shared memory is covered by the
// marks on its waits.
const (
	// kindWatchReport: process → process 0, a report. Count is 1 if the
	// process is quiet; Size is its episode's number; SendID and
	// RecvID its counts of eager, RTS, RTR and Done packets sent to and
	// taken from other processes' endpoints.
	kindWatchReport = kindNotHeld + 1 + iota
	// kindWatchVerdict: process 0 → process, the job is deadlocked; Size
	// is the episode the process reported.
	kindWatchVerdict
)

// procReport is a process's last report, as process 0 keeps it.
type procReport struct {
	quiet         bool
	episode       uint64
	sent, arrived uint64
	at            time.Time // when it arrived
}

// jobWatch is the watchdog's state for a job of several processes.
type jobWatch struct {
	episode    uint64 // the current episode's number (watchdog goroutine)
	finalizing bool   // Finalize has begun: the last episode is on
	// verdict is 1 + the episode process 0 declared deadlocked, 0 for none;
	// kick tells the watchdog goroutine that one arrived.
	verdict atomic.Uint64
	kick    chan struct{}
	// Process 0 only: each process's last report, and the reports of the
	// previous tick when all were quiet (nil otherwise).
	reports []atomic.Pointer[procReport]
	prev    []procReport
}

// checkJob is check for a job of several processes; it returns this
// process's part of the report once process 0 has declared the job
// deadlocked and this process's episode is the one it reported.
func (wd *watchdog) checkJob(now time.Time) *DeadlockError {
	p := wd.p
	quiet, finalizing := wd.localQuiet(now)
	r := procReport{quiet: quiet, episode: wd.job.episode, at: now}
	if quiet { // the counts matter only then, and a process may have many endpoints
		r.sent, r.arrived = p.messageCounts()
	}
	if p.rank == 0 {
		wd.job.reports[0].Store(&r)
		wd.decide(now)
	} else {
		wd.sendReport(r)
	}
	if !quiet || finalizing || wd.job.verdict.Load() != wd.job.episode+1 {
		return nil
	}
	return wd.finalReport(now, p.callers())
}

// localQuiet updates the episode and reports whether this process has been
// quiet for wd.after, and whether it is finalizing: in Finalize, or failed
// by a verdict (quiet for good, with no caller to fail).
func (wd *watchdog) localQuiet(now time.Time) (quiet, finalizing bool) {
	p := wd.p
	j := &p.job
	j.mu.Lock()
	ended := j.ended
	j.mu.Unlock()
	switch {
	case ended && j.end.Load() == nil, p.jobDeadlocked():
		// In Finalize, or this process's part of a deadlock has ended:
		// its ranks make no more calls that could wake another.
		if !wd.job.finalizing {
			// The callers are gone: one last episode, for good.
			wd.job.finalizing = true
			wd.marks, wd.since = nil, now
			wd.job.episode++
		}
		return true, true
	case j.halted.Load() || j.pending.Load() > 0 || j.transfers.Load() > 0 || p.someRunning():
		wd.marks = nil
		return false, false
	}
	callers := p.callers()
	if wd.marks == nil || !holds(wd.marks, callers) {
		wd.marks, wd.since = blocked(callers), now
		wd.job.episode++
		return false, false
	}
	return now.Sub(wd.since) >= wd.after, false
}

// messageCounts sums what offer.go counts at every endpoint of this
// process, eager and RTS packets sent to and taken from endpoints of other
// processes, and the process's RTR and Done packets (core.send, Receive).
func (p *Process) messageCounts() (sent, arrived uint64) {
	sent, arrived = p.job.rvSent.Load(), p.job.rvArrived.Load()
	cores := p.job.cores.Load()
	if cores == nil {
		return sent, arrived
	}
	for _, c := range *cores {
		if c.off == nil {
			continue
		}
		c.off.peers.each(func(po *peerOffers) {
			sent += po.sent.Load()
			arrived += po.arrived.Load()
		})
	}
	return sent, arrived
}

// sendReport sends r to process 0, if a packet is free (else the next tick
// reports).
func (wd *watchdog) sendReport(r procReport) {
	p := wd.p
	pk := p.pool.Get(packet.NoWorker)
	if pk == nil {
		return
	}
	pk.Kind = kindWatchReport
	pk.Count = 0
	if r.quiet {
		pk.Count = 1
	}
	pk.Size, pk.SendID, pk.RecvID = r.episode, r.sent, r.arrived
	_ = p.worldCore.send(packet.NoWorker, 0, pk) // a failed send: the job is ending
}

// decide is process 0's look at the reports (see the top of this file).
func (wd *watchdog) decide(now time.Time) {
	p := wd.p
	stale := 3 * max(wd.after/4, time.Millisecond)
	cur := make([]procReport, p.procs)
	var sent, arrived uint64
	for q := range cur {
		r := wd.job.reports[q].Load()
		if r == nil || !r.quiet || now.Sub(r.at) > stale {
			wd.job.prev = nil
			return
		}
		cur[q] = *r
		cur[q].at = time.Time{}
		sent += r.sent
		arrived += r.arrived
	}
	if sent != arrived {
		wd.job.prev = nil
		return
	}
	if wd.job.prev == nil || !slices.Equal(wd.job.prev, cur) {
		wd.job.prev = cur
		return
	}
	wd.job.prev = nil
	wd.job.verdict.Store(cur[0].episode + 1) // checkJob acts on it below
	for q := 1; q < p.procs; q++ {
		pk := p.pool.Get(packet.NoWorker)
		if pk == nil {
			return // the next ticks decide again
		}
		pk.Kind = kindWatchVerdict
		pk.Size = cur[q].episode
		_ = p.worldCore.send(packet.NoWorker, rdma.Addr(q), pk)
	}
}

// onWatch takes a report or a verdict (core.Receive); it never blocks
// beyond a look at the job's watchdog.
func (p *Process) onWatch(w int, pk *packet.Packet) {
	kind, from := pk.Kind, p.layout.Owner(rdma.Addr(pk.From))
	r := procReport{quiet: pk.Count == 1, episode: pk.Size, sent: pk.SendID, arrived: pk.RecvID}
	p.pool.Put(w, pk)
	p.job.mu.Lock()
	wd := p.job.watch
	p.job.mu.Unlock()
	if wd == nil || wd.job == nil {
		return // the watchdog is off (or not started yet)
	}
	switch kind {
	case kindWatchReport:
		if p.rank != 0 || from < 0 || from >= p.procs {
			return
		}
		r.at = time.Now()
		wd.job.reports[from].Store(&r)
	case kindWatchVerdict:
		wd.job.verdict.Store(r.episode + 1)
		select {
		case wd.job.kick <- struct{}{}:
		default: // a kick is pending already
		}
	}
}

// jobDeadlocked reports whether this process's part of the job ended with
// process 0's deadlock verdict.
func (p *Process) jobDeadlocked() bool {
	var d *DeadlockError
	a := p.job.end.Load()
	return a != nil && p.procs > 1 && errors.As(a.Cause, &d)
}
