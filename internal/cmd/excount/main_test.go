package main

import (
	"slices"
	"testing"
)

// entryPoints are the functions and methods that issue 15 names as a
// program's main entry points: each must keep an Example.
var entryPoints = map[string][]string{
	"../../../comm": {
		"World", "Comm.Send", "Comm.Recv", "Comm.Sendrecv", "Comm.Probe", "Comm.Bcast", "Comm.Reduce",
		"Comm.Gatherv", "Comm.Allreduce", "Comm.Iallreduce", "Comm.RecvLayout", "Comm.SendLayout",
		"Comm.IrecvInto", "Comm.Split", "Comm.Dup", "Request.Wait", "Request.Done", "Request.WaitContext",
		"Request.Cancel", "CollRequest.Done", "CollRequest.WaitContext", "WaitAll", "WaitAllContext",
		"WaitAny", "CartCreate", "Cart.Shift", "Cart.Coords", "Cart.NeighborAllgather",
		"Cart.NeighborAlltoall",
	},
	"../../../endpoint": {"Run", "RunGoroutines", "RunContext", "Process.CreateEndpoints"},
	"../../../commtest": {"Run"},
	"../../../fiber":    {"WaitGroup.Wait", "Mutex.Lock"},
}

// TestEntryPointsHaveExamples fails when one of the entry points loses its
// Example (a rename, a deleted file).
func TestEntryPointsHaveExamples(t *testing.T) {
	for dir, names := range entryPoints {
		have, _, err := count(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			if !slices.Contains(have, n) {
				t.Errorf("%s: %s has no Example", dir, n)
			}
		}
	}
}
