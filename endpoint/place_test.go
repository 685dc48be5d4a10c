package endpoint

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPlaceOf: a process's place counts the processes of its host, and
// among them those that may use the same CPUs; processes of one OS process
// (same pid in the same pid namespace) are marked.
func TestPlaceOf(t *testing.T) {
	peers := []peer{
		{host: "a", pid: 10, pidns: "pid:[1]", cpus: "3"},
		{host: "a", pid: 11, pidns: "pid:[1]", cpus: "3"},
		{host: "b", pid: 10, pidns: "pid:[1]", cpus: "3"},
		{host: "a", pid: 13, pidns: "pid:[1]", cpus: "c"},
		{host: "a", pid: 10, pidns: "pid:[1]", cpus: "3"},
		{host: "a", pid: 14, pidns: "pid:[2]", cpus: "3"},
	}
	want := []place{
		{nodeProcs: 5, cpuRank: 0, cpuProcs: 4, sharedOS: true},
		{nodeProcs: 5, cpuRank: 1, cpuProcs: 4},
		{nodeProcs: 1, cpuRank: 0, cpuProcs: 1},
		{nodeProcs: 5, cpuRank: 0, cpuProcs: 1},
		{nodeProcs: 5, cpuRank: 2, cpuProcs: 4, sharedOS: true},
		{nodeProcs: 5, cpuRank: 3, cpuProcs: 4},
	}
	for rank := range peers {
		if got := placeOf(peers, rank); got != want[rank] {
			t.Errorf("rank %d: %+v, want %+v", rank, got, want[rank])
		}
	}
}

// TestShareOf: the CPUs a process may use are divided in blocks among the
// processes that may use the same ones, and kept whole by one that a
// launcher gave CPUs of its own.
func TestShareOf(t *testing.T) {
	cpus := func(from, to int) []int {
		var c []int
		for i := from; i < to; i++ {
			c = append(c, i)
		}
		return c
	}
	for _, tc := range []struct {
		name    string
		allowed []int
		pl      place
		want    []int
	}{
		{"two of one node, the second", cpus(0, 8), place{cpuRank: 1, cpuProcs: 2}, cpus(4, 8)},
		{"placed alone on its CPUs", cpus(8, 16), place{nodeProcs: 4, cpuRank: 0, cpuProcs: 1}, cpus(8, 16)},
		{"placed two to a socket", cpus(8, 16), place{nodeProcs: 4, cpuRank: 1, cpuProcs: 2}, cpus(12, 16)},
		{"three on eight CPUs", cpus(0, 8), place{cpuRank: 2, cpuProcs: 3}, cpus(4, 6)},
		{"oversubscribed", cpus(0, 2), place{cpuRank: 3, cpuProcs: 4}, nil},
		{"launcher-bound to one core", []int{1}, place{nodeProcs: 2, cpuProcs: 1}, []int{1}},
	} {
		if got := tc.pl.shareOf(tc.allowed); !cmp.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
