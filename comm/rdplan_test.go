package comm

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// TestRDPlanModel runs every rank's recursive-doubling plan (rdPlan) for
// p = 1..70 against a model of the messages (a channel per ordered pair of
// ranks) with a non-commutative op, string concatenation, and checks that
// every rank ends with the ranks' strings in rank order: each rank's plan
// sends and receives what its peers' plans expect, and every fold keeps
// its operands in rank order.
func TestRDPlanModel(t *testing.T) {
	concat := func(in, inout []string) {
		for i := range inout {
			inout[i] = in[i] + inout[i]
		}
	}
	op := Op[string]{name: "concat", fn: concat}
	for p := 1; p <= 70; p++ {
		var want strings.Builder
		for r := range p {
			fmt.Fprintf(&want, "<%d>", r)
		}
		ch := make([][]chan string, p)
		for i := range ch {
			ch[i] = make([]chan string, p)
			for j := range ch[i] {
				ch[i][j] = make(chan string, 4)
			}
		}
		got := make([]string, p)
		var wg sync.WaitGroup
		for r := range p {
			wg.Go(func() {
				acc, tmp := []string{fmt.Sprintf("<%d>", r)}, []string{""}
				for pl := newRDPlan(p, r); ; {
					st, ok := pl.next()
					if !ok {
						break
					}
					if st.send >= 0 {
						ch[r][st.send] <- acc[0]
					}
					if st.recv >= 0 {
						rdInto(st, tmp, acc)[0] = <-ch[st.recv][r]
					}
					fold(st.fold, op, tmp, acc)
				}
				got[r] = acc[0]
			})
		}
		wg.Wait()
		for r := range p {
			if got[r] != want.String() {
				t.Fatalf("p=%d: rank %d ends with %q, want %q", p, r, got[r], want.String())
			}
		}
		for i := range ch {
			for j := range ch[i] {
				if n := len(ch[i][j]); n != 0 {
					t.Fatalf("p=%d: %d messages from rank %d to %d left unreceived", p, n, i, j)
				}
			}
		}
	}
}
