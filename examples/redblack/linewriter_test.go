package main

import (
	"slices"
	"testing"
)

// writes records each Write it gets.
type writes struct{ got []string }

func (w *writes) Write(p []byte) (int, error) {
	w.got = append(w.got, string(p))
	return len(p), nil
}

// TestLineWriter: pieces of lines become one Write per whole line, and a
// line without its newline yet is held.
func TestLineWriter(t *testing.T) {
	var w writes
	l := &lineWriter{w: &w}
	for _, p := range []string{"mpi", "  ", "2 ranks\nhy", "brid\nfunneled\nlast", ""} {
		if n, err := l.Write([]byte(p)); n != len(p) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", p, n, err)
		}
	}
	if want := []string{"mpi  2 ranks\n", "hybrid\n", "funneled\n"}; !slices.Equal(w.got, want) {
		t.Fatalf("writes %q, want %q", w.got, want)
	}
	if _, err := l.Write([]byte("\n")); err != nil || w.got[len(w.got)-1] != "last\n" {
		t.Fatalf("the held line came out as %q, %v", w.got, err)
	}
}
