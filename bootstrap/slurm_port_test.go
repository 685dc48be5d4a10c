package bootstrap

import "testing"

// TestSlurmStorePortBelowEphemeral: every derived store port lies below
// Linux's default ephemeral range, where no outgoing connection holds it,
// and steps of one job get different ports.
func TestSlurmStorePortBelowEphemeral(t *testing.T) {
	seen := map[int]bool{}
	for job := uint64(0); job < 3000; job += 7 {
		for step := uint64(0); step < 4; step++ {
			p := slurmStorePort(job, step)
			if p < 1024 || p >= 32768 {
				t.Fatalf("job %d step %d: port %d outside [1024, 32768)", job, step, p)
			}
			if job == 0 {
				if seen[p] {
					t.Fatalf("job 0: two steps got port %d", p)
				}
				seen[p] = true
			}
		}
	}
}
