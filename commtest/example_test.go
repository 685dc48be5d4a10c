package commtest_test

import (
	"testing"

	"github.com/fibermpi/fibermpi/comm"
	"github.com/fibermpi/fibermpi/commtest"
)

// A test of SPMD code: four fiber ranks pass their rank around a ring, and
// each checks what it got with its own *commtest.T. (Compiled, not run: it
// needs go test's *testing.T; this package's tests run such bodies.)
func ExampleRun() {
	testRing := func(t *testing.T) {
		commtest.Run(t, 4, func(t *commtest.T, c *comm.Comm[int]) {
			next, prev := (c.Rank()+1)%c.Size(), (c.Rank()+c.Size()-1)%c.Size()
			got := make([]int, 1)
			if _, err := c.Sendrecv([]int{c.Rank()}, next, 0, got, prev, 0); err != nil {
				t.Fatal(err) // ends this rank only; the others see the abort
			}
			if got[0] != prev {
				t.Errorf("got %d, want %d", got[0], prev)
			}
		})
	}
	_ = testRing
}
