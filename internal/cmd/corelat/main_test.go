//go:build linux

package main

import (
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// TestMeasure: the round trips all happen (measure returns) and the
// figures are ordered; on a machine of one CPU it says so.
func TestMeasure(t *testing.T) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		t.Fatal(err)
	}
	p50, lo, cpus, err := measure(2050, 100)
	if set.Count() < 2 {
		if err == nil {
			t.Fatalf("one CPU, yet measure gave %v", p50)
		}
		t.Skipf("one CPU: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if lo <= 0 || p50 < lo {
		t.Errorf("p50 %v, min %v: want 0 < min <= p50", p50, lo)
	}
	if cpus[0] == cpus[1] || !set.IsSet(cpus[0]) || !set.IsSet(cpus[1]) {
		t.Errorf("cpus %v: want two different allowed CPUs", cpus)
	}
}

// TestMeasureOneP: under GOMAXPROCS=1 measure still runs both sides at once
// (it raises the setting for the measurement) and leaves the setting as
// it found it.
func TestMeasureOneP(t *testing.T) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		t.Fatal(err)
	}
	if set.Count() < 2 {
		t.Skip("one CPU: nothing to measure")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	if _, _, _, err := measure(2050, 100); err != nil {
		t.Fatal(err)
	}
	if got := runtime.GOMAXPROCS(0); got != 1 {
		t.Errorf("GOMAXPROCS %d after measure, want 1 as before", got)
	}
}

// TestWork: the work runs on the CPU asked for and takes some time; a CPU
// the process may not use is an error.
func TestWork(t *testing.T) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		t.Fatal(err)
	}
	c := -1
	for i := 0; i < 1024; i++ {
		if set.IsSet(i) {
			c = i
			break
		}
	}
	d, err := work(c)
	if err != nil {
		t.Fatal(err)
	}
	if d <= 0 {
		t.Errorf("work on cpu %d took %v", c, d)
	}
	if _, err := work(1 << 20); err == nil {
		t.Error("work on a CPU that does not exist: no error")
	}
}
