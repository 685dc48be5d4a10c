package match

import (
	"fmt"
	"slices"
	"testing"
)

// TestRange: Range lists every queued message and posted receive (exact and
// wildcard), each key's items in queue order, stops when told, and lets
// its function Cancel what it is given. With every key colliding, items
// sit in overflow buckets and FIFO nodes too.
func TestRange(t *testing.T) {
	for _, collide := range []bool{false, true} {
		t.Run(fmt.Sprintf("collide=%v", collide), func(t *testing.T) {
			tb := newTable(t, Config{})
			if collide {
				tb.c.mul = 0
			}
			var want []string
			for src := range int32(5) {
				for i := range 3 { // three messages per key: a FIFO
					m := &tmsg{id: int(src)*10 + i}
					if _, ok, err := tb.Arrive(MustKey(1, src, 7), m); ok || err != nil {
						t.Fatal(ok, err)
					}
					want = append(want, fmt.Sprintf("msg %v %d", MustKey(1, src, 7), m.id))
				}
			}
			for tag := range int32(4) {
				for i := range 2 {
					r := &trecv{id: int(tag)*10 + i}
					if _, _, ok, err := tb.Post(MustKey(2, 3, tag), r); ok || err != nil {
						t.Fatal(ok, err)
					}
					want = append(want, fmt.Sprintf("recv %v %d", MustKey(2, 3, tag), r.id))
				}
			}
			wild := &trecv{id: 99}
			if _, _, ok, err := tb.Post(MustKey(3, AnySource, AnyTag), wild); ok || err != nil {
				t.Fatal(ok, err)
			}
			want = append(want, fmt.Sprintf("recv %v 99", MustKey(3, AnySource, AnyTag)))
			var got []string
			last := make(map[Key]int) // each key's items in queue order
			tb.Range(func(k Key, m *tmsg, r *trecv) bool {
				id := 0
				if m != nil {
					id = m.id
					got = append(got, fmt.Sprintf("msg %v %d", k, id))
				} else {
					id = r.id
					got = append(got, fmt.Sprintf("recv %v %d", k, id))
				}
				if prev, ok := last[k]; ok && prev > id {
					t.Errorf("key %v: item %d after %d", k, id, prev)
				}
				last[k] = id
				return true
			})
			if !slices.Equal(sortedStable(got), sortedStable(want)) {
				t.Fatalf("Range gave\n%v\nwant\n%v", got, want)
			}
			n := 0
			tb.Range(func(Key, *tmsg, *trecv) bool { n++; return n < 4 })
			if n != 4 {
				t.Fatalf("Range went on after false: %d calls", n)
			}
			// Cancel every receive from inside Range.
			cancelled := 0
			tb.Range(func(k Key, m *tmsg, r *trecv) bool {
				if r != nil && tb.Cancel(k, r) {
					cancelled++
				}
				return true
			})
			if cancelled != 9 {
				t.Fatalf("cancelled %d receives from Range, want 9", cancelled)
			}
			left := 0
			tb.Range(func(k Key, m *tmsg, r *trecv) bool {
				if r != nil {
					t.Errorf("receive %d still there", r.id)
				}
				left++
				return true
			})
			if left != 15 {
				t.Fatalf("%d items left, want the 15 messages", left)
			}
		})
	}
}

func sortedStable(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
