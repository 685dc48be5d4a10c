package match

import "math/bits"

// Test hooks.

// newCollide returns a table whose hash sends every key to bucket 0, so
// every operation walks one overflow chain (an adversarial hash, in the
// manner of the runtime's internal/sync tests).
func newCollide[M, R any](cfg Config) *Table[M, R] {
	t, err := New[M, R](cfg)
	if err != nil {
		panic(err)
	}
	t.c.mul = 0
	return t
}

// chainLen returns the number of buckets in the longest chain.
func (t *Table[M, R]) chainLen() int {
	longest := 0
	for j := range t.c.pairs {
		h := &t.c.pairs[j]
		h.b.lock()
		n := 0
		for q := h; q != nil; q = q.b.ovf {
			n++
		}
		h.b.unlock()
		longest = max(longest, n)
	}
	return longest
}

// pendingWild returns the count of posted wildcard receives.
func (t *Table[M, R]) pendingWild() int64 { return t.c.wild.Load() }

// listedChains returns how many chains are marked as possibly holding
// messages.
func (t *Table[M, R]) listedChains() int {
	n := 0
	for w := range t.c.listed {
		n += bits.OnesCount64(t.c.listed[w].Load())
	}
	return n
}
