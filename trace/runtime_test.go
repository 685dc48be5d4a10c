package trace_test

import (
	"bytes"
	"errors"
	"path/filepath"
	"runtime/pprof"
	rtrace "runtime/trace"
	"strings"
	"testing"
	"time"

	"github.com/fibermpi/fibermpi/endpoint"
)

// TestRuntimeTraceRegions: with tracing on, blocking calls are
// runtime/trace regions, so `go tool trace` shows them.
func TestRuntimeTraceRegions(t *testing.T) {
	if rtrace.IsEnabled() {
		t.Skip("runtime/trace already running (go test -trace)")
	}
	var buf bytes.Buffer
	if err := rtrace.Start(&buf); err != nil {
		t.Fatal(err)
	}
	opts := endpoint.Options{Trace: filepath.Join(t.TempDir(), "t.json")}
	err := endpoint.RunWith(endpoint.ThreadSingle, opts, 2, func(ep *endpoint.Endpoint) error {
		w, me := ep.World(), ep.Rank()
		if me == 0 {
			return ep.Send(w, me, 1, 0, []byte("hi"))
		}
		_, err := ep.Recv(w, 0, 0, make([]byte, 2))
		return err
	})
	rtrace.Stop()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(buf.Bytes(), []byte("fibermpi.Recv")) {
		t.Errorf("no fibermpi.Recv region in the runtime trace (%d bytes)", buf.Len())
	}
}

// TestPprofLabels: with tracing on, a registered caller's goroutine
// carries pprof labels naming its rank and endpoint, as a goroutine
// profile taken while it waits shows.
func TestPprofLabels(t *testing.T) {
	opts := endpoint.Options{Trace: filepath.Join(t.TempDir(), "t.json")}
	err := endpoint.RunGoroutinesWith(endpoint.ThreadSingle, opts, 2, func(ep *endpoint.Endpoint) error {
		w, me := ep.World(), ep.Rank()
		if me == 1 {
			_, err := ep.Recv(w, 0, 0, make([]byte, 1))
			return err
		}
		var prof bytes.Buffer
		found := false
		for deadline := time.Now().Add(10 * time.Second); !found && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			prof.Reset()
			if err := pprof.Lookup("goroutine").WriteTo(&prof, 1); err != nil {
				return err
			}
			found = strings.Contains(prof.String(), `"fibermpi.rank":"1"`) && strings.Contains(prof.String(), `"fibermpi.endpoint":"`)
		}
		serr := ep.Send(w, me, 1, 0, []byte{1}) // release rank 1 either way
		if !found {
			return errors.New("no goroutine labelled fibermpi.rank=1 in the goroutine profile:\n" + prof.String())
		}
		return serr
	})
	if err != nil {
		t.Fatal(err)
	}
}
