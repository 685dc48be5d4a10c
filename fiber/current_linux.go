//go:build linux

package fiber

import "golang.org/x/sys/unix"

// threadID returns the calling OS thread's id.
func threadID() (int, bool) { return unix.Gettid(), true }
