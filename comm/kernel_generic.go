//go:build !amd64 || purego

package comm

// useAVX2 is false: there are no vector kernels on this platform (see
// kernel_amd64.go for them).
var useAVX2 = false

// addFloat32 sets inout[i] = in[i] + inout[i], len(in) == len(inout).

func addFloat32(in, inout []float32) {
	in = in[:len(inout)]
	for i := range inout {
		inout[i] = in[i] + inout[i]
	}
}

// addFloat64 is addFloat32 for float64.
func addFloat64(in, inout []float64) {
	in = in[:len(inout)]
	for i := range inout {
		inout[i] = in[i] + inout[i]
	}
}
