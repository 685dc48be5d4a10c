//go:build unix

package testenv

import (
	"syscall"
	"time"
)

// ProcessCPU returns the CPU time (user + system) the process has used, or
// 0 if it cannot be read. Benchmarks report it per op beside wall-clock
// time: on a machine shared with other work the OS takes the cores away for
// a while and ns/op grows, while the CPU time per op does not.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
