package match

import (
	"fmt"
	"strconv"
)

// Bit layout of a Key: the context id in the top 16 bits, the source in the
// next 24 and the tag in the low 24. A source or tag field of all ones is the
// wildcard; that value is therefore not a valid source or tag.
const (
	tagBits    = 24
	sourceBits = 24
	ctxBits    = 16

	tagShift    = 0
	sourceShift = tagBits
	ctxShift    = tagBits + sourceBits

	tagField    = (1<<tagBits - 1) << tagShift
	sourceField = (1<<sourceBits - 1) << sourceShift
)

// Limits of the values a Key can hold. NewKey rejects anything outside them.
const (
	// MaxContext is the largest context id (16 bits).
	MaxContext uint32 = 1<<ctxBits - 1
	// MaxSource is the largest source rank (24 bits, all ones reserved for
	// AnySource).
	MaxSource int32 = 1<<sourceBits - 2
	// MaxTag is the largest tag (24 bits, all ones reserved for AnyTag). It
	// is the value the layer above reports as MPI_TAG_UB.
	MaxTag int32 = 1<<tagBits - 2
)

// Wildcards accepted by NewKey for a posted receive (Post, Probe, Cancel).
// A message's key (Arrive, Insert) never holds a wildcard.
const (
	// AnySource matches a message from any source (MPI_ANY_SOURCE).
	AnySource int32 = -1
	// AnyTag matches a message with any tag (MPI_ANY_TAG).
	AnyTag int32 = -1
)

// Key identifies a message or a receive: (context id, source, tag), packed
// into 64 bits as Dang et al.'s hash key. The zero Key is context 0, source 0,
// tag 0. Keys are comparable and may be used as map keys.
type Key struct {
	v uint64
}

// NewKey builds a Key. ctx must be at most MaxContext; src must be in
// [0, MaxSource] or AnySource; tag must be in [0, MaxTag] or AnyTag. Out of
// range values give a *KeyError that matches ErrKeyRange.
func NewKey(ctx uint32, src, tag int32) (Key, error) {
	if k, ok := ExactKey(ctx, src, tag); ok {
		return k, nil
	}
	if ctx > MaxContext {
		return Key{}, &KeyError{Field: "context", Value: int64(ctx), Max: int64(MaxContext)}
	}
	var s, t uint64
	switch {
	case src == AnySource:
		s = sourceField >> sourceShift
	case src < 0 || src > MaxSource:
		return Key{}, &KeyError{Field: "source", Value: int64(src), Max: int64(MaxSource)}
	default:
		s = uint64(src)
	}
	switch {
	case tag == AnyTag:
		t = tagField >> tagShift
	case tag < 0 || tag > MaxTag:
		return Key{}, &KeyError{Field: "tag", Value: int64(tag), Max: int64(MaxTag)}
	default:
		t = uint64(tag)
	}
	return Key{v: uint64(ctx)<<ctxShift | s<<sourceShift | t<<tagShift}, nil
}

// MustKey is NewKey for values known to be valid (constants, tests). It
// panics with a "match: " message if they are not.
func MustKey(ctx uint32, src, tag int32) Key {
	k, err := NewKey(ctx, src, tag)
	if err != nil {
		panic("match: " + err.Error())
	}
	return k
}

// ExactKey builds the key of a message or an exact receive: it reports
// false, and NewKey says why, unless ctx is at most MaxContext and src and
// tag are in [0, MaxSource] and [0, MaxTag] (no wildcard). It is NewKey's
// common case, small enough to inline into the paths of every message.
func ExactKey(ctx uint32, src, tag int32) (Key, bool) {
	if ctx > MaxContext || uint32(src) > uint32(MaxSource) || uint32(tag) > uint32(MaxTag) {
		return Key{}, false
	}
	return Key{v: uint64(ctx)<<ctxShift | uint64(src)<<sourceShift | uint64(tag)<<tagShift}, true
}

// Context returns the key's context id.
func (k Key) Context() uint32 { return uint32(k.v >> ctxShift) }

// Source returns the key's source, or AnySource.
func (k Key) Source() int32 {
	if k.v&sourceField == sourceField {
		return AnySource
	}
	return int32(k.v & sourceField >> sourceShift)
}

// Tag returns the key's tag, or AnyTag.
func (k Key) Tag() int32 {
	if k.v&tagField == tagField {
		return AnyTag
	}
	return int32(k.v & tagField >> tagShift)
}

// IsWildcard reports whether the key holds AnySource or AnyTag.
func (k Key) IsWildcard() bool { return k.wildMask() != 0 }

// Matches reports whether a receive posted with key k matches a message with
// the exact key msg: same context, and same source and tag unless k holds
// the wildcard for them.
func (k Key) Matches(msg Key) bool {
	keep := ^k.wildMask()
	return k.v&keep == msg.v&keep
}

// wildMask returns the bits of k's wildcard fields (zero for an exact key).
func (k Key) wildMask() uint64 {
	var m uint64
	if k.v&sourceField == sourceField {
		m |= sourceField
	}
	if k.v&tagField == tagField {
		m |= tagField
	}
	return m
}

// String formats the key as "ctx=C src=S tag=T", with "any" for wildcards.
func (k Key) String() string {
	b := make([]byte, 0, 40)
	b = append(b, "ctx="...)
	b = strconv.AppendUint(b, uint64(k.Context()), 10)
	b = append(b, " src="...)
	if s := k.Source(); s == AnySource {
		b = append(b, "any"...)
	} else {
		b = strconv.AppendInt(b, int64(s), 10)
	}
	b = append(b, " tag="...)
	if t := k.Tag(); t == AnyTag {
		b = append(b, "any"...)
	} else {
		b = strconv.AppendInt(b, int64(t), 10)
	}
	return string(b)
}

// KeyError is returned by NewKey when a field is out of range. It matches
// ErrKeyRange with errors.Is.
type KeyError struct {
	Field string // "context", "source" or "tag"
	Value int64  // the value given
	Max   int64  // the largest valid value (wildcards aside)
}

// Error names the key field and its allowed range.
func (e *KeyError) Error() string {
	return fmt.Sprintf("match: %s %d out of range [0, %d]", e.Field, e.Value, e.Max)
}

// Is makes errors.Is(err, ErrKeyRange) true for a *KeyError.
func (e *KeyError) Is(target error) bool { return target == ErrKeyRange }
