//go:build linux

package endpoint

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// allowedCPUs lists the CPUs this process may run on, in increasing order.
func allowedCPUs() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, err
	}
	var out []int
	for c := 0; c < len(set)*64 && len(out) < set.Count(); c++ {
		if set.IsSet(c) {
			out = append(out, c)
		}
	}
	return out, nil
}

// cpuMask is the set of CPUs this process may use, as hex words (lowest
// first, up to the last one with a CPU), for comparing with the other
// processes of the node; "" if unknown.
func cpuMask() string {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return ""
	}
	last := -1
	for i, w := range set {
		if w != 0 {
			last = i
		}
	}
	var b strings.Builder
	for i := 0; i <= last; i++ {
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(strconv.FormatUint(uint64(set[i]), 16))
	}
	return b.String()
}

// bindThreads restricts every thread of this process to cpus. Affinity
// belongs to a thread, and a new thread inherits its creator's: setting it
// on each thread there is now binds the threads the Go runtime starts
// later too.
func bindThreads(cpus []int) error {
	var set unix.CPUSet
	for _, c := range cpus {
		set.Set(c)
	}
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return err
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		// A thread that has exited meanwhile (ESRCH) needs no binding.
		if err := unix.SchedSetaffinity(tid, &set); err != nil && err != unix.ESRCH {
			return fmt.Errorf("binding thread %d to CPUs %v: %w", tid, cpus, err)
		}
	}
	return nil
}

// The Go runtime's monitor thread, sysmon, runs no goroutines: it wakes
// now and then to take Ps back from long system calls, preempt goroutines
// that run for 10 ms and poll the network. Its period is 20 µs at first
// and whenever the program comes back from being wholly idle (a system
// call or the end of a garbage collection wakes it), and doubles, up to
// 10 ms, only after about 50 looks in a row found nothing to do. A
// process bound to a share with no CPU beyond its workers' runs sysmon on
// a worker's CPU, and each look takes that CPU from the worker. Measured
// on the 2-vCPU machines (fmpirun -n 2, one CPU each; sched_switch
// traces), a look took 15–20 µs every 100 µs for the first 5–10 ms after
// Init and after each idle spell: in OSU's default run lengths, which
// fall in that time, fmpi-osu's 8-byte message rate (mbw_mr) was half
// and its latency a third longer (BENCHMARKS.md). So sysmon is demoted to
// SCHED_IDLE, at the lowest nice value too: none of its work is urgent to
// a process whose worker owns the CPU. A SCHED_IDLE thread never preempts
// a normal one when it wakes; it runs when its CPU has nothing else to
// run, or at the scheduler's tick, with a weight of 3 against a normal
// thread's 1024. Nice 19 alone, what this did first, does not stop the wake-up
// preemption on this kernel (Linux 6.18, EEVDF): in 1.6 ms of latency_mt
// started while sysmon still looked every 20 µs, it ran 20–26 times,
// each time at once, 157–190 µs in all.
const (
	monitorNice     = 19
	monitorLooks    = 3 // looks that must find the same thread alone in nanosleep
	monitorMaxLooks = 64
	// monitorWait bounds the search in time. Each look yields the CPU,
	// which on a busy machine is gone for a time slice: under three busy
	// loops on 2 CPUs, 2–3 looks took 5 ms, too few.
	monitorWait = 100 * time.Millisecond
)

// demoteMonitor finds sysmon and puts it in SCHED_IDLE at monitorNice
// (demote), or changes nothing if no thread can be told to be it. sysmon
// is the only thread of a Go program that sleeps in nanosleep(2) (the
// runtime's usleep); the search looks at every thread's system call in
// /proc until one thread was found there alone monitorLooks times, and
// gives up if another thread is ever seen there too (cgo code might sleep
// so). The caller must be a running goroutine: while every P is idle,
// sysmon sleeps in a futex instead.
//
// A thread the monitor starts inherits its policy and priority, and an
// unprivileged process cannot raise its nice value again. The monitor
// starts one only when it hands a P it took back from a system call to new
// work and no thread is idle. On a loaded machine it did, within a second
// of Init (TestProcessesBoundToOwnCPUs found two threads at monitorNice in
// 3 runs of 10 beside three busy loops), so spareThreads first leaves idle
// threads for it to use. That test checks that after an idle spell of a
// second, long enough for the monitor to take the sleeping worker's P,
// it is still the only thread at monitorNice, and the only one in
// SCHED_IDLE.
func demoteMonitor() {
	spareThreads(monitorSpares)
	self := unix.Gettid()
	var looks [][]int
	for start := time.Now(); len(looks) < monitorMaxLooks && time.Since(start) < monitorWait; {
		tids, err := sleepingThreads(self)
		if err != nil {
			return
		}
		looks = append(looks, tids)
		// Hand the CPU over between looks: on a share of one CPU, sysmon
		// wakes from its nanosleep to wait for this thread's CPU and is
		// seen "running" until this thread yields (without the yield, 1
		// search in 20 took more than 5 ms). A raw sched_yield keeps the
		// P busy, so sysmon does not go to its deeper sleep meanwhile.
		unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
		if tid, done := pickMonitor(looks); done {
			if tid >= 0 {
				demote(tid)
			}
			return
		}
	}
}

// demote puts the thread tid in SCHED_IDLE at monitorNice. Where the
// kernel refuses the policy (a seccomp filter that does not know
// sched_setattr), the nice value alone is left, as lowering it is never
// refused.
func demote(tid int) {
	_ = unix.Setpriority(unix.PRIO_PROCESS, tid, monitorNice)
	attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_IDLE, Nice: monitorNice}
	_ = unix.SchedSetAttr(tid, &attr, 0)
}

// monitorSpares is how many idle threads spareThreads leaves: the monitor
// hands a P to an idle thread before it starts one, and it takes Ps from
// at most the workers and the few goroutines of the program in system
// calls at once.
const monitorSpares = 4

// spareThreads makes the runtime start n more threads and leaves them
// idle. It runs before the monitor is demoted, so they start at the
// process's priority. n goroutines lock themselves to threads of their
// own at once: as each one blocks, its P moves on to another thread,
// which the runtime starts if none is idle. Then they unlock and end, and
// their threads go to the runtime's idle list. The runtime never ends an
// idle thread.
func spareThreads(n int) {
	var ready sync.WaitGroup
	release := make(chan struct{})
	done := make(chan struct{}, n)
	ready.Add(n)
	for range n {
		go func() {
			runtime.LockOSThread()
			ready.Done()
			<-release // blocks this thread: the P moves on to another
			runtime.UnlockOSThread()
			done <- struct{}{}
		}()
	}
	ready.Wait()
	close(release)
	for range n {
		<-done
	}
}

// sleepingThreads returns the threads of this process, other than self,
// that are in nanosleep(2) or clock_nanosleep(2) now.
func sleepingThreads(self int) ([]int, error) {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil, err
	}
	var out []int
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil || tid == self {
			continue
		}
		b, err := os.ReadFile("/proc/self/task/" + t.Name() + "/syscall")
		if err != nil {
			continue // exited meanwhile
		}
		nr, _, _ := strings.Cut(string(b), " ")
		if n, err := strconv.Atoi(nr); err == nil && (n == unix.SYS_NANOSLEEP || n == unix.SYS_CLOCK_NANOSLEEP) {
			out = append(out, tid)
		}
	}
	return out, nil
}

// pickMonitor decides from the looks so far (each the threads found in
// nanosleep): done with the thread found alone in monitorLooks looks,
// done with -1 once a look found another thread there too, and not done
// otherwise. Looks that found nothing (sysmon was awake) do not count.
func pickMonitor(looks [][]int) (tid int, done bool) {
	tid, hits := -1, 0
	for _, l := range looks {
		switch {
		case len(l) == 0:
		case len(l) > 1 || (tid >= 0 && l[0] != tid):
			return -1, true
		default:
			tid = l[0]
			hits++
		}
	}
	if hits >= monitorLooks {
		return tid, true
	}
	return -1, false
}
