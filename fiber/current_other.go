//go:build !linux

package fiber

// threadID cannot tell threads apart here.
func threadID() (int, bool) { return 0, false }
