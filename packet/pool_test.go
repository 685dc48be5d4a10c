package packet

import (
	"errors"
	"runtime"
	"strings"
	"testing"
)

func TestConfigValidate(t *testing.T) {
	if err := (Config{}).Validate(); err != nil {
		t.Fatalf("zero Config: %v", err)
	}
	d := Config{}.withDefaults()
	if d.Workers != runtime.GOMAXPROCS(0) || d.PerWorker != DefaultPerWorker ||
		d.Shared != DefaultShared || d.PayloadSize != DefaultPayloadSize {
		t.Fatalf("defaults: %v", d)
	}
	if err := (Config{Overflow: OverflowGrow}).Validate(); err != nil {
		t.Fatalf("grow with defaults: %v", err)
	}
	g := Config{Workers: 1, PerWorker: 10, Shared: 10, Overflow: OverflowGrow, GrowBy: 100}.withDefaults()
	if g.GrowBy != 128 || g.MaxPackets != 80 {
		t.Fatalf("grow defaults: %v", g)
	}
	bad := []struct {
		cfg   Config
		field string
	}{
		{Config{Workers: -1}, "Workers"},
		{Config{Workers: 1 << 17}, "Workers"},
		{Config{PerWorker: -2}, "PerWorker"},
		{Config{Shared: -1}, "Shared"},
		{Config{PayloadSize: -64}, "PayloadSize"},
		{Config{PayloadSize: 100}, "PayloadSize"},
		{Config{PayloadSize: MaxPayloadSize + CacheLine}, "PayloadSize"},
		{Config{Workers: 2, PerWorker: MaxPackets}, "Workers*PerWorker+Shared"},
		{Config{GrowBy: 4}, "GrowBy"},
		{Config{MaxPackets: 4}, "MaxPackets"},
		{Config{Overflow: 7}, "Overflow"},
		{Config{Overflow: OverflowGrow, GrowBy: -1}, "GrowBy"},
		{Config{Workers: 1, PerWorker: 1, Shared: 1, Overflow: OverflowGrow, MaxPackets: 2}, "MaxPackets"},
		{Config{Overflow: OverflowGrow, MaxPackets: MaxPackets + 1}, "MaxPackets"},
	}
	for _, tc := range bad {
		err := tc.cfg.Validate()
		var ce *ConfigError
		if !errors.Is(err, ErrInvalidConfig) || !errors.As(err, &ce) || ce.Field != tc.field {
			t.Errorf("%+v: Validate = %v, want a ConfigError on %s", tc.cfg, err, tc.field)
			continue
		}
		if p, err2 := New(tc.cfg); p != nil || !errors.Is(err2, ErrInvalidConfig) {
			t.Errorf("%+v: New = %v, %v", tc.cfg, p, err2)
		}
	}
	s := Config{Workers: 3, Overflow: OverflowGrow, GrowBy: 3, MaxPackets: 10000}.String()
	if !strings.Contains(s, "Workers: 3") || !strings.Contains(s, "GrowBy: 4") || !strings.Contains(s, "Overflow: grow") {
		t.Fatalf("String = %s", s)
	}
}

func TestNewLayout(t *testing.T) {
	p := newTestPool(t, Config{Workers: 3, PerWorker: 5, Shared: 7, PayloadSize: 64})
	st := p.Stats()
	if st.Packets != 22 || st.Shared != 7 || st.Private != 15 || st.InUse != 0 {
		t.Fatalf("Stats after New: %+v", st)
	}
	for w := range 3 {
		if p.Free(w) != 5 {
			t.Fatalf("Free(%d) = %d", w, p.Free(w))
		}
	}
	if p.Free(NoWorker) != 7 || p.Workers() != 3 || p.PayloadSize() != 64 || p.Config().Shared != 7 {
		t.Fatalf("pool accessors: %v", p)
	}
	if err := audit(p, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p.String(), "in use: 0") {
		t.Fatalf("String = %s", p)
	}
}

// TestSingleOwner walks one worker through every source of packets in
// order: its own deque (LIFO), the shared pool, the other deques' bottoms,
// then exhaustion.
func TestSingleOwner(t *testing.T) {
	p := newTestPool(t, Config{Workers: 2, PerWorker: 4, Shared: 3, PayloadSize: 64})
	var held []*Packet
	get := func(w int) *Packet {
		t.Helper()
		pk := p.Get(w)
		if pk == nil {
			t.Fatalf("Get(%d) = nil with %d held", w, len(held))
		}
		held = append(held, pk)
		return pk
	}
	// Own deque, top first: packets 3, 2, 1, 0.
	for want := 3; want >= 0; want-- {
		if pk := get(0); pk.index != uint32(want) {
			t.Fatalf("own deque: got packet %d, want %d", pk.index, want)
		}
	}
	// Shared, in index order: 8, 9, 10.
	for want := 8; want <= 10; want++ {
		if pk := get(0); pk.index != uint32(want) {
			t.Fatalf("shared: got packet %d, want %d", pk.index, want)
		}
	}
	// Steals from deque 1, bottom first: 4, 5, 6, 7.
	for want := 4; want <= 7; want++ {
		if pk := get(0); pk.index != uint32(want) {
			t.Fatalf("steal: got packet %d, want %d", pk.index, want)
		}
	}
	if pk := p.Get(0); pk != nil {
		t.Fatalf("Get on an empty pool = %v", pk)
	}
	st := p.Stats()
	if st.Steals != 4 || st.Exhausted != 1 || st.InUse != 11 {
		t.Fatalf("Stats: %+v", st)
	}
	if err := audit(p, held); err != nil {
		t.Fatal(err)
	}
	// Returning fills deque 0 (4 slots), then spills its bottom to the
	// shared pool for each further Put.
	for i, pk := range held {
		p.Put(0, pk)
		if want := min(i+1, 4); p.Free(0) != want {
			t.Fatalf("after %d Puts Free(0) = %d, want %d", i+1, p.Free(0), want)
		}
	}
	if p.Free(NoWorker) != 7 || p.Stats().Spills != 7 {
		t.Fatalf("after returning all: %+v", p.Stats())
	}
	// The deque keeps the four most recent; the shared pool got the older
	// ones, most recently evicted on top.
	if err := audit(p, nil); err != nil {
		t.Fatal(err)
	}
	for i := len(held) - 1; i >= len(held)-4; i-- {
		if pk := p.Get(0); pk != held[i] {
			t.Fatalf("deque after spill: got %v, want %v", pk, held[i])
		}
	}
	if pk := p.Get(0); pk != held[len(held)-5] {
		t.Fatalf("shared after spill: got %v, want %v", pk, held[len(held)-5])
	}
}

func TestNoWorker(t *testing.T) {
	p := newTestPool(t, Config{Workers: 2, PerWorker: 2, Shared: 2, PayloadSize: 64})
	var held []*Packet
	for range 6 {
		pk := p.Get(NoWorker)
		if pk == nil {
			t.Fatalf("Get(NoWorker) = nil after %d", len(held))
		}
		held = append(held, pk)
		if len(held) == 2 && p.Free(NoWorker) != 0 {
			t.Fatal("NoWorker did not take from the shared pool first")
		}
		if len(held) <= 2 && p.Stats().Private != 4 {
			t.Fatal("NoWorker stole while the shared pool had packets")
		}
	}
	if p.Get(NoWorker) != nil {
		t.Fatal("Get(NoWorker) on an empty pool returned a packet")
	}
	for _, pk := range held {
		p.Put(NoWorker, pk)
	}
	if p.Free(NoWorker) != 6 || p.Stats().Private != 0 {
		t.Fatalf("Put(NoWorker) did not return to shared: %+v", p.Stats())
	}
	// A worker with an empty deque gets from the shared pool.
	if pk := p.Get(1); pk != held[len(held)-1] {
		t.Fatalf("Get(1) = %v, want the last returned %v", pk, held[len(held)-1])
	}
	if err := audit(p, held[len(held)-1:]); err != nil {
		t.Fatal(err)
	}
}

func TestBadArguments(t *testing.T) {
	p := newTestPool(t, Config{Workers: 2, PerWorker: 1, Shared: 1, PayloadSize: 64})
	other := newTestPool(t, Config{Workers: 2, PerWorker: 1, Shared: 1, PayloadSize: 64})
	foreign := other.Get(0)
	mine := p.Get(0)
	for name, f := range map[string]func(){
		"Get(2)":          func() { p.Get(2) },
		"Get(-2)":         func() { p.Get(-2) },
		"Put(5)":          func() { p.Put(5, mine) },
		"Put(nil)":        func() { p.Put(0, nil) },
		"Put(foreign)":    func() { p.Put(0, foreign) },
		"Free(3)":         func() { p.Free(3) },
		"Put(-7,foreign)": func() { p.Put(-7, foreign) },
	} {
		func() {
			defer func() {
				r := recover()
				if s, ok := r.(string); !ok || !strings.HasPrefix(s, "packet: ") {
					t.Errorf("%s: recovered %v, want a \"packet: \" panic", name, r)
				}
			}()
			f()
		}()
	}
	if p.Owns(foreign) || !p.Owns(mine) || p.Owns(nil) {
		t.Fatal("Owns is wrong")
	}
	// The panics left both pools intact.
	if err := audit(p, []*Packet{mine}); err != nil {
		t.Fatal(err)
	}
	p.Put(0, mine)
	other.Put(0, foreign)
	if err := audit(other, nil); err != nil {
		t.Fatal(err)
	}
}

func TestGrow(t *testing.T) {
	p := newTestPool(t, Config{Workers: 1, PerWorker: 2, Shared: 2, PayloadSize: 128,
		Overflow: OverflowGrow, GrowBy: 3, MaxPackets: 13})
	var held []*Packet
	for {
		pk := p.Get(0)
		if pk == nil {
			break
		}
		if pk.Cap() != 128 || !p.Owns(pk) {
			t.Fatalf("grown packet %v: cap %d, owned %v", pk, pk.Cap(), p.Owns(pk))
		}
		for i := range pk.Payload() {
			pk.Payload()[i] = byte(pk.index)
		}
		held = append(held, pk)
	}
	st := p.Stats()
	// 4 initial, then chunks of 4, 4 and a last partial one of 1.
	if len(held) != 13 || st.Packets != 13 || st.Grows != 3 || st.Exhausted != 1 {
		t.Fatalf("held %d, Stats %+v", len(held), st)
	}
	for _, pk := range held {
		for _, c := range pk.Payload() {
			if c != byte(pk.index) {
				t.Fatalf("packet %d's payload overlaps another", pk.index)
			}
		}
	}
	if err := audit(p, held); err != nil {
		t.Fatal(err)
	}
	for _, pk := range held {
		p.Put(NoWorker, pk)
	}
	if err := audit(p, nil); err != nil {
		t.Fatal(err)
	}
	// The pool keeps its high-water mark: no more growth needed.
	for range 13 {
		held = append(held[:0], p.Get(0))
		p.Put(0, held[0])
	}
	if p.Stats().Packets != 13 {
		t.Fatal("pool grew although packets were free")
	}
}

func TestZeroAllocs(t *testing.T) {
	p := newTestPool(t, Config{Workers: 2, PerWorker: 8, Shared: 8, PayloadSize: 64})
	var batch [12]*Packet
	for _, w := range []int{0, 1, NoWorker} {
		allocs := testing.AllocsPerRun(100, func() {
			for i := range batch {
				batch[i] = p.Get(w)
			}
			for i := range batch {
				p.Put(w, batch[i])
			}
		})
		if allocs != 0 {
			t.Errorf("Get/Put with worker %d: %v allocations per run", w, allocs)
		}
	}
	pk := p.Get(0)
	if allocs := testing.AllocsPerRun(100, func() {
		_ = pk.SetData([]byte("x"))
		_ = pk.Data()
		var b [HeaderWireSize]byte
		pk.EncodeHeader(b[:])
		_ = pk.DecodeHeader(b[:])
	}); allocs != 0 {
		t.Errorf("packet accessors: %v allocations per run", allocs)
	}
	p.Put(0, pk)
}
