package bootstrap

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// storeJob joins n clients of one store job from goroutines of this
// process (they run one binary, so the store accepts them).
func storeJob(t *testing.T, n int, key string) []Bootstrap {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	bs := make([]Bootstrap, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Go(func() { bs[r], errs[r] = openStoreJob("torchrun", r, n, addr, key, "test") })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, b := range bs {
			if b != nil {
				b.(*client).conn.Close()
			}
		}
		t.Fatal(err)
	}
	return bs
}

func closeAll(t *testing.T, bs []Bootstrap) {
	t.Helper()
	var wg sync.WaitGroup
	for _, b := range bs {
		wg.Go(func() {
			if err := b.Close(); err != nil && !errors.Is(err, ErrClosed) && !errors.Is(err, net.ErrClosed) {
				t.Errorf("Close: %v", err)
			}
		})
	}
	wg.Wait()
}

func TestStoreExchange(t *testing.T) {
	const n = 3
	bs := storeJob(t, n, "job-a")
	defer closeAll(t, bs)
	id := bs[0].JobID()
	for r, b := range bs {
		if b.Rank() != r || b.Size() != n || b.Name() != "torchrun" || b.JobID() != id || len(id) != 16 {
			t.Fatalf("rank %d: %s rank %d size %d job %q (rank 0: %q)", r, b.Name(), b.Rank(), b.Size(), b.JobID(), id)
		}
	}
	var wg sync.WaitGroup
	for r, b := range bs {
		wg.Go(func() {
			if err := b.Put("k", []byte(strconv.Itoa(r*10))); err != nil {
				t.Error(err)
			}
			if err := b.Fence(); err != nil {
				t.Error(err)
				return
			}
			for q := range n {
				if v, err := b.Get(q, "k"); err != nil || string(v) != strconv.Itoa(q*10) {
					t.Errorf("rank %d: Get(%d) = %q, %v", r, q, v, err)
				}
			}
			if err := b.Barrier(); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
}

// A process whose connection ends without Close is reported to the others
// by rank, and their collectives fail with it.
func TestStoreLostPeer(t *testing.T) {
	bs := storeJob(t, 3, "job-b")
	defer closeAll(t, bs)
	bs[2].(*client).conn.Close() // as if killed
	for r := range 2 {
		select {
		case err := <-bs[r].Failed():
			pe, ok := errors.AsType[*PeerError](err)
			if !ok || pe.Rank != 2 || !errors.Is(err, ErrPeerLost) || !strings.Contains(err.Error(), "died or was killed") {
				t.Errorf("rank %d: Failed gave %v, want rank 2 lost", r, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("rank %d: no Failed notice for 10 s", r)
		}
		if err := bs[r].Barrier(); !errors.Is(err, ErrPeerLost) {
			t.Errorf("rank %d: Barrier after the loss: %v", r, err)
		}
	}
}

func TestStoreAbort(t *testing.T) {
	bs := storeJob(t, 2, "job-c")
	defer closeAll(t, bs)
	if err := bs[1].Abort(7, "reason-plugh"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-bs[0].Failed():
		pe, ok := errors.AsType[*PeerError](err)
		if !ok || pe.Rank != 1 || !errors.Is(err, ErrAborted) || !strings.Contains(err.Error(), "code 7: reason-plugh") {
			t.Errorf("Failed gave %v, want rank 1's abort", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no Failed notice for 10 s")
	}
}

// Processes of another job (another key) and a rank claimed twice are
// refused.
func TestStoreRefusals(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	st, err := startStore(addr, 2, "job-d")
	if err != nil {
		t.Fatal(err)
	}
	defer st.stop(0)
	dial := func(rank int, key string) error {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			return err
		}
		b, err := join(conn, "torchrun", storeServer, rank, 2, key, 0)
		if err == nil {
			b.(*client).conn.Close()
			return fmt.Errorf("joined")
		}
		return err
	}
	if err := dial(1, "job-e"); !errors.Is(err, ErrMismatch) || !strings.Contains(err.Error(), "two jobs share the port") {
		t.Errorf("a process of another job: %v", err)
	}
	if err := dial(5, "job-d"); !errors.Is(err, ErrMismatch) {
		t.Errorf("rank 5 of 2: %v", err)
	}
}

// A process of a store job that neither exits nor closes its bootstrap
// after a failure ends itself, with the abort's code.
func TestStoreEndsProcess(t *testing.T) {
	codes := make(chan int, 2)
	exit = func(code int) { codes <- code }
	defer func() { exit = os.Exit }()
	bs := storeJob(t, 2, "job-f")
	defer closeAll(t, bs)
	if err := bs[1].Abort(7, "reason-xyzzy"); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-codes:
		if code != 7 {
			t.Errorf("the process would end with %d, want 7", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("rank 0 did not end itself within 10 s of the abort")
	}
	select {
	case <-codes:
		t.Error("the aborting process ended itself too: its caller exits")
	default:
	}
}
