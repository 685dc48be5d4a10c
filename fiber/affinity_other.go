//go:build !linux

package fiber

import "errors"

// errPinUnsupported is returned by New when Config.Pin is set on a platform
// without thread affinity support.
var errPinUnsupported = errors.New("fiber: pinning workers is supported on Linux only")

func allowedCPUs() ([]int, error) { return nil, errPinUnsupported }

func pin(int) error { return errPinUnsupported }
