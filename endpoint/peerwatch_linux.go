package endpoint

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// watchPeers starts the goroutine of the lost-process watch: it parks in
// poll(2) on a pidfd of each process of node and on an eventfd that stop
// signals, waking every lostPoll to check tcp too when it is set. It calls
// lost once, for the first process found gone, and then returns. stop ends
// it, waits for it and closes the descriptors.
func watchPeers(node []watched, tcp interface{ CheckPeers() error }, lost func(rank int, cause string)) (stop func(), err error) {
	wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	fds := []unix.PollFd{{Fd: int32(wake), Events: unix.POLLIN}}
	var ranks, pids []int
	for _, w := range node {
		fd, err := unix.PidfdOpen(w.pid, 0)
		if err != nil {
			if errors.Is(err, unix.ESRCH) {
				// Gone already: reported at the first poll below,
				// through a descriptor that is always ready.
				fd, err = unix.Eventfd(1, unix.EFD_CLOEXEC)
			}
			if err != nil {
				closeAll(fds)
				return nil, fmt.Errorf("pidfd_open of process %d (pid %d): %w", w.rank, w.pid, err)
			}
		}
		fds = append(fds, unix.PollFd{Fd: int32(fd), Events: unix.POLLIN})
		ranks, pids = append(ranks, w.rank), append(pids, w.pid)
	}
	timeout := -1
	if tcp != nil {
		timeout = int(lostPoll.Milliseconds())
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			for i := range fds {
				fds[i].Revents = 0
			}
			// A blocking system call: this goroutine holds a thread
			// while it waits, nothing else does.
			_, err := unix.Poll(fds, timeout)
			if err != nil && !errors.Is(err, unix.EINTR) {
				fmt.Fprintf(os.Stderr, "fibermpi: no longer watching the other processes: poll: %v\n", err)
				return
			}
			if fds[0].Revents != 0 {
				return // stop
			}
			for i, fd := range fds[1:] {
				if fd.Revents != 0 {
					lost(ranks[i], fmt.Sprintf("its process (pid %d, on this node) ended while the job ran", pids[i]))
					return
				}
			}
			if tcp != nil {
				if r, cause, ok := tcpLoss(tcp.CheckPeers()); ok {
					lost(r, cause)
					return
				}
			}
		}
	}()
	return func() {
		var one [8]byte
		one[0] = 1 // an eventfd adds the native-endian 8-byte value; any non-zero wakes
		_, _ = unix.Write(wake, one[:])
		<-done
		closeAll(fds)
	}, nil
}

func closeAll(fds []unix.PollFd) {
	for _, fd := range fds {
		_ = unix.Close(int(fd.Fd))
	}
}
