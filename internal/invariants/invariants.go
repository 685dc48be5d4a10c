// Package invariants holds checks that cost nothing in ordinary builds and
// are compiled in with the build tag "invariants":
//
//	go test -tags invariants ./...
//
// Code guards expensive consistency checks with the constant Enabled, so the
// compiler removes them entirely when the tag is absent:
//
//	if invariants.Enabled {
//		invariants.Check(p.owner == 0, "packet: double return")
//	}
package invariants

import "fmt"

// Violation is the panic value raised by Check and Failf when an invariant
// does not hold. It is a distinct type so tests can recognise it.
type Violation struct {
	Msg string
}

// Error reports the violated invariant.
func (v Violation) Error() string { return "invariant violated: " + v.Msg }

// Check panics with a Violation carrying msg when cond is false. Callers
// should guard calls with Enabled so the arguments are not even evaluated in
// ordinary builds.
func Check(cond bool, msg string) {
	if Enabled && !cond {
		panic(Violation{Msg: msg})
	}
}

// Failf panics with a formatted Violation. Guard calls with Enabled.
func Failf(format string, args ...any) {
	panic(Violation{Msg: fmt.Sprintf(format, args...)})
}
