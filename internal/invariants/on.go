//go:build invariants

package invariants

// Enabled reports whether invariant checks are compiled in. It is true when
// the build has the tag "invariants".
const Enabled = true
