package comm

import "testing"

type celsius float64

// TestBuiltinOpsAllocateNothing: a built-in operator made in the call that
// uses it, as reductions are written, allocates nothing once made for its
// type, and each type gets its own (a defined type beside its underlying
// one).
func TestBuiltinOpsAllocateNothing(t *testing.T) {
	makes := map[string]func(){
		"Sum":    func() { _ = Sum[float64]() },
		"Prod":   func() { _ = Prod[int]() },
		"Min":    func() { _ = Min[float32]() },
		"Max":    func() { _ = Max[string]() },
		"Land":   func() { _ = Land[bool]() },
		"Lor":    func() { _ = Lor[bool]() },
		"Lxor":   func() { _ = Lxor[bool]() },
		"Band":   func() { _ = Band[uint8]() },
		"Bor":    func() { _ = Bor[int64]() },
		"Bxor":   func() { _ = Bxor[int32]() },
		"MinLoc": func() { _ = MinLoc[float64]() },
		"MaxLoc": func() { _ = MaxLoc[int]() },
	}
	for name, mk := range makes {
		mk()
		if n := testing.AllocsPerRun(100, mk); n != 0 {
			t.Errorf("%s allocates %v times a call", name, n)
		}
	}
	in, got := []celsius{1.5, 2}, []celsius{0.25, 3}
	Sum[celsius]().Apply(in, got)
	if got[0] != 1.75 || got[1] != 5 {
		t.Errorf("Sum[celsius] gave %v", got)
	}
	f := []float64{1, 2}
	Max[float64]().Apply([]float64{3, 1}, f)
	if f[0] != 3 || f[1] != 2 || Max[float64]().Name() != "max" || Sum[celsius]().Name() != "sum" {
		t.Errorf("Max[float64] gave %v, names %q %q", f, Max[float64]().Name(), Sum[celsius]().Name())
	}
}
