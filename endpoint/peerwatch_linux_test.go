package endpoint

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/fibermpi/fibermpi/rdma/tcp"
)

// startSleeper starts a process that lives until killed, reaped by the
// test's cleanup.
func startSleeper(t *testing.T) *exec.Cmd {
	t.Helper()
	c := exec.Command("sleep", "60")
	if err := c.Start(); err != nil {
		t.Skipf("cannot start sleep: %v", err)
	}
	t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
	return c
}

type loss struct {
	rank  int
	cause string
}

// TestWatchPeersPidfd: of two watched processes, the one killed is
// reported, once, by its rank; stop ends the watch.
func TestWatchPeersPidfd(t *testing.T) {
	a, b := startSleeper(t), startSleeper(t)
	got := make(chan loss, 2)
	stop, err := watchPeers([]watched{{rank: 3, pid: a.Process.Pid}, {rank: 5, pid: b.Process.Pid}}, nil,
		func(r int, c string) { got <- loss{r, c} })
	if err != nil {
		t.Skipf("no pidfd here: %v", err)
	}
	defer stop()
	select {
	case l := <-got:
		t.Fatalf("reported %v before anything died", l)
	case <-time.After(20 * time.Millisecond):
	}
	_ = b.Process.Kill()
	_ = b.Wait() // reaped: its pidfd is readable from the exit on, zombie or not
	select {
	case l := <-got:
		if l.rank != 5 || !strings.Contains(l.cause, "ended while the job ran") {
			t.Errorf("reported rank %d: %q; want rank 5", l.rank, l.cause)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the killed process was not reported within 10 s")
	}
}

// TestWatchPeersGoneBefore: a process gone before the watch starts is
// reported at once.
func TestWatchPeersGoneBefore(t *testing.T) {
	c := startSleeper(t)
	_ = c.Process.Kill()
	_ = c.Wait()
	got := make(chan loss, 1)
	stop, err := watchPeers([]watched{{rank: 2, pid: c.Process.Pid}}, nil, func(r int, cs string) { got <- loss{r, cs} })
	if err != nil {
		t.Skipf("no pidfd here: %v", err)
	}
	defer stop()
	select {
	case l := <-got:
		if l.rank != 2 {
			t.Errorf("reported rank %d, want 2", l.rank)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a process gone before the watch was not reported")
	}
}

// checker is a TCP transport's CheckPeers, scripted.
type checker struct{ err chan error }

func (c checker) CheckPeers() error {
	select {
	case err := <-c.err:
		return err
	default:
		return nil
	}
}

// TestWatchPeersTCP: a failed connection is reported with the rank of the
// tcp.PeerError; a peer that closed on purpose never reaches the watch
// (CheckPeers leaves it out), and stop with nothing found reports nothing.
func TestWatchPeersTCP(t *testing.T) {
	c := checker{err: make(chan error, 1)}
	got := make(chan loss, 1)
	stop, err := watchPeers(nil, c, func(r int, cs string) { got <- loss{r, cs} })
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	c.err <- &tcp.PeerError{Rank: 7, Err: tcp.ErrPeerGone}
	select {
	case l := <-got:
		if l.rank != 7 || !strings.Contains(l.cause, tcp.ErrPeerGone.Error()) {
			t.Errorf("reported rank %d: %q; want rank 7, ErrPeerGone", l.rank, l.cause)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the failed connection was not reported")
	}

	quiet := checker{err: make(chan error)}
	stop2, err := watchPeers(nil, quiet, func(r int, cs string) { t.Errorf("reported %d: %s", r, cs) })
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * lostPoll)
	stop2()
}

// TestTCPLoss: what the watch makes of CheckPeers' answers.
func TestTCPLoss(t *testing.T) {
	if _, _, ok := tcpLoss(nil); ok {
		t.Error("nil is a loss")
	}
	if _, _, ok := tcpLoss(errors.New("x: " + "closed")); !ok {
		t.Error("an unknown error is not a loss")
	}
	if r, _, ok := tcpLoss(&tcp.PeerError{Rank: 4, Err: tcp.ErrPeerGone}); !ok || r != 4 {
		t.Errorf("tcpLoss(PeerError rank 4) = %d, %v", r, ok)
	}
}
