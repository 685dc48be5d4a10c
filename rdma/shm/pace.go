//go:build linux

package shm

import (
	"time"

	"golang.org/x/sys/unix"

	"github.com/fibermpi/fibermpi/rdma"
)

// A large Put into a process that allows cross-memory attach can go two
// ways: through the rings (Config.RingPuts), the sender copying chunks in
// while the owner copies them out, or attached: by one process_vm_writev
// of the sender's (Put), or split between the sender's process_vm_writev
// and the owner's process_vm_readv (StartPut; split.go). Which is faster
// depends on where the host runs the two processes, and that changes
// while a job runs. With the two CPUs of this machine kind close (a
// cross-core one-way time of about 60 ns), bw at 1 MiB measured
// 16–19 GB/s through the rings against 7.3–8.7 GB/s by one writev; with
// them far apart (about 270 ns), 3.6 GB/s through the rings against
// 7.3 GB/s by one writev (BENCHMARKS.md, issue 12, session 19). So each
// outRing measures both (putPace) and sends a Put of at least paceMin
// bytes the way that moved bytes faster lately, sending paceProbePuts Puts
// the other way once every paceProbe to notice a change. A probe is a
// number of Puts, not a time: a window of sends starts its Puts within
// microseconds, and a probe of 1 ms took a whole window of 64 (36 % of
// the time at the slower way's speed, bw at 1 MiB 9.7–11.3 GB/s against
// 13.3–13.6 without probes; session 20).
const (
	paceMin       = 64 << 10
	paceProbe     = 50 * time.Millisecond
	paceFirst     = 5 * time.Millisecond // from the first Put to the first probe
	paceProbePuts = 6                    // the first paceProbeCold are not measured
	paceProbeCold = 3
	paceWeight    = 0.25 // of a new measurement in the moving averages
)

// putPace is an outRing's measure of its two ways of Putting, under its
// mu.
type putPace struct {
	ring, attach float64   // bytes per nanosecond, moving averages; 0 until measured
	probed       time.Time // when the last probe began, or the first Put
	probeLeft    int       // Puts the probe still sends its way
	probeAttach  bool      // the probe's way
}

// choose reports whether a Put of n bytes starting at now goes by
// cross-memory attach, and whether it is to be measured (record). Below
// paceMin it never goes by attach (the system call costs more than the
// rings' pipeline saves); above it the faster way does, the rings until
// both are measured. Once per paceProbe, the first time paceFirst after
// the first Put, the next paceProbePuts Puts go the other way: a probe.
// Its first paceProbeCold Puts are not measured: they pay for the switch
// (the destination's cache lines moving to the other copier, and a
// split's record waiting behind the chunks still in the ring). Split Puts
// after the rings measured 5.2, 7.4, 9.4 and 15.3 GB/s, then about 26
// from the fifth on, against the rings' 10.8 (session 28): with one Put
// unmeasured, the probes kept the rings, and bw at 1 MiB went the slower
// way in a third of the runs. The Puts, not their measurements, are
// counted: in bibw, where Puts end in another order and a split Put whose
// owner is busy may end unmeasured, dropping the first three
// measurements left attach unmeasured for whole runs.
func (p *putPace) choose(n int, now time.Time) (attach, measure bool) {
	if n < paceMin {
		return false, false
	}
	if p.probed.IsZero() {
		p.probed = now.Add(paceFirst - paceProbe) // the first probe comes sooner
		return false, true
	}
	if p.probeLeft > 0 {
		p.probeLeft--
		return p.probeAttach, paceProbePuts-1-p.probeLeft >= paceProbeCold
	}
	attach = p.ring > 0 && p.attach > p.ring
	if now.Sub(p.probed) >= paceProbe {
		p.probed, p.probeLeft, p.probeAttach = now, paceProbePuts-1, !attach
		return !attach, paceProbeCold == 0
	}
	return attach, true
}

// record adds a Put of n bytes that took d, by attach or through the
// rings (from its first chunk to its last, waits for room included), or
// split (split.go). The averages are of the time per byte (a rate is kept
// as its inverse's average), so that a slow Put weighs by the time it
// took, as it does in a transfer's total.
func (p *putPace) record(attach bool, n int, d time.Duration) {
	if d <= 0 {
		d = 1
	}
	rate, avg := float64(n)/float64(d), &p.ring
	if attach {
		avg = &p.attach
	}
	if *avg == 0 {
		*avg = rate
		return
	}
	cost := 1 / *avg // nanoseconds per byte
	cost += paceWeight * (1/rate - cost)
	*avg = 1 / cost
}

// chooseAttach asks o's pace whether a Put of n bytes goes by attach,
// and whether it is to be measured (putPace.choose; never below paceMin
// or without attach, where nothing is chosen). While the owner sends
// large messages to this process at the same time (bothWays), it goes by
// attach, unmeasured: each process then writes its own messages with one
// copy, where through the rings each CPU would copy every byte twice
// (its own messages in, the other's out). bibw at 1 MiB measured 13–17
// GB/s with pace choosing, against 19–21 with attach forced, as MPICH's
// one copy each way (session 28).
func (o *outRing) chooseAttach(n int) (attach, measure bool) {
	if !o.cma || n < paceMin {
		return false, false // nothing to choose
	}
	if o.alwaysSplit {
		return true, false
	}
	o.mu.lock()
	defer o.mu.unlock()
	now := time.Now()
	if o.bothWays(now) {
		return true, false
	}
	return o.pace.choose(n, now)
}

// recordPut adds a measured Put to o's pace.
func (o *outRing) recordPut(attach bool, n int, d time.Duration) {
	o.mu.lock()
	o.pace.record(attach, n, d)
	o.mu.unlock()
}

// attachPut writes src at off of r in o's process by one
// process_vm_writev, and measures it if measure.
func (o *outRing) attachPut(r rdma.Region, off uint64, src []byte, measure bool) error {
	start := time.Now()
	err := o.vm(unix.ProcessVMWritev, src, r.Addr+off)
	if err == nil && measure {
		o.recordPut(true, len(src), time.Since(start))
	}
	return err
}
