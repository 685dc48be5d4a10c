package packet

import (
	"slices"
	"testing"
)

// model is the reference for FuzzPool: the pool's places as plain slices
// (bottom first for deques, top last for the shared stack).
type model struct {
	deques [][]uint32
	shared []uint32
	cap    int
	total  int
	max    int // MaxPackets under OverflowGrow, else total
	growBy int
}

func (m *model) get(w int) (uint32, []uint32, bool) {
	if w >= 0 {
		if d := m.deques[w]; len(d) > 0 {
			m.deques[w] = d[:len(d)-1]
			return d[len(d)-1], nil, true
		}
	}
	if n := len(m.shared); n > 0 {
		i := m.shared[n-1]
		m.shared = m.shared[:n-1]
		return i, nil, true
	}
	// A steal: any other non-empty deque's bottom is allowed.
	var candidates []uint32
	for v, d := range m.deques {
		if v != w && len(d) > 0 {
			candidates = append(candidates, d[0])
		}
	}
	if len(candidates) > 0 {
		return 0, candidates, true
	}
	if m.total < m.max {
		n := min(m.growBy, m.max-m.total)
		first := uint32(m.total)
		for i := n - 1; i >= 1; i-- {
			m.shared = append(m.shared, first+uint32(i))
		}
		m.total += n
		return first, nil, true
	}
	return 0, nil, false
}

func (m *model) stolen(i uint32) bool {
	for v, d := range m.deques {
		if len(d) > 0 && d[0] == i {
			m.deques[v] = d[1:]
			return true
		}
	}
	return false
}

func (m *model) put(w int, i uint32) {
	if w == NoWorker {
		m.shared = append(m.shared, i)
		return
	}
	if len(m.deques[w]) == m.cap {
		m.shared = append(m.shared, m.deques[w][0])
		m.deques[w] = m.deques[w][1:]
	}
	m.deques[w] = append(m.deques[w], i)
}

// FuzzPool runs a command stream of Gets and Puts on one goroutine
// against the model, and compares every place after every command.
func FuzzPool(f *testing.F) {
	f.Add([]byte{0x21, 0, 0, 0, 0, 2, 0, 2, 0})
	f.Add([]byte{0x73, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2})
	f.Add([]byte{0xFF, 0, 4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48, 2, 6, 10, 14, 18, 22})
	f.Fuzz(func(t *testing.T, cmds []byte) {
		if len(cmds) == 0 {
			return
		}
		c := cmds[0]
		cfg := Config{
			Workers:     int(c&3) + 1,
			PerWorker:   int(c>>2&3) + 1,
			Shared:      int(c>>4&3) + 1,
			PayloadSize: CacheLine,
		}
		grow := c&0x40 != 0
		if grow {
			cfg.Overflow, cfg.GrowBy, cfg.MaxPackets = OverflowGrow, int(c>>7)+2, cfg.initial()+5
		}
		p := newTestPool(t, cfg)
		cfg = p.Config()
		m := &model{deques: make([][]uint32, cfg.Workers), cap: cfg.PerWorker,
			total: cfg.initial(), max: cfg.initial(), growBy: cfg.GrowBy}
		if grow {
			m.max = cfg.MaxPackets
		}
		next := uint32(0)
		for w := range m.deques {
			for range cfg.PerWorker {
				m.deques[w] = append(m.deques[w], next)
				next++
			}
		}
		for i := m.total - 1; i >= int(next); i-- {
			m.shared = append(m.shared, uint32(i))
		}
		var held []*Packet
		for _, b := range cmds[1:] {
			w := int(b>>2)%(cfg.Workers+1) - 1
			switch b & 3 {
			case 0, 1: // Get
				pk := p.Get(w)
				want, candidates, ok := m.get(w)
				switch {
				case !ok && pk != nil:
					t.Fatalf("Get(%d) = packet %d, model says exhausted", w, pk.index)
				case ok && pk == nil:
					t.Fatalf("Get(%d) = nil, model has packets", w)
				case ok && candidates != nil:
					if !slices.Contains(candidates, pk.index) || !m.stolen(pk.index) {
						t.Fatalf("Get(%d) stole packet %d, model allows %v", w, pk.index, candidates)
					}
				case ok && pk.index != want:
					t.Fatalf("Get(%d) = packet %d, model says %d", w, pk.index, want)
				}
				if pk != nil {
					if pk.Len() != 0 || pk.Kind != KindNone || pk.Tag != 0 {
						t.Fatalf("Get returned a dirty header: %v", pk)
					}
					pk.Tag, pk.Kind = int32(b), KindEager
					pk.SetLen(int(b) % (pk.Cap() + 1))
					held = append(held, pk)
				}
			case 2: // Put
				if len(held) == 0 {
					continue
				}
				k := int(b>>4) % len(held)
				pk := held[k]
				held = slices.Delete(held, k, k+1)
				p.Put(w, pk)
				m.put(w, pk.index)
			case 3: // check Stats
				st := p.Stats()
				if st.InUse != len(held) || st.Packets != m.total {
					t.Fatalf("Stats %+v with %d held, model total %d", st, len(held), m.total)
				}
			}
			compare(t, p, m)
		}
		if err := audit(p, held); err != nil {
			t.Fatal(err)
		}
	})
}

// compare checks that every place of p holds exactly what m says.
func compare(t *testing.T, p *Pool, m *model) {
	t.Helper()
	for w := range p.workers {
		d := &p.workers[w]
		var got []uint32
		for k := d.bottom.Load(); k < d.top.Load(); k++ {
			got = append(got, d.ring[k&d.mask].idx)
		}
		if !slices.Equal(got, m.deques[w]) && (len(got) > 0 || len(m.deques[w]) > 0) {
			t.Fatalf("deque %d = %v, model %v", w, got, m.deques[w])
		}
	}
	var got []uint32
	for i := uint32(p.shared.head.Load()); i != linkNil; i = p.at(i).link.Load() {
		got = append(got, i)
		if len(got) > m.total {
			t.Fatalf("shared stack has a cycle: %v", got)
		}
	}
	slices.Reverse(got)
	if !slices.Equal(got, m.shared) && (len(got) > 0 || len(m.shared) > 0) {
		t.Fatalf("shared = %v, model %v", got, m.shared)
	}
}
