package packet

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

func scale(n int) int {
	if testing.Short() {
		return n / 10
	}
	return n
}

// TestDequeOwnerAndThieves runs the raw deque with one owner pushing and
// popping and two thieves stealing; every value pushed must come out
// exactly once. Small capacities make the owner wrap onto slots thieves
// have just claimed.
func TestDequeOwnerAndThieves(t *testing.T) {
	for _, capacity := range []int{1, 2, 3, 8} {
		t.Run(fmt.Sprint(capacity), func(t *testing.T) {
			var d deque
			d.init(capacity)
			n := scale(60000)
			seen := make([]atomic.Int32, n)
			var stop atomic.Bool
			var wg sync.WaitGroup
			for range 2 {
				wg.Go(func() {
					for !stop.Load() {
						if x, ok, _ := d.popBottom(); ok {
							seen[x].Add(1)
						}
					}
				})
			}
			rng := rand.New(rand.NewPCG(1, uint64(capacity)))
			busy := 0
			for next := 0; next < n; {
				if rng.IntN(3) > 0 {
					switch d.pushTop(uint32(next)) {
					case pushed:
						next++
					case pushBusy:
						busy++
					}
				} else if x, ok := d.popTop(); ok {
					seen[x].Add(1)
				}
			}
			for {
				x, ok := d.popTop()
				if !ok {
					if d.len() == 0 {
						break
					}
					continue
				}
				seen[x].Add(1)
			}
			stop.Store(true)
			wg.Wait()
			t.Logf("%d pushes found their slot still being read", busy)
			for i := range seen {
				if c := seen[i].Load(); c != 1 {
					t.Fatalf("value %d came out %d times", i, c)
				}
			}
		})
	}
}

// TestDequeCapacity checks the full and empty edges sequentially.
func TestDequeCapacity(t *testing.T) {
	var d deque
	d.init(5) // ring of 8, capacity 5
	for round := range 3 {
		for i := range 5 {
			if r := d.pushTop(uint32(i)); r != pushed {
				t.Fatalf("round %d: push %d refused (%d)", round, i, r)
			}
		}
		if d.pushTop(99) != pushFull {
			t.Fatalf("round %d: push into a full deque accepted", round)
		}
		if x, ok, _ := d.popBottom(); !ok || x != 0 {
			t.Fatalf("popBottom = %d, %v", x, ok)
		}
		for want := 4; want >= 1; want-- {
			if x, ok := d.popTop(); !ok || x != uint32(want) {
				t.Fatalf("popTop = %d, %v, want %d", x, ok, want)
			}
		}
		if _, ok := d.popTop(); ok {
			t.Fatal("popTop on an empty deque succeeded")
		}
		if _, ok, empty := d.popBottom(); ok || !empty {
			t.Fatal("popBottom on an empty deque succeeded")
		}
	}
}

// TestStackConcurrent pushes and pops from several goroutines; every
// packet must be in the stack exactly once at the end.
func TestStackConcurrent(t *testing.T) {
	p := newTestPool(t, Config{Workers: 1, PerWorker: 1, Shared: 63, PayloadSize: 64})
	var wg sync.WaitGroup
	rounds := scale(50000)
	for g := range 4 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 9))
			var mine []uint32
			for range rounds {
				if len(mine) > 0 && rng.IntN(2) == 0 {
					k := rng.IntN(len(mine))
					p.shared.push(p.at(mine[k]))
					mine[k] = mine[len(mine)-1]
					mine = mine[:len(mine)-1]
				} else if i, ok := p.shared.pop(p); ok {
					mine = append(mine, i)
				}
			}
			for _, i := range mine {
				p.shared.push(p.at(i))
			}
		})
	}
	wg.Wait()
	if err := audit(p, nil); err != nil {
		t.Fatal(err)
	}
}

// holder tracks, for a concurrent test, which packets are out of the pool
// (held by some goroutine, or in flight between two): Get must never hand
// out a packet that is already out. Each holder also
// stamps the payload and checks the stamp before returning.
type holder struct {
	p    *Pool
	held []atomic.Int32 // 1 while some goroutine holds the packet
}

func newHolder(p *Pool) *holder {
	return &holder{p: p, held: make([]atomic.Int32, MaxPackets>>12)}
}

func (h *holder) got(t *testing.T, pk *Packet, stamp byte) {
	if !h.held[pk.index].CompareAndSwap(0, 1) {
		t.Errorf("packet %d handed out twice", pk.index)
		return
	}
	b := pk.Payload()
	b[0], b[len(b)-1] = stamp, stamp
	pk.Tag = int32(stamp)
}

func (h *holder) put(t *testing.T, w int, pk *Packet, stamp byte) {
	b := pk.Payload()
	if b[0] != stamp || b[len(b)-1] != stamp || pk.Tag != int32(stamp) {
		t.Errorf("packet %d written by someone else while held", pk.index)
	}
	if !h.held[pk.index].CompareAndSwap(1, 0) {
		t.Errorf("packet %d returned but not held", pk.index)
	}
	h.p.Put(w, pk)
}

// workload runs a random sequence of Gets and Puts as worker w (or
// NoWorker) and returns the packets it still holds at the end.
func workload(t *testing.T, h *holder, w int, seed uint64, ops, maxHeld int) []*Packet {
	rng := rand.New(rand.NewPCG(seed, uint64(w+7)))
	stamp := byte(seed)
	var mine []*Packet
	for range ops {
		if len(mine) > 0 && (len(mine) >= maxHeld || rng.IntN(2) == 0) {
			k := rng.IntN(len(mine))
			h.put(t, w, mine[k], stamp)
			mine[k] = mine[len(mine)-1]
			mine = mine[:len(mine)-1]
		} else if pk := h.p.Get(w); pk != nil {
			h.got(t, pk, stamp)
			mine = append(mine, pk)
		}
	}
	keep := rng.IntN(len(mine) + 1)
	for _, pk := range mine[keep:] {
		h.put(t, w, pk, stamp)
	}
	return mine[:keep]
}

// TestOwnerPlusThief: worker 0 works its deque while a NoWorker goroutine
// (the progress engine) keeps the shared pool empty and steals.
func TestOwnerPlusThief(t *testing.T) {
	p := newTestPool(t, Config{Workers: 1, PerWorker: 16, Shared: 1, PayloadSize: 64})
	h := newHolder(p)
	var wg sync.WaitGroup
	var held [2][]*Packet
	ops := scale(100000)
	wg.Go(func() { held[0] = workload(t, h, 0, 1, ops, 12) })
	wg.Go(func() { held[1] = workload(t, h, NoWorker, 2, ops, 6) })
	wg.Wait()
	if err := audit(p, append(held[0], held[1]...)); err != nil {
		t.Fatal(err)
	}
	// The thief's second Get finds the shared pool (one packet) empty, so
	// at least one steal must have happened.
	if p.Stats().Steals == 0 {
		t.Error("the NoWorker goroutine never stole")
	}
	if testing.Verbose() {
		t.Logf("%+v", p.Stats())
	}
}

// TestConservation runs every worker and two NoWorker goroutines at once
// with a tight pool (so deques spill, run dry and get stolen from), then
// checks every packet is in exactly one place.
func TestConservation(t *testing.T) {
	for _, cfg := range []Config{
		{Workers: 3, PerWorker: 4, Shared: 4, PayloadSize: 64},
		{Workers: 2, PerWorker: 8, Shared: 32, PayloadSize: 128},
		{Workers: 4, PerWorker: 2, Shared: 2, PayloadSize: 64, Overflow: OverflowGrow, GrowBy: 4, MaxPackets: 40},
	} {
		t.Run(cfg.String(), func(t *testing.T) {
			p := newTestPool(t, cfg)
			h := newHolder(p)
			var wg sync.WaitGroup
			var mu sync.Mutex
			var held []*Packet
			run := func(w int, seed uint64) {
				mine := workload(t, h, w, seed, scale(30000), 10)
				mu.Lock()
				held = append(held, mine...)
				mu.Unlock()
			}
			for w := range cfg.Workers {
				wg.Go(func() { run(w, uint64(w)) })
			}
			for g := range 2 {
				wg.Go(func() { run(NoWorker, uint64(100+g)) })
			}
			wg.Wait()
			if err := audit(p, held); err != nil {
				t.Fatal(err)
			}
			for _, pk := range held {
				p.Put(NoWorker, pk)
			}
			if err := audit(p, nil); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestExhaustionAndRecovery drains the pool from several goroutines at
// once, checks that Get then reports exhaustion (never blocks, never
// allocates), returns packets and checks that Gets succeed again.
func TestExhaustionAndRecovery(t *testing.T) {
	p := newTestPool(t, Config{Workers: 2, PerWorker: 8, Shared: 16, PayloadSize: 64})
	h := newHolder(p)
	total := p.Stats().Packets
	for round := range 3 {
		var wg sync.WaitGroup
		got := make([][]*Packet, 3)
		for g, w := range []int{0, 1, NoWorker} {
			wg.Go(func() {
				for {
					pk := p.Get(w)
					if pk == nil {
						return
					}
					h.got(t, pk, byte(g))
					got[g] = append(got[g], pk)
				}
			})
		}
		wg.Wait()
		n := len(got[0]) + len(got[1]) + len(got[2])
		if n != total {
			t.Fatalf("round %d: drained %d packets, pool has %d", round, n, total)
		}
		st := p.Stats()
		if st.InUse != total || st.Exhausted < uint64(3*(round+1)) {
			t.Fatalf("round %d: Stats %+v", round, st)
		}
		for _, w := range []int{0, 1, NoWorker} {
			if pk := p.Get(w); pk != nil {
				t.Fatalf("round %d: Get(%d) on an exhausted pool = %v", round, w, pk)
			}
		}
		// Recovery: one returned packet is immediately available to
		// anyone, even a worker whose deque is empty.
		g := 0
		for len(got[g]) == 0 {
			g++
		}
		h.put(t, NoWorker, got[g][0], byte(g))
		if pk := p.Get(1); pk != got[g][0] {
			t.Fatalf("round %d: Get after a Put = %v, want the returned %v", round, pk, got[g][0])
		}
		h.got(t, got[g][0], byte(g))
		for g, w := range []int{0, 1, NoWorker} {
			wg.Go(func() {
				for _, pk := range got[g] {
					h.put(t, w, pk, byte(g))
				}
			})
		}
		wg.Wait()
		if err := audit(p, nil); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDequeBusySlot: a thief that has claimed an entry but not yet read
// it keeps its slot from being reused, and Put then sends the packet to
// the shared pool instead of waiting.
func TestDequeBusySlot(t *testing.T) {
	var d deque
	d.init(2)
	d.pushTop(10) // position 0, slot 0
	d.pushTop(11) // position 1, slot 1
	// A thief claims position 0 and stalls before reading it.
	if !d.bottom.CompareAndSwap(0, 1) {
		t.Fatal("claim failed")
	}
	// The owner takes the other entry (winning the race for the last
	// one), so the deque is empty and the next push goes to position 2,
	// slot 0, which the thief is still reading.
	if x, ok := d.popTop(); !ok || x != 11 {
		t.Fatalf("popTop = %d, %v", x, ok)
	}
	if r := d.pushTop(13); r != pushBusy {
		t.Fatalf("push into a slot a thief is reading: %d, want busy", r)
	}
	// The thief finishes; the slot is free again.
	s := &d.ring[0]
	if s.idx != 10 {
		t.Fatalf("the stalled thief would read %d, want 10", s.idx)
	}
	s.done.Store(s.gen)
	if r := d.pushTop(13); r != pushed {
		t.Fatalf("push after the thief finished: %d", r)
	}

	p := newTestPool(t, Config{Workers: 1, PerWorker: 2, Shared: 1, PayloadSize: 64})
	a := p.Get(0) // position 1
	w := &p.workers[0]
	if !w.bottom.CompareAndSwap(0, 1) { // stalled thief on position 0
		t.Fatal("claim failed")
	}
	stolen := p.at(w.ring[0].idx)
	b := p.Get(0) // deque empty now: from shared
	p.Put(0, a)   // position 1: slot 1, popped by the owner
	p.Put(0, b)   // position 2: slot 0, still being read → shared
	if p.Free(NoWorker) != 1 || p.Free(0) != 1 || p.Stats().Spills != 1 {
		t.Fatalf("busy slot: %+v", p.Stats())
	}
	w.ring[0].done.Store(w.ring[0].gen)
	if err := audit(p, []*Packet{stolen}); err != nil {
		t.Fatal(err)
	}
}

// TestHandOff mirrors the runtime's flow: a progress engine (NoWorker)
// takes packets for arrivals and hands them to workers, which copy the
// data out and return the packets to their own deques; workers take
// packets for sends and hand them to the engine, which returns them to
// the shared pool. Packets thus cross between every pair of places.
func TestHandOff(t *testing.T) {
	const workers = 2
	p := newTestPool(t, Config{Workers: workers, PerWorker: 8, Shared: 8, PayloadSize: 64})
	h := newHolder(p)
	rounds := scale(20000)
	toWorker := make([]chan *Packet, workers)
	for w := range toWorker {
		toWorker[w] = make(chan *Packet, 2)
	}
	toEngine := make(chan *Packet, 2)
	var wg sync.WaitGroup
	var sent atomic.Int64
	for w := range workers {
		wg.Go(func() {
			for range rounds {
			drain:
				for {
					select {
					case pk := <-toWorker[w]: // an arrival: consume and return it
						h.put(t, w, pk, pk.Payload()[0])
					default:
						break drain
					}
				}
				if pk := p.Get(w); pk == nil {
					runtime.Gosched() // back-pressure: let the engine progress
				} else { // a send
					h.got(t, pk, byte(w))
					toEngine <- pk
					sent.Add(1)
				}
			}
		})
	}
	var engine sync.WaitGroup
	engine.Go(func() {
		w := 0
		for pk := range toEngine {
			h.put(t, NoWorker, pk, pk.Payload()[0])
			// An arrival for worker w, if a packet is to be had and the
			// worker has room to take it.
			if in := p.Get(NoWorker); in != nil {
				h.got(t, in, byte(10+w))
				select {
				case toWorker[w] <- in:
				default:
					h.put(t, NoWorker, in, byte(10+w))
				}
			}
			w = (w + 1) % workers
		}
	})
	wg.Wait()
	close(toEngine)
	engine.Wait()
	// Arrivals still queued go back through their workers' indices.
	for w := range workers {
		close(toWorker[w])
		for pk := range toWorker[w] {
			h.put(t, w, pk, pk.Payload()[0])
		}
	}
	if err := audit(p, nil); err != nil {
		t.Fatal(err)
	}
	st := p.Stats()
	t.Logf("%d sends, %+v", sent.Load(), st)
	if sent.Load() == 0 {
		t.Fatal("no packet was sent")
	}
}
