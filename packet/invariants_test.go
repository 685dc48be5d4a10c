//go:build invariants

package packet

import (
	"errors"
	"strings"
	"testing"

	"github.com/fibermpi/fibermpi/internal/invariants"
)

// expectViolation runs f and checks it panics with an invariants.Violation
// whose message contains want.
func expectViolation(t *testing.T, want string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		var v invariants.Violation
		if err, ok := r.(error); !ok || !errors.As(err, &v) || !strings.Contains(v.Msg, want) {
			t.Errorf("recovered %v, want a Violation containing %q", r, want)
		}
	}()
	f()
}

func TestInvariantsDoublePut(t *testing.T) {
	p := newTestPool(t, Config{Workers: 1, PerWorker: 2, Shared: 2, PayloadSize: 64})
	for _, w := range []int{0, NoWorker} {
		pk := p.Get(w)
		p.Put(w, pk)
		expectViolation(t, "double Put", func() { p.Put(w, pk) })
		expectViolation(t, "double Put", func() { p.Put(NoWorker, pk) })
	}
	if err := audit(p, nil); err != nil {
		t.Fatal(err)
	}
}

func TestInvariantsUseAfterPut(t *testing.T) {
	p := newTestPool(t, Config{Workers: 1, PerWorker: 2, Shared: 2, PayloadSize: 64})
	pk := p.Get(0)
	p.Put(0, pk)
	expectViolation(t, "Payload on packet", func() { pk.Payload() })
	expectViolation(t, "Payload on packet", func() { pk.Data() })
	expectViolation(t, "Len on packet", func() { pk.Len() })
	expectViolation(t, "SetLen on packet", func() { pk.SetLen(1) })
	expectViolation(t, "Payload on packet", func() { _ = pk.SetData(nil) })
}

func TestInvariantsWriteAfterPut(t *testing.T) {
	for name, write := range map[string]func(pk *Packet, stale []byte){
		"payload": func(_ *Packet, stale []byte) { stale[len(stale)-1] = 1 },
		"header":  func(pk *Packet, _ []byte) { pk.Tag = 5 },
		"kind":    func(pk *Packet, _ []byte) { pk.Kind = KindEager },
	} {
		t.Run(name, func(t *testing.T) {
			p := newTestPool(t, Config{Workers: 1, PerWorker: 2, Shared: 2, PayloadSize: 64})
			pk := p.Get(0)
			stale := pk.Payload()
			p.Put(0, pk)
			write(pk, stale)
			expectViolation(t, "written after Put", func() { p.Get(0) })
		})
	}
}

func TestInvariantsTwoOwners(t *testing.T) {
	p := newTestPool(t, Config{Workers: 2, PerWorker: 2, Shared: 2, PayloadSize: 64})
	// Simulate another goroutine inside an owner operation on deque 1.
	p.workers[1].enter(1)
	expectViolation(t, "worker index 1 at once", func() { p.Get(1) })
	pk := p.Get(0)
	expectViolation(t, "worker index 1 at once", func() { p.Put(1, pk) })
	p.workers[1].leave()
	p.Put(1, pk)
	if err := audit(p, nil); err != nil {
		t.Fatal(err)
	}
}
