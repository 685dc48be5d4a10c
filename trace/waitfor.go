package trace

import (
	"cmp"
	"slices"
)

// WaitFor is the wait-for graph of a deadlock report: which rank waited on
// which when the job stopped with every rank blocked and nothing in
// flight. The endpoint layer's deadlock detector gives it to
// Recorder.SetDeadlock; cmd/fmpi-trace draws it.
type WaitFor struct {
	// At is when the deadlock was reported (ns since the epoch).
	At int64 `json:"at"`
	// Edges are the waits: From (a world rank) waits in Call for To.
	Edges []WaitEdge `json:"edges"`
	// Idle lists ranks with no caller (returned or never started).
	Idle []int `json:"idle,omitempty"`
	// Cycle is a wait-for cycle, its first rank repeated at the end; nil
	// if there is none.
	Cycle []int `json:"cycle,omitempty"`
	// Report is the report's text as the runtime gave it.
	Report string `json:"report,omitempty"`
}

// WaitEdge is one wait of a WaitFor graph.
type WaitEdge struct {
	From int    `json:"from"`
	To   int    `json:"to"`
	Call string `json:"call"`         // Recv, Send, Wait, a collective, …
	Op   string `json:"op,omitempty"` // what it waits for, e.g. "receive from 1 tag 0"
}

// SetDeadlock records the wait-for graph of a deadlock report; the last
// one recorded is kept, and written with the trace.
func (rc *Recorder) SetDeadlock(w WaitFor) {
	if rc == nil {
		return
	}
	if w.At == 0 {
		w.At = Now()
	}
	rc.mu.Lock()
	rc.deadlock = &w
	rc.mu.Unlock()
}

// InCycle reports whether the edge from → to is part of the cycle.
func (w *WaitFor) InCycle(from, to int) bool {
	for i := 0; i+1 < len(w.Cycle); i++ {
		if w.Cycle[i] == from && w.Cycle[i+1] == to {
			return true
		}
	}
	return false
}

// merge joins two processes' parts of one deadlock report: the union of
// their waits and idle ranks, the longer cycle, the later time, both texts.
func (w *WaitFor) merge(o *WaitFor) *WaitFor {
	if w == nil {
		c := *o
		c.Edges, c.Idle, c.Cycle = slices.Clone(o.Edges), slices.Clone(o.Idle), slices.Clone(o.Cycle)
		return &c
	}
	w.At = max(w.At, o.At)
	for _, e := range o.Edges {
		if !slices.Contains(w.Edges, e) {
			w.Edges = append(w.Edges, e)
		}
	}
	slices.SortFunc(w.Edges, func(a, b WaitEdge) int { return cmp.Or(cmp.Compare(a.From, b.From), cmp.Compare(a.To, b.To)) })
	w.Idle = append(w.Idle, o.Idle...)
	slices.Sort(w.Idle)
	w.Idle = slices.Compact(w.Idle)
	// A rank one process saw no caller of may be blocked at another.
	w.Idle = slices.DeleteFunc(w.Idle, func(r int) bool {
		return slices.ContainsFunc(w.Edges, func(e WaitEdge) bool { return e.From == r })
	})
	if len(o.Cycle) > len(w.Cycle) {
		w.Cycle = slices.Clone(o.Cycle)
	}
	if o.Report != "" && o.Report != w.Report {
		if w.Report != "" {
			w.Report += "\n"
		}
		w.Report += o.Report
	}
	return w
}
