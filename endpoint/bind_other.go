//go:build !linux

package endpoint

import "errors"

var errNoAffinity = errors.New("endpoint: binding to CPUs is supported on Linux only")

func allowedCPUs() ([]int, error) { return nil, errNoAffinity }

func bindThreads([]int) error { return errNoAffinity }

func cpuMask() string { return "" }

func demoteMonitor() {}
