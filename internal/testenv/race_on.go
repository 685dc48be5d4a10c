//go:build race

package testenv

// RaceEnabled reports whether the race detector is compiled in.
const RaceEnabled = true
