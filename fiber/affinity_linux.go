//go:build linux

package fiber

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// allowedCPUs lists the CPUs this process may run on, in increasing order.
func allowedCPUs() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("fiber: sched_getaffinity: %w", err)
	}
	var out []int
	for c := 0; c < len(set)*64 && len(out) < set.Count(); c++ {
		if set.IsSet(c) {
			out = append(out, c)
		}
	}
	return out, nil
}

// pin binds the calling OS thread (which the caller has locked) to cpu.
func pin(cpu int) error {
	var set unix.CPUSet
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return fmt.Errorf("fiber: pinning worker to CPU %d: %w", cpu, err)
	}
	return nil
}
