//go:build !unix

package testenv

import "time"

// ProcessCPU returns 0: the process's CPU time is not read on this platform.
func ProcessCPU() time.Duration { return 0 }
