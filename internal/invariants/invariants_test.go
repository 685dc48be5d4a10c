package invariants

import (
	"errors"
	"testing"
)

func TestCheck(t *testing.T) {
	Check(true, "never fires")
	defer func() {
		r := recover()
		if !Enabled {
			if r != nil {
				t.Fatalf("Check panicked in a build without the invariants tag: %v", r)
			}
			return
		}
		var v Violation
		err, ok := r.(error)
		if !ok || !errors.As(err, &v) || v.Msg != "boom" {
			t.Fatalf("recovered %v, want Violation{boom}", r)
		}
	}()
	Check(false, "boom")
	if Enabled {
		t.Fatal("Check(false) returned with invariants enabled")
	}
}
