package main

import "testing"

func TestRingRuns(t *testing.T) {
	for _, n := range []int{2, 3, 700} {
		if err := run(n, 3, 1); err != nil {
			t.Fatalf("run(%d, 3, 1): %v", n, err)
		}
	}
	if err := run(1, 1, 1); err == nil {
		t.Fatal("a ring of one fiber was accepted")
	}
}
