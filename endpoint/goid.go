package endpoint

import (
	"bytes"
	"runtime"
	"strconv"
)

// goid returns the calling goroutine's id, parsed from its stack header
// ("goroutine 42 [running]:"). It costs about a microsecond and is used only
// by invariants builds, to catch a handle used by a goroutine (or fiber)
// other than the one that registered it.
func goid() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	if i := bytes.IndexByte(b, ' '); i > 0 {
		b = b[:i]
	}
	id, _ := strconv.ParseUint(string(b), 10, 64)
	return id
}
