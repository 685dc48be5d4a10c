package fiber

import (
	"sync/atomic"
	"time"
)

// parker puts an idle worker's OS thread to sleep and wakes it.
//
// On Linux the thread sleeps on a futex: a wake-up is one FUTEX_WAKE system
// call by the waker, which the kernel answers by making exactly that thread
// runnable. The portable way, a channel, goes through the Go scheduler:
// the send readies the worker's goroutine on the waker's own P, which is
// busy running fibers and will not look at its run queue, so another P
// must steal it (a thief waits a few microseconds before it steals a P's
// next goroutine, and a sleep of a few microseconds is one of tens with the
// kernel's timer slack), and because the goroutine is locked to its thread
// the thief then hands its P to that thread and wakes it: two thread
// wake-ups and a stolen goroutine, tens of microseconds, against one.
type parker struct {
	futex bool // sleep on word (Linux), else on ch
	// word is the futex word: 0 while the worker may sleep, 1 once woken.
	// The sleeper stores 0 (prepare) before it announces that it sleeps
	// (worker.sleeping) and checks for work; wake swaps in 1 and wakes the
	// thread if the word was 0.
	word atomic.Uint32
	ch   chan struct{} // capacity 1: a wake-up not yet taken
	// args is futex_waitv's scratch memory (sleepAlarm).
	args waitvArgs
}

func (p *parker) init() {
	p.futex = useFutex
	if !p.futex {
		p.ch = make(chan struct{}, 1)
	}
}

// prepare readies a sleep: a wake after it ends the sleep, one before it
// may not. The caller then announces that it sleeps and checks for work.
func (p *parker) prepare() {
	if p.futex {
		p.word.Store(0)
	}
}

// sleep blocks the worker's thread until wake is called after prepare, or
// for at most d if d > 0; it may return early. The futex sleep is a
// blocking system call; the channel sleep parks the locked goroutine.
func (p *parker) sleep(d time.Duration) {
	if p.futex {
		if p.word.Load() == 0 {
			futexSleep(&p.word, d)
		}
		return
	}
	if d <= 0 {
		<-p.ch
		return
	}
	t := time.NewTimer(d)
	select {
	case <-p.ch:
	case <-t.C:
	}
	t.Stop()
}

// sleepAlarm is sleep that an Alarm's word ends too: it waits while the
// parker's word holds 0 and word holds val (both at once, futex_waitv),
// for at most d if d > 0. It reports false, having not slept, if that
// cannot be done here (no futex, or a kernel without futex_waitv); the
// caller then sleeps the plain way.
func (p *parker) sleepAlarm(word *atomic.Uint32, val uint32, d time.Duration) bool {
	if !p.futex || !haveWaitv.Load() {
		return false
	}
	if p.word.Load() != 0 || word.Load() != val {
		return true // woken already
	}
	return waitv(&p.args, &p.word, word, val, d)
}

// wake ends the current or next sleep; it never blocks and may be called
// from anywhere, any number of times.
func (p *parker) wake() {
	if p.futex {
		if p.word.Swap(1) == 0 {
			futexWake(&p.word)
		}
		return
	}
	select {
	case p.ch <- struct{}{}:
	default:
	}
}
