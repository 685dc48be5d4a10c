package match

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// Dang et al.'s specification of Insert and Empty (Dang et al. 2016b §2.2, equations
// 1–3), one value per key, with Empty as a claim: it succeeds only if the
// value is still the one stored.

type linIn struct {
	insert bool
	key    int
	val    int // Insert: the value offered; Empty: the value claimed
}

type linOut struct {
	cur    int // Insert: the value now stored under key
	stored bool
	ok     bool // Empty
}

var insertEmptyModel = porcupine.Model{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[int][]porcupine.Operation{}
		for _, op := range h {
			k := op.Input.(linIn).key
			byKey[k] = append(byKey[k], op)
		}
		var out [][]porcupine.Operation
		for _, ops := range byKey {
			out = append(out, ops)
		}
		return out
	},
	Init: func() any { return 0 }, // 0 is ⊥
	Step: func(state, input, output any) (bool, any) {
		st, in, out := state.(int), input.(linIn), output.(linOut)
		if in.insert {
			if st == 0 {
				return out.stored && out.cur == in.val, in.val
			}
			return !out.stored && out.cur == st, st
		}
		if st == in.val {
			return out.ok, 0
		}
		return !out.ok, st
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(linIn), output.(linOut)
		if in.insert {
			return fmt.Sprintf("insert(k%d, %d) -> %d stored=%t", in.key, in.val, out.cur, out.stored)
		}
		return fmt.Sprintf("empty(k%d, %d) -> %t", in.key, in.val, out.ok)
	},
}

// TestLinearizableInsertEmpty records Insert/Empty histories from
// concurrent goroutines on a few keys (on one chain, through the collide
// hash, and spread) and checks them with porcupine.
func TestLinearizableInsertEmpty(t *testing.T) {
	rounds, opsPer := 20, 300
	if testing.Short() {
		rounds = 5
	}
	for _, collide := range []bool{false, true} {
		t.Run(fmt.Sprintf("collide=%t", collide), func(t *testing.T) {
			for round := range rounds {
				h := linHistory(collide, 4, opsPer, uint64(round))
				res := porcupine.CheckOperationsTimeout(insertEmptyModel, h, 30*time.Second)
				if res != porcupine.Ok {
					t.Fatalf("round %d: history of %d operations is %s", round, len(h), res)
				}
			}
		})
	}
}

func linHistory(collide bool, workers, opsPer int, seed uint64) []porcupine.Operation {
	cfg := Config{NoAnySource: true, NoAnyTag: true}
	var tb *Table[int, int]
	if collide {
		tb = newCollide[int, int](cfg)
	} else {
		tb, _ = New[int, int](cfg)
	}
	keys := []Key{MustKey(0, 0, 0), MustKey(0, 0, 1), MustKey(1, 2, 3)}
	// vals[v] is the object for value v; pointers map back to values.
	vals := make([]int, workers*opsPer+1)
	for i := range vals {
		vals[i] = i
	}
	var clock atomic.Int64
	hist := make([][]porcupine.Operation, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			var held []struct {
				s   Slot
				key int
				val int
			}
			for i := range opsPer {
				if len(held) > 0 && rng.IntN(2) == 0 {
					j := rng.IntN(len(held))
					c := held[j]
					held = append(held[:j], held[j+1:]...)
					call := clock.Add(1)
					ok := tb.Empty(c.s)
					ret := clock.Add(1)
					hist[w] = append(hist[w], porcupine.Operation{ClientId: w,
						Input: linIn{key: c.key, val: c.val}, Call: call, Output: linOut{ok: ok}, Return: ret})
					continue
				}
				kv := rng.IntN(len(keys))
				v := 1 + w*opsPer + i
				call := clock.Add(1)
				cur, s, stored, err := tb.Insert(keys[kv], Item[int, int]{Msg: &vals[v]})
				ret := clock.Add(1)
				if err != nil {
					panic(err)
				}
				hist[w] = append(hist[w], porcupine.Operation{ClientId: w,
					Input: linIn{insert: true, key: kv, val: v}, Call: call, Output: linOut{cur: *cur.Msg, stored: stored}, Return: ret})
				held = append(held, struct {
					s   Slot
					key int
					val int
				}{s, kv, *cur.Msg})
			}
		}()
	}
	wg.Wait()
	var all []porcupine.Operation
	for _, h := range hist {
		all = append(all, h...)
	}
	return all
}
