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
		"Cart.NeighborAlltoall", "Comm.Mprobe", "Comm.Mrecv", "SendValue", "IrecvValue", "BcastValue",
		"GatherValue", "Comm.RecvContext", "Comm.Isend", "Comm.Irecv", "Comm.Barrier", "Comm.Gather",
		"Comm.Scatter", "Comm.Allgather", "Comm.Alltoall", "Comm.Scan",
	},
	"../../../endpoint": {"Run", "RunGoroutines", "RunContext", "Process.CreateEndpoints", "Init",
		"Process.Finalize", "Endpoint.Send", "Endpoint.Recv", "Endpoint.Mprobe"},
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

// TestCoverage keeps issue 15's floor: Examples for at least 60% of the
// exported functions and methods of comm and endpoint (every one counted,
// Error and String methods included).
func TestCoverage(t *testing.T) {
	for _, dir := range []string{"../../../comm", "../../../endpoint"} {
		have, without, err := count(dir)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(have) + len(without); 10*len(have) < 6*n {
			t.Errorf("%s: %d of %d exported functions and methods have an Example, under 60%%", dir, len(have), n)
		}
	}
}
