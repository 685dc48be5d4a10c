package match

import (
	"math/rand/v2"
	"testing"
)

// maxFuzzInput bounds an input to about 2000 commands.
const maxFuzzInput = 4096

// FuzzMatch drives a table and the list-based MPI queue model with the same
// command stream (see harness.run) and checks every match, every order and
// the final state. The first byte picks the configuration, including the
// all-collide hash that puts every key on one overflow chain.
func FuzzMatch(f *testing.F) {
	rng := rand.New(rand.NewPCG(1, 2))
	for c := range harnessConfigs {
		for range 4 {
			data := make([]byte, 1+2*(8+rng.IntN(60)))
			for i := range data {
				data[i] = byte(rng.Uint32())
			}
			data[0] = byte(c)
			f.Add(data)
		}
	}
	// Hand-written cases: the exact-vs-wildcard decision in both orders,
	// and AnyTag across tags of one source.
	f.Add([]byte{0, 3, 0x0f, 5, 0x00, 0, 0x00, 0, 0x00}) // any-any then exact posted, two arrivals
	f.Add([]byte{0, 5, 0x00, 3, 0x0f, 0, 0x00, 0, 0x00}) // exact then any-any posted
	f.Add([]byte{0, 0, 0x04, 0, 0x00, 0, 0x08, 3, 0x0c}) // tags 1,0,2 from source 0, then AnyTag
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		// Bound the run time of one input: the model is quadratic, and a
		// wildcard Post scans the whole table.
		data = data[:min(len(data), maxFuzzInput)]
		hc := harnessConfigs[int(data[0])%len(harnessConfigs)]
		h, err := newHarness(hc.cfg, hc.collide)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.run(data[1:]); err != nil {
			t.Fatalf("%s: %v", hc.name, err)
		}
	})
}

// TestModel runs random command streams through every configuration, so
// the comparison with the model runs in every plain `go test`, not only
// under -fuzz.
func TestModel(t *testing.T) {
	runs, length := 100, 400
	if testing.Short() || raceEnabled {
		runs = 25
	}
	for c, hc := range harnessConfigs {
		t.Run(hc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(c), 7))
			for run := range runs {
				data := make([]byte, 2*length)
				for i := range data {
					data[i] = byte(rng.Uint32())
				}
				h, err := newHarness(hc.cfg, hc.collide)
				if err != nil {
					t.Fatal(err)
				}
				if err := h.run(data); err != nil {
					t.Fatalf("run %d: %v", run, err)
				}
			}
		})
	}
}

// TestCollideChains checks that the all-collide hash really builds long
// chains and that they still match correctly and are reused.
func TestCollideChains(t *testing.T) {
	tb := newCollide[tmsg, trecv](Config{})
	const n = 100
	msgs := make([]tmsg, n)
	for i := range msgs {
		k := MustKey(0, int32(i), int32(i))
		msgs[i] = tmsg{id: i, key: k}
		if _, ok, err := tb.Arrive(k, &msgs[i]); ok || err != nil {
			t.Fatalf("Arrive %d: ok %t err %v", i, ok, err)
		}
	}
	if got, want := tb.chainLen(), (n+slots-1)/slots; got != want {
		t.Fatalf("chain length %d, want %d", got, want)
	}
	for i := n - 1; i >= 0; i-- {
		m, mk, ok, err := tb.Post(msgs[i].key, &trecv{})
		if !ok || err != nil || m != &msgs[i] || mk != msgs[i].key {
			t.Fatalf("Post %v = %v %v %t %v", msgs[i].key, m, mk, ok, err)
		}
	}
	// The emptied chain is kept and refilled without growing.
	for i := range msgs {
		tb.Arrive(msgs[i].key, &msgs[i])
	}
	if got, want := tb.chainLen(), (n+slots-1)/slots; got != want {
		t.Fatalf("chain length after refill %d, want %d", got, want)
	}
}
