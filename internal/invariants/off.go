//go:build !invariants

package invariants

// Enabled reports whether invariant checks are compiled in. It is false
// unless the build has the tag "invariants".
const Enabled = false
