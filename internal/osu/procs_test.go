package osu

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/fibermpi/fibermpi/endpoint"
	"github.com/fibermpi/fibermpi/internal/jobtest"
)

// runProcs runs cfg as a job of procs processes, simulated in this OS
// process (internal/jobtest: an in-memory bootstrap and a shared wire), each
// calling Run as `fmpirun -n procs fmpi-osu` would. It returns each
// process's output.
func runProcs(t *testing.T, procs int, cfg Config, wireLimit int) []string {
	t.Helper()
	boots := jobtest.NewMemJob(procs)
	wire := jobtest.NewWire(wireLimit)
	outs := make([]bytes.Buffer, procs)
	errs := make([]error, procs)
	var wg sync.WaitGroup
	for i := range procs {
		wg.Go(func() {
			opts := Options{Endpoint: endpoint.Options{Workers: 1, Bootstrap: boots[i], Remote: wire.Port()}}
			if errs[i] = Run(cfg, opts, &outs[i]); errs[i] != nil {
				jobtest.Fail(boots, fmt.Errorf("process %d: %w", i, errs[i]))
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("%+v on %d processes: %v", cfg, procs, err)
	}
	s := make([]string, procs)
	for i := range outs {
		s[i] = outs[i].String()
	}
	return s
}

// Process mode: each (simulated) process is a rank; only rank 0 prints.
func TestRunProcesses(t *testing.T) {
	cases := []struct {
		procs int
		cfg   Config
	}{
		{2, Config{Bench: Latency, MaxSize: 16384}}, // eager and rendezvous
		{2, Config{Bench: BW}},
		{2, Config{Bench: BiBW}},
		{2, Config{Bench: MbwMr}},
		{4, Config{Bench: MbwMr}}, // pairs = processes/2
		{3, Config{Bench: MbwMr, Pairs: 1}},
		{2, Config{Bench: LatencyMT, Threads: 3}},
		{3, Config{Bench: Allreduce, Full: true}},
		{3, Config{Bench: Bcast}},
		{2, Config{Bench: Reduce, Full: true}},
		{2, Config{Bench: Barrier}},
	}
	for ci, c := range cases {
		for _, limit := range []int{0, 8} { // a synchronous wire; a bounded queue
			cfg := tiny(c.cfg)
			t.Run(fmt.Sprintf("%d-%s/procs=%d/wire=%d", ci, cfg.Bench, c.procs, limit), func(t *testing.T) {
				outs := runProcs(t, c.procs, cfg, limit)
				for i, o := range outs[1:] {
					if o != "" {
						t.Errorf("process %d printed %q; only rank 0 prints", i+1, o)
					}
				}
				if want := fmt.Sprintf("; %d processes;", c.procs); !strings.Contains(outs[0], want) {
					t.Errorf("title does not say %q:\n%s", want, outs[0])
				}
				if cfg.Bench == MbwMr && cfg.Pairs == 0 {
					cfg.Pairs = c.procs / 2 // what checkOutput expects in the notes
				}
				checkOutput(t, cfg, outs[0])
			})
		}
	}
}

// latency, bw and latency_mt need exactly two ranks: three processes are
// refused by every one of them, before anything is sent.
func TestRunProcessesWrongSize(t *testing.T) {
	for _, b := range []Bench{Latency, BW, LatencyMT} {
		boots := jobtest.NewMemJob(3)
		wire := jobtest.NewWire(0)
		errs := make([]error, 3)
		var wg sync.WaitGroup
		for i := range 3 {
			wg.Go(func() {
				var out bytes.Buffer
				errs[i] = Run(tiny(Config{Bench: b}), Options{Endpoint: endpoint.Options{Workers: 1, Bootstrap: boots[i], Remote: wire.Port()}}, &out)
			})
		}
		wg.Wait()
		for i, err := range errs {
			if !errors.Is(err, ErrConfig) {
				t.Errorf("%s on 3 processes: process %d: %v, want ErrConfig", b, i, err)
			}
		}
	}
}
