package datatype

import "math"

// limit bounds the magnitude of every size, extent, bound and offset the
// package computes. With both operands within ±limit, a sum or difference
// cannot overflow int, so checking the result against limit is enough.
const limit = math.MaxInt >> 2

// inRange reports whether |x| ≤ limit.
func inRange(x int) bool { return x >= -limit && x <= limit }

// add returns a+b and whether it is within ±limit. Operands must be within
// ±limit themselves.
func add(a, b int) (int, bool) {
	s := a + b
	return s, inRange(s)
}

// mul returns a*b and whether it is within ±limit. Operands must be within
// ±limit themselves.
func mul(a, b int) (int, bool) {
	if a == 0 || b == 0 {
		return 0, true
	}
	ua, ub := a, b
	if ua < 0 {
		ua = -ua
	}
	if ub < 0 {
		ub = -ub
	}
	if ua > limit/ub {
		return 0, false
	}
	return a * b, true
}

// checked accumulates the overflow status of a chain of operations so that
// constructor code reads as arithmetic with one test at the end.
type checked struct{ ok bool }

func (c *checked) add(a, b int) int {
	s, ok := add(a, b)
	if !ok {
		c.ok = false
		return 0
	}
	return s
}

func (c *checked) mul(a, b int) int {
	p, ok := mul(a, b)
	if !ok {
		c.ok = false
		return 0
	}
	return p
}
