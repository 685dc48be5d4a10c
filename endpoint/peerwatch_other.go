//go:build !linux

package endpoint

import "time"

// watchPeers watches tcp only, every lostPoll: the processes of a node
// are watched through Linux's pidfd, and elsewhere the launcher's notice
// is their only watch.
func watchPeers(node []watched, tcp interface{ CheckPeers() error }, lost func(rank int, cause string)) (stop func(), err error) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		if tcp == nil {
			return
		}
		tick := time.NewTicker(lostPoll)
		defer tick.Stop()
		for {
			select {
			case <-quit:
				return
			case <-tick.C:
			}
			if r, cause, ok := tcpLoss(tcp.CheckPeers()); ok {
				lost(r, cause)
				return
			}
		}
	}()
	return func() { close(quit); <-done }, nil
}
