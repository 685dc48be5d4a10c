package endpoint

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// TestWithEnv: each FIBERMPI_ variable sets its field when the program
// left it at zero, an explicit field wins, and a bad value is an *EnvError
// naming the variable.
func TestWithEnv(t *testing.T) {
	good := []struct {
		env  map[string]string
		opts Options
		want func(o Options) any
		val  any
	}{
		{map[string]string{EnvWorkers: "3"}, Options{}, func(o Options) any { return o.Workers }, 3},
		{map[string]string{EnvWorkers: "3"}, Options{Workers: 5}, func(o Options) any { return o.Workers }, 5},
		{map[string]string{EnvEagerLimit: "4k"}, Options{}, func(o Options) any { return o.EagerLimit }, 4096},
		{map[string]string{EnvEagerLimit: "100"}, Options{}, func(o Options) any { return o.EagerLimit }, 100},
		{map[string]string{EnvEagerLimit: "-1"}, Options{}, func(o Options) any { return o.EagerLimit }, -1},
		{map[string]string{EnvEagerLimit: "100"}, Options{EagerLimit: 7}, func(o Options) any { return o.EagerLimit }, 7},
		{map[string]string{EnvEagerLimit: "32k"}, Options{}, func(o Options) any { return [2]int{o.EagerLimit, o.PayloadSize} }, [2]int{32768, 32768}},
		{map[string]string{EnvEagerLimit: "4k"}, Options{}, func(o Options) any { return o.PayloadSize }, 0},
		{map[string]string{EnvProgress: "server"}, Options{}, func(o Options) any { return o.Progress }, ProgressServer},
		{map[string]string{EnvProgress: "Caller"}, Options{}, func(o Options) any { return o.Progress }, ProgressCaller},
		{map[string]string{EnvProgress: "caller"}, Options{Progress: ProgressServer}, func(o Options) any { return o.Progress }, ProgressServer},
		{map[string]string{EnvPin: "1"}, Options{}, func(o Options) any { return [2]any{o.Fiber.Pin, len(o.Fiber.CPUs)} }, [2]any{true, 0}},
		{map[string]string{EnvPin: "off"}, Options{}, func(o Options) any { return o.Fiber.Pin }, false},
		{map[string]string{EnvPin: "0,2,4-6"}, Options{}, func(o Options) any { return o.Fiber.CPUs }, []int{0, 2, 4, 5, 6}},
		{map[string]string{EnvTransport: "tcp"}, Options{}, func(o Options) any { return o.ForceTCP }, false}, // read at connect
		{map[string]string{EnvTransport: "shm", EnvBind: "none"}, Options{}, func(o Options) any { return o.ForceTCP }, false},
		{map[string]string{EnvWorkers: ""}, Options{}, func(o Options) any { return o.Workers }, 0},
	}
	for _, g := range good {
		o, err := g.opts.withEnv(envOf(g.env))
		if err != nil {
			t.Errorf("%v over %+v: %v", g.env, g.opts, err)
			continue
		}
		if d := cmp.Diff(g.val, g.want(o)); d != "" {
			t.Errorf("%v over %+v (-want +got):\n%s", g.env, g.opts, d)
		}
	}
	bad := []map[string]string{
		{EnvWorkers: "two"}, {EnvWorkers: "0"}, {EnvWorkers: "-4"},
		{EnvEagerLimit: "lots"}, {EnvEagerLimit: "0"}, {EnvEagerLimit: "5000000"},
		{EnvProgress: "fast"},
		{EnvPin: "maybe"}, {EnvPin: "3-1"}, {EnvPin: "1,,2"},
		{EnvTransport: "udp"}, {EnvBind: "socket"}, {EnvShmPut: "cma"}, {EnvMPIRendezvous: "rdma"},
		{EnvMPIWhole: "64"}, {EnvMPIWhole: "0"}, {EnvMPIWhole: "lots"},
		{EnvMPIPieces: "0"}, {EnvMPIPieces: "65"}, {EnvMPIPieces: "four"},
	}
	for _, env := range bad {
		_, err := Options{}.withEnv(envOf(env))
		var ee *EnvError
		if !errors.As(err, &ee) || !errors.Is(err, ErrEnv) {
			t.Errorf("%v: %v, want an *EnvError", env, err)
			continue
		}
		for name := range env {
			if ee.Name != name || !strings.Contains(err.Error(), name) {
				t.Errorf("%v: error %q does not name %s", env, err, name)
			}
		}
	}
}

// TestMPITuning checks what FIBERMPI_MPI_WHOLE and FIBERMPI_MPI_PIECES
// give rdma/mpi's Config (their bad values are in TestWithEnv).
func TestMPITuning(t *testing.T) {
	for _, tc := range []struct {
		env           map[string]string
		whole, pieces int
	}{
		{map[string]string{}, 0, 0},
		{map[string]string{EnvMPIWhole: "8k", EnvMPIPieces: "2"}, 8192, 2},
		{map[string]string{EnvMPIWhole: "4032"}, 4032, 0},
		{map[string]string{EnvMPIWhole: "-1", EnvMPIPieces: "-1"}, -1, -1},
		{map[string]string{EnvMPIWhole: "128", EnvMPIPieces: "64"}, 128, 64},
		{map[string]string{EnvMPIWhole: "", EnvMPIPieces: ""}, 0, 0},
	} {
		whole, pieces, err := mpiTuning(envOf(tc.env))
		if err != nil || whole != tc.whole || pieces != tc.pieces {
			t.Errorf("%v: %d, %d, %v; want %d, %d", tc.env, whole, pieces, err, tc.whole, tc.pieces)
		}
	}
}

// FIBERMPI_EAGER_LIMIT above a payload size the program set is an error
// naming the variable; left unset, the payload grows to the limit (above).
func TestEnvEagerOverPayload(t *testing.T) {
	_, err := Options{PayloadSize: 4096}.withEnv(envOf(map[string]string{EnvEagerLimit: "8k"}))
	var ee *EnvError
	if !errors.As(err, &ee) || ee.Name != EnvEagerLimit || !strings.Contains(err.Error(), "4096") {
		t.Fatalf("8k over PayloadSize 4096: %v, want an *EnvError naming %s and the size", err, EnvEagerLimit)
	}
}

// TestInitEnv: Init reads the environment: FIBERMPI_WORKERS sizes the
// scheduler, and a bad FIBERMPI_PROGRESS fails Init with its name.
func TestInitEnv(t *testing.T) {
	t.Setenv(EnvWorkers, "1")
	t.Setenv(EnvEagerLimit, "2k")
	p, err := Init(ThreadSingle, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if w := p.Scheduler().Workers(); w != 1 {
		t.Errorf("FIBERMPI_WORKERS=1: %d workers", w)
	}
	if e := p.Options().EagerLimit; e != 2048 {
		t.Errorf("FIBERMPI_EAGER_LIMIT=2k: EagerLimit %d", e)
	}
	if err := p.Finalize(); err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvProgress, "sometimes")
	if _, err := Init(ThreadSingle, Options{}); err == nil || !strings.Contains(err.Error(), EnvProgress) {
		t.Fatalf("Init with FIBERMPI_PROGRESS=sometimes: %v", err)
	}
}
