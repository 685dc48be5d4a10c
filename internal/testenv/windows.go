package testenv

import "testing"

// BenchWindows runs round, which moves window messages, as osu_mbw_mr's
// loop: 100 rounds of warm-up, then one round per window ops of b.Loop,
// so that one op is one message; it reports the process's processor time
// per op as cpu-ns/op.
func BenchWindows(b *testing.B, window int, round func()) {
	b.Helper()
	for range 100 {
		round()
	}
	cpu := ProcessCPU()
	n := 0
	for b.Loop() {
		if n%window == 0 {
			round()
		}
		n++
	}
	b.StopTimer()
	b.ReportMetric(float64(ProcessCPU()-cpu)/float64(b.N), "cpu-ns/op")
}
