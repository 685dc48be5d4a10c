package match

import (
	"errors"
	"testing"
)

func TestNewKey(t *testing.T) {
	valid := []struct {
		ctx      uint32
		src, tag int32
		str      string
	}{
		{0, 0, 0, "ctx=0 src=0 tag=0"},
		{MaxContext, MaxSource, MaxTag, "ctx=65535 src=16777214 tag=16777214"},
		{7, AnySource, 3, "ctx=7 src=any tag=3"},
		{7, 3, AnyTag, "ctx=7 src=3 tag=any"},
		{1, AnySource, AnyTag, "ctx=1 src=any tag=any"},
	}
	for _, c := range valid {
		k, err := NewKey(c.ctx, c.src, c.tag)
		if err != nil {
			t.Fatalf("NewKey(%d, %d, %d): %v", c.ctx, c.src, c.tag, err)
		}
		if k.Context() != c.ctx || k.Source() != c.src || k.Tag() != c.tag {
			t.Errorf("NewKey(%d, %d, %d) reads back (%d, %d, %d)", c.ctx, c.src, c.tag, k.Context(), k.Source(), k.Tag())
		}
		if got := k.String(); got != c.str {
			t.Errorf("String() = %q, want %q", got, c.str)
		}
		if wild := c.src == AnySource || c.tag == AnyTag; k.IsWildcard() != wild {
			t.Errorf("%v: IsWildcard() = %t", k, k.IsWildcard())
		}
	}
	invalid := []struct {
		ctx      uint32
		src, tag int32
		field    string
	}{
		{MaxContext + 1, 0, 0, "context"},
		{0, MaxSource + 1, 0, "source"},
		{0, -2, 0, "source"},
		{0, 0, MaxTag + 1, "tag"},
		{0, 0, -5, "tag"},
	}
	for _, c := range invalid {
		_, err := NewKey(c.ctx, c.src, c.tag)
		var ke *KeyError
		if !errors.Is(err, ErrKeyRange) || !errors.As(err, &ke) || ke.Field != c.field {
			t.Errorf("NewKey(%d, %d, %d) = %v, want a %s KeyError", c.ctx, c.src, c.tag, err, c.field)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("MustKey with a bad tag did not panic")
		}
	}()
	MustKey(0, 0, -7)
}

func TestMatches(t *testing.T) {
	msg := MustKey(2, 5, 9)
	cases := []struct {
		recv Key
		want bool
	}{
		{MustKey(2, 5, 9), true},
		{MustKey(2, AnySource, 9), true},
		{MustKey(2, 5, AnyTag), true},
		{MustKey(2, AnySource, AnyTag), true},
		{MustKey(3, AnySource, AnyTag), false},
		{MustKey(2, 4, AnyTag), false},
		{MustKey(2, AnySource, 8), false},
		{MustKey(2, 5, 8), false},
	}
	for _, c := range cases {
		if got := c.recv.Matches(msg); got != c.want {
			t.Errorf("%v.Matches(%v) = %t, want %t", c.recv, msg, got, c.want)
		}
	}
}

func TestConfig(t *testing.T) {
	var zero Config
	if err := zero.Validate(); err != nil {
		t.Fatalf("zero Config: %v", err)
	}
	if got, want := zero.String(), "match.Config{Expected: 1024, buckets: 1024 (128 KiB), NoAnySource: false, NoAnyTag: false, AllowOvertaking: false}"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	for _, e := range []int{-1, MaxExpected + 1} {
		c := Config{Expected: e}
		if err := c.Validate(); !errors.Is(err, ErrConfig) {
			t.Errorf("Validate(Expected %d) = %v, want ErrConfig", e, err)
		}
		if _, err := New[int, int](c); !errors.Is(err, ErrConfig) {
			t.Errorf("New(Expected %d) = %v, want ErrConfig", e, err)
		}
	}
	for _, c := range []struct{ exp, buckets int }{{1, 4}, {5, 8}, {100, 128}, {256, 256}, {257, 512}, {100000, 131072}} {
		if got := (Config{Expected: c.exp}).buckets(); got != c.buckets {
			t.Errorf("Expected %d: %d buckets, want %d", c.exp, got, c.buckets)
		}
	}
}
