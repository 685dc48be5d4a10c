//go:build linux

package shm

import "fmt"

// RingsString describes every ring's positions, for test failures.
func (t *Transport) RingsString() string {
	s := fmt.Sprintf("rank %d:", t.rank)
	for _, ir := range t.in {
		s += fmt.Sprintf(" in[from %d] head %d tail %d queued %d;", ir.from, ir.ctl.head.Load(), ir.ctl.tail.Load(), ir.queued.Load())
	}
	for _, o := range t.out {
		if o != nil {
			s += fmt.Sprintf(" out[to %d] tail %d head %d;", o.proc, o.ctl.tail.Load(), o.ctl.head.Load())
		}
	}
	return s
}
