package datatype

import (
	"bytes"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// TestConcurrentUse shares Types between goroutines that build, pack and
// unpack at once; the race detector checks that Types are immutable and
// that Of's cache is safe.
func TestConcurrentUse(t *testing.T) {
	red, _ := Vector(500, 1, 2, Float32)
	src := make([]byte, memLenFor(1, red))
	for i := range src {
		src[i] = byte(i)
	}
	want := make([]byte, red.Size())
	if _, err := Pack(want, src, 1, red); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 50 {
				_ = MustOf[particle]()
				col, err := Vector(10+g, 1, 3+i%4, red)
				if err != nil {
					t.Error(err)
					return
				}
				_ = col.String()
				got := make([]byte, red.Size())
				if _, err := Pack(got, src, 1, red); err != nil || !bytes.Equal(got, want) {
					t.Errorf("concurrent Pack: %v", err)
					return
				}
				mem := make([]byte, len(src))
				if _, err := Unpack(mem, got, 1, red); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}
