package fiber

import "sync/atomic"

// An Alarm is a second way to wake a sleeping worker: a futex word in
// memory shared with other processes (rdma/shm's segment), which whoever
// brings work from outside (a peer process that sends) bumps and wakes
// when it finds sleepers announced. A worker given one (Config.Alarm)
// sleeps on its own futex word and on the alarm's at once (Linux's
// futex_waitv), so a Signal or Spawn of this process and an arrival from
// another both end its sleep at once, instead of at the next poll of the
// idle hook (Config.PollInterval).
//
// The protocol is the one a futex needs to lose no wake-up: Arm reads the
// word, then announces the sleeper, then looks for work already there; the
// producer publishes its work, then looks for announced sleepers, and if
// there are any changes the word and wakes its waiters. The worker then
// waits only while the word still holds the value Arm read.
type Alarm interface {
	// Arm announces a sleeper and returns the word to wait on and the
	// value to wait while it holds. ok is false if work may be pending
	// already; the caller then does not wait. Every Arm is followed by
	// one Disarm, whatever ok is. Arm must not block.
	Arm() (word *atomic.Uint32, val uint32, ok bool)
	// Disarm withdraws the announcement of one Arm.
	Disarm()
}
