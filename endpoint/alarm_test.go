package endpoint_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/fibermpi/fibermpi/endpoint"
	"github.com/fibermpi/fibermpi/fiber"
	"github.com/fibermpi/fibermpi/internal/fmpitest"
)

// TestArrivalWakesSleepingWorker: two processes over shared memory play
// ping-pong with a pause before each ping, long enough for the idle workers
// of both to fall asleep. Their poll interval is an hour, so only a wake-up
// by the arrival (the transport's alarm, fiber.Config.Alarm) can end those
// sleeps within the run's bound: a worker that slept until its poll would
// hold the job past fmpirun's timeout. The child prints the median time
// from ping to pong; the test logs it (a figure, not a pass condition).
func TestArrivalWakesSleepingWorker(t *testing.T) {
	if fmpitest.Child() {
		alarmChild(t, 1)
		return
	}
	out, err := fmpitest.RunTest(t, 2, fmpitest.Options{Timeout: time.Minute})
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	t.Logf("%s", out)
}

// TestArrivalWakesSleepingWorkers is TestArrivalWakesSleepingWorker with
// two workers per process, the ranks' fibers on the second: an arrival
// wakes one sleeping worker, which delivers it and wakes the fiber's.
func TestArrivalWakesSleepingWorkers(t *testing.T) {
	if fmpitest.Child() {
		alarmChild(t, 2)
		return
	}
	out, err := fmpitest.RunTest(t, 2, fmpitest.Options{Timeout: time.Minute})
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	t.Logf("%s", out)
}

// alarmChild is one process of the ping-pong, with the given workers; the
// rank's fiber runs on the last.
func alarmChild(t *testing.T, workers int) {
	const rounds = 30
	p, err := endpoint.Init(endpoint.ThreadSingle, endpoint.Options{
		Workers: workers,
		Fiber:   fiber.Config{SleepAfter: 20 * time.Microsecond, PollInterval: time.Hour},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Finalize()
	if got := p.Scheduler().Config(); got.Alarm == nil {
		t.Fatalf("the fiber scheduler of a shared-memory job has no alarm: %v", got)
	}
	w := p.World()
	var rtt []time.Duration
	errc := make(chan error, 1)
	if err := p.Scheduler().SpawnOn(workers-1, func(f *fiber.Fiber) {
		errc <- func() error {
			h, err := w.Register(f.Waiter())
			if err != nil {
				return err
			}
			defer h.Unregister()
			c, me := h.World(), h.Rank()
			buf := make([]byte, 8)
			for i := range rounds {
				if me == 0 {
					fiber.Sleep(f.Waiter(), 2*time.Millisecond) // both workers fall asleep
					start := time.Now()
					buf[0] = byte(i)
					if err := h.Send(c, me, 1, 7, buf); err != nil {
						return err
					}
					if _, err := h.Recv(c, 1, 8, buf); err != nil {
						return err
					}
					rtt = append(rtt, time.Since(start))
					if buf[0] != byte(i)+1 {
						return fmt.Errorf("round %d: pong carries %d", i, buf[0])
					}
					continue
				}
				if _, err := h.Recv(c, 0, 7, buf); err != nil {
					return err
				}
				buf[0]++
				if err := h.Send(c, me, 0, 8, buf); err != nil {
					return err
				}
			}
			return nil
		}()
	}); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if len(rtt) > 0 {
		slices.Sort(rtt)
		fmt.Printf("ping to pong after both slept: median %v, max %v over %d rounds\n", rtt[len(rtt)/2], rtt[len(rtt)-1], len(rtt))
	}
}
