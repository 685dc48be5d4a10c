//go:build linux

package main

import (
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
