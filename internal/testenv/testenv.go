// Package testenv tells tests about the build they run in, and measures
// what benchmarks and the example programs report beside wall-clock time
// (ProcessCPU).
package testenv

// MaxGoroutines is a safe number of goroutines (fibers are goroutines too)
// for one test to keep alive at once. The race detector allows 8128; without
// it the bound is memory, so tests size their large cases with this.
func MaxGoroutines() int {
	if RaceEnabled {
		return 4000
	}
	return 1 << 20
}
