//go:build !linux

package fiber

import (
	"sync/atomic"
	"time"
)

// useFutex is false: there are no futexes here; workers sleep on a channel.
var useFutex = false

func futexSleep(*atomic.Uint32, time.Duration) { panic("fiber: no futex on this platform") }

func futexWake(*atomic.Uint32) { panic("fiber: no futex on this platform") }

// haveWaitv is false: no futex_waitv here, an Alarm is ignored.
var haveWaitv atomic.Bool

type waitvArgs struct{}

func waitv(*waitvArgs, *atomic.Uint32, *atomic.Uint32, uint32, time.Duration) bool { return false }

// pause is an idle worker's wait between two looks at its run queue once it
// has spun hot for a while: here a busy wait of steps backoff steps.
func pause(steps int) { backoff(steps) }

// backoff burns roughly steps × spinPause loads without touching shared
// memory or the Go scheduler: pause where the OS cannot yield.
func backoff(steps int) {
	var sink atomic.Uint32
	for range steps * spinPause {
		sink.Load()
	}
}
