package datatype

import (
	"hash/fnv"
	"math/rand/v2"
	"testing"
)

// FuzzPack builds a random nested layout from the input, a random count
// and random chunk sizes, and checks everything against the reference:
// bounds and size, the runs, Pack and Unpack (with guard bytes around the
// destinations), and the Packer and Unpacker fed chunk by chunk. It also
// flips between the vector kernels and the portable loops.
func FuzzPack(f *testing.F) {
	f.Add([]byte{0, 0, 8, 0})
	f.Add([]byte{1, 4, 3, 1, 8, 0, 19, 0, 0, 0})
	f.Add([]byte{2, 9, 200, 2, 5, 0, 0, 0, 1, 0, 3, 0, 2, 0, 7, 0})
	f.Add([]byte{3, 1, 17, 3, 6, 0, 2, 0, 4, 0, 6, 0, 5, 0, 3, 0, 1, 0, 9, 0})
	f.Add([]byte{1, 2, 64, 4, 8, 0, 8, 0, 6, 0, 2, 0, 4, 0, 1, 0, 7, 0, 2, 0, 5, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 4 {
			return
		}
		saved := useAVX2
		defer func() { useAVX2 = saved }()
		useAVX2 = saved && data[0]&1 == 0
		count := int(data[1] % 6)
		maxChunk := 1 + int(data[2])
		depth := 1 + int(data[3]%4)
		ty := anchor(genType(&bytesSource{b: data[4:]}, depth))
		if ty.Size()*max(count, 1) > 1<<16 {
			return // keep the reference cheap
		}
		h := fnv.New64a()
		h.Write(data)
		r := rand.New(rand.NewPCG(h.Sum64(), 1))
		checkLayout(t, r, ty, count, randomChunks(r, maxChunk))
	})
}
