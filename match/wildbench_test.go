package match

import (
	"fmt"
	"testing"
)

// BenchmarkWildcard measures a wildcard receive meeting its message
// (alternately the receive first and the message first) while other keys
// are pending: half of them posted exact receives, which a wildcard Post's
// scan skips through the chain index, half unexpected messages in another
// context, which it must look at.
func BenchmarkWildcard(b *testing.B) {
	for _, pending := range []int{0, 100, 10_000} {
		b.Run(fmt.Sprintf("pending=%d", pending), func(b *testing.B) {
			tb, err := New[bmsg, brecv](Config{Expected: pending + 1024})
			if err != nil {
				b.Fatal(err)
			}
			m := tableMatcher{tb}
			fillPending(b, m, pending)
			wk, k := MustKey(0, AnySource, 5), MustKey(0, 3, 5)
			msg, rcv := new(bmsg), new(brecv)
			b.ReportAllocs()
			b.ResetTimer()
			i := 0
			for b.Loop() {
				if i&1 == 0 {
					tb.Post(wk, rcv)
					if r, ok, _ := tb.Arrive(k, msg); !ok || r != rcv {
						b.Fatal("arrive did not meet the wildcard receive")
					}
				} else {
					tb.Arrive(k, msg)
					if got, _, ok, _ := tb.Post(wk, rcv); !ok || got != msg {
						b.Fatal("wildcard post did not meet the message")
					}
				}
				i++
			}
		})
	}
}
