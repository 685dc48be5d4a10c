package packet

import (
	"fmt"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// audit checks, while no Get or Put runs, that every packet of p is in
// exactly one place: a private deque, the shared stack, or held (the
// indices the test's goroutines still own). It also checks each place's
// count against Stats.
func audit(p *Pool, held []*Packet) error {
	total := int(p.total.Load())
	where := make([]string, total)
	mark := func(i uint32, place string) error {
		if int(i) >= total {
			return fmt.Errorf("%s holds index %d, pool has %d packets", place, i, total)
		}
		if where[i] != "" {
			return fmt.Errorf("packet %d is in %s and in %s", i, where[i], place)
		}
		where[i] = place
		return nil
	}
	st := p.Stats()
	for w := range p.workers {
		d := &p.workers[w]
		n := 0
		for k := d.bottom.Load(); k < d.top.Load(); k++ {
			if err := mark(d.ring[k&d.mask].idx, fmt.Sprintf("deque %d", w)); err != nil {
				return err
			}
			n++
		}
		if n > int(d.cap) {
			return fmt.Errorf("deque %d holds %d > cap %d", w, n, d.cap)
		}
		if st.PerWorker[w] != n {
			return fmt.Errorf("Stats says deque %d holds %d, it holds %d", w, st.PerWorker[w], n)
		}
	}
	n := 0
	for i := uint32(p.shared.head.Load()); i != linkNil; i = p.at(i).link.Load() {
		if err := mark(i, "shared"); err != nil {
			return err
		}
		n++
		if n > total {
			return fmt.Errorf("shared stack has a cycle")
		}
	}
	if st.Shared != n {
		return fmt.Errorf("Stats says shared holds %d, it holds %d", st.Shared, n)
	}
	for _, pk := range held {
		if !p.Owns(pk) {
			return fmt.Errorf("held packet %p is not the pool's", pk)
		}
		if err := mark(pk.index, "held"); err != nil {
			return err
		}
	}
	if st.InUse != len(held) {
		return fmt.Errorf("Stats says %d in use, %d held", st.InUse, len(held))
	}
	for i, w := range where {
		if w == "" {
			return fmt.Errorf("packet %d is nowhere (lost)", i)
		}
	}
	return nil
}
