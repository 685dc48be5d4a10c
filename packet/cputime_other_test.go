//go:build !linux

package packet

// threadCPUTime is not available here; BenchmarkPool omits cpu-ns/op.
func threadCPUTime() (int64, bool) { return 0, false }
