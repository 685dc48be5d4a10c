//go:build !linux

package fiber

import "time"

// canBind is false: workers are not bound to CPUs here.
const canBind = false

func getcpu() int32 { return -1 }

func bindTo(int32, []int) bool { return false }

func runnableThreads() int { return -1 }

func cpuIdleTimes([]int, []time.Duration) bool { return false }
