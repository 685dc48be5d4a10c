package bootstrap

import (
	"sync"
	"sync/atomic"
	"time"
)

// fate is how a client's job ends, shared by the clients of fmpirun (and
// of a store) and of a PMI server: die records the first failure, which
// every later blocking call returns, fires Failed with it when it came
// from elsewhere, and arms the end of the process for a client whose
// launcher cannot kill it.
type fate struct {
	dead     chan struct{}              // closed by die
	deadErr  error                      // written before dead is closed
	failed   chan error                 // Failed(): one error, when the job ends because of another
	closing  chan struct{}              // closed by Close
	done     chan struct{}              // closed when the reader goroutine returns
	once     sync.Once                  // guards die
	endAfter time.Duration              // > 0: end the process this long after a failure
	end      func(error)                // what ending it means (printing the cause, exit)
	endTimer atomic.Pointer[time.Timer] // armed by die when endAfter is set
}

// init makes the channels; a positive endAfter makes die arm end.
func (f *fate) init(endAfter time.Duration, end func(error)) {
	f.dead = make(chan struct{})
	f.failed = make(chan error, 1)
	f.closing = make(chan struct{})
	f.done = make(chan struct{})
	f.endAfter, f.end = endAfter, end
}

// die records the job's end: blocking calls return err from now on, and
// Failed fires with it if notify.
func (f *fate) die(err error, notify bool) {
	f.once.Do(func() {
		f.deadErr = err
		close(f.dead)
		if notify {
			f.failed <- err // buffered, sent once
			if f.endAfter > 0 {
				f.endTimer.Store(time.AfterFunc(f.endAfter, func() { f.end(err) }))
			}
		}
	})
}

// usable returns ErrClosed after Close, the job's error after it ended.
func (f *fate) usable() error {
	select {
	case <-f.closing:
		return ErrClosed
	case <-f.dead:
		return f.deadErr
	default:
		return nil
	}
}

// Failed returns the channel that fires when the job fails (Bootstrap).
func (f *fate) Failed() <-chan error { return f.failed }
