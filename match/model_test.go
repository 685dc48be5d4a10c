package match

import (
	"errors"
	"fmt"
	"slices"
)

// The reference model: MPI's posted-receive and unexpected-message queues as
// two plain lists, searched front to back, the way MPI libraries do it. A
// harness drives a Table and the model with the same commands and checks
// every answer.

type tmsg struct {
	id  int
	key Key
}

type trecv struct {
	id  int
	key Key
}

type model struct {
	posted []*trecv // in posting order
	unexp  []*tmsg  // in arrival order
	// overtaking: messages of one source with different tags need not
	// keep their order (Config.AllowOvertaking).
	overtaking bool
}

// arrive returns the receive a message with key k must match (the first
// matching posted one), or nil.
func (md *model) arrive(k Key) *trecv {
	for _, r := range md.posted {
		if r.key.Matches(k) {
			return r
		}
	}
	return nil
}

// validMsg reports whether Post(k) may return m: m is queued and matches k,
// and no earlier queued message that MPI orders before m also matches k —
// one from the same source (context, source), or with the same key when
// overtaking is allowed.
func (md *model) validMsg(k Key, m *tmsg) error {
	at := slices.Index(md.unexp, m)
	if at < 0 {
		return fmt.Errorf("message %d (%v) is not queued", m.id, m.key)
	}
	if !k.Matches(m.key) {
		return fmt.Errorf("message %d (%v) does not match %v", m.id, m.key, k)
	}
	for _, e := range md.unexp[:at] {
		if !k.Matches(e.key) {
			continue
		}
		same := e.key.Context() == m.key.Context() && e.key.Source() == m.key.Source()
		if md.overtaking {
			same = e.key == m.key
		}
		if same {
			return fmt.Errorf("message %d (%v) overtakes message %d (%v) for receive %v", m.id, m.key, e.id, e.key, k)
		}
	}
	return nil
}

func (md *model) anyMsg(k Key) *tmsg {
	for _, m := range md.unexp {
		if k.Matches(m.key) {
			return m
		}
	}
	return nil
}

// keyHead returns the head of the FIFO of the exact key k.
func (md *model) keyHead(k Key) (m *tmsg, r *trecv) {
	for _, x := range md.unexp {
		if x.key == k {
			return x, nil
		}
	}
	for _, x := range md.posted {
		if x.key == k {
			return nil, x
		}
	}
	return nil, nil
}

// harness runs commands on a table and on the model.
type harness struct {
	t      *Table[tmsg, trecv]
	md     model
	cfg    Config
	nextID int
	slots  []heldSlot // from Insert, for Empty
}

type heldSlot struct {
	s Slot
	m *tmsg
	r *trecv
}

func newHarness(cfg Config, collide bool) (*harness, error) {
	h := &harness{cfg: cfg, md: model{overtaking: cfg.AllowOvertaking}}
	if collide {
		h.t = newCollide[tmsg, trecv](cfg)
		return h, nil
	}
	t, err := New[tmsg, trecv](cfg)
	if err != nil {
		return nil, err
	}
	h.t = t
	return h, nil
}

func (h *harness) id() int { h.nextID++; return h.nextID }

func (h *harness) wildAllowed(k Key) bool {
	if h.cfg.NoAnySource && k.Source() == AnySource {
		return false
	}
	return !(h.cfg.NoAnyTag && k.Tag() == AnyTag)
}

func (h *harness) arrive(k Key) error {
	m := &tmsg{id: h.id(), key: k}
	r, ok, err := h.t.Arrive(k, m)
	if err != nil {
		return fmt.Errorf("Arrive(%v): %v", k, err)
	}
	want := h.md.arrive(k)
	if ok != (want != nil) || r != want {
		return fmt.Errorf("Arrive(%v) = %s, want %s", k, descR(r, ok), descR(want, want != nil))
	}
	if want != nil {
		h.md.posted = slices.DeleteFunc(h.md.posted, func(x *trecv) bool { return x == want })
	} else {
		h.md.unexp = append(h.md.unexp, m)
	}
	return nil
}

func (h *harness) post(k Key, probe bool) error {
	r := &trecv{id: h.id(), key: k}
	var (
		m   *tmsg
		mk  Key
		ok  bool
		err error
	)
	op := "Post"
	if probe {
		op = "Probe"
		m, mk, ok, err = h.t.Probe(k)
	} else {
		m, mk, ok, err = h.t.Post(k, r)
	}
	if !h.wildAllowed(k) {
		if !errors.Is(err, ErrWildcardNotAllowed) {
			return fmt.Errorf("%s(%v) with %v: err %v, want ErrWildcardNotAllowed", op, k, h.cfg, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s(%v): %v", op, k, err)
	}
	first := h.md.anyMsg(k)
	if ok != (first != nil) || (m != nil) != ok {
		return fmt.Errorf("%s(%v) = %s, want a match: %t", op, k, descM(m, ok), first != nil)
	}
	if !ok {
		if !probe {
			h.md.posted = append(h.md.posted, r)
		}
		return nil
	}
	if mk != m.key {
		return fmt.Errorf("%s(%v) returned key %v for message %d with key %v", op, k, mk, m.id, m.key)
	}
	if err := h.md.validMsg(k, m); err != nil {
		return fmt.Errorf("%s(%v): %v", op, k, err)
	}
	if !probe {
		h.md.unexp = slices.DeleteFunc(h.md.unexp, func(x *tmsg) bool { return x == m })
	}
	return nil
}

// cancel cancels the i-th posted receive, or a receive never posted.
func (h *harness) cancel(i int) error {
	var r *trecv
	if len(h.md.posted) > 0 && i < 4*len(h.md.posted) {
		r = h.md.posted[i%len(h.md.posted)]
	} else {
		r = &trecv{id: h.id(), key: MustKey(0, 0, 0)}
	}
	got := h.t.Cancel(r.key, r)
	want := slices.Contains(h.md.posted, r)
	if got != want {
		return fmt.Errorf("Cancel(%v, receive %d) = %t, want %t", r.key, r.id, got, want)
	}
	h.md.posted = slices.DeleteFunc(h.md.posted, func(x *trecv) bool { return x == r })
	return nil
}

func (h *harness) insert(k Key, recv bool) error {
	var it Item[tmsg, trecv]
	m, r := &tmsg{id: h.id(), key: k}, &trecv{id: h.id(), key: k}
	if recv {
		it.Recv = r
	} else {
		it.Msg = m
	}
	cur, s, stored, err := h.t.Insert(k, it)
	if h.t.c.wildOK {
		if !errors.Is(err, ErrNeedsHints) {
			return fmt.Errorf("Insert with %v: err %v, want ErrNeedsHints", h.cfg, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("Insert(%v): %v", k, err)
	}
	hm, hr := h.md.keyHead(k)
	if hm == nil && hr == nil {
		if !stored || cur != it {
			return fmt.Errorf("Insert(%v) on an empty key: stored %t cur %+v", k, stored, cur)
		}
		if recv {
			h.md.posted = append(h.md.posted, r)
		} else {
			h.md.unexp = append(h.md.unexp, m)
		}
		h.slots = append(h.slots, heldSlot{s, it.Msg, it.Recv})
		return nil
	}
	if stored || cur.Msg != hm || cur.Recv != hr {
		return fmt.Errorf("Insert(%v) = (%s, %s, stored %t), want head (%s, %s)", k,
			descM(cur.Msg, cur.Msg != nil), descR(cur.Recv, cur.Recv != nil), stored,
			descM(hm, hm != nil), descR(hr, hr != nil))
	}
	h.slots = append(h.slots, heldSlot{s, hm, hr})
	return nil
}

func (h *harness) empty(i int) error {
	if len(h.slots) == 0 {
		if h.t.Empty(Slot{}) {
			return errors.New("Empty(Slot{}) = true")
		}
		return nil
	}
	i %= len(h.slots)
	hs := h.slots[i]
	h.slots = slices.Delete(h.slots, i, i+1)
	got := h.t.Empty(hs.s)
	want := slices.Contains(h.md.unexp, hs.m) || slices.Contains(h.md.posted, hs.r)
	if hs.m == nil && hs.r == nil {
		want = false
	}
	if got != want {
		return fmt.Errorf("Empty(slot of %s%s) = %t, want %t", descM(hs.m, hs.m != nil), descR(hs.r, hs.r != nil), got, want)
	}
	if got {
		h.md.unexp = slices.DeleteFunc(h.md.unexp, func(x *tmsg) bool { return x == hs.m })
		h.md.posted = slices.DeleteFunc(h.md.posted, func(x *trecv) bool { return x == hs.r })
	}
	return nil
}

// drain checks that the table and the model end in the same state: every
// queued message is found by an exact Post, every posted receive is
// cancelled, and then the table is empty.
func (h *harness) drain() error {
	for len(h.md.unexp) > 0 {
		m := h.md.unexp[0]
		if err := h.post(m.key, false); err != nil {
			return fmt.Errorf("drain: %v", err)
		}
	}
	for len(h.md.posted) > 0 {
		if err := h.cancel(0); err != nil {
			return fmt.Errorf("drain: %v", err)
		}
	}
	if w := h.t.pendingWild(); w != 0 {
		return fmt.Errorf("drain: %d wildcard receives still counted", w)
	}
	for ctx := uint32(0); ctx < 2; ctx++ {
		all := MustKey(ctx, AnySource, AnyTag)
		if !h.wildAllowed(all) {
			continue
		}
		if m, _, ok, _ := h.t.Probe(all); ok {
			return fmt.Errorf("drain: table still holds message %d (%v)", m.id, m.key)
		}
	}
	return nil
}

// run interprets data as commands, two bytes each, and checks each one.
func (h *harness) run(data []byte) error {
	for len(data) >= 2 {
		op, arg := data[0], data[1]
		data = data[2:]
		ctx := uint32(arg >> 4 & 1)
		src, tag := int32(arg&3), int32(arg>>2&3)
		wsrc, wtag := src, tag
		if wsrc == 3 {
			wsrc = AnySource
		}
		if wtag == 3 {
			wtag = AnyTag
		}
		var err error
		switch op % 10 {
		case 0, 1, 2:
			err = h.arrive(MustKey(ctx, src, tag))
		case 3, 4:
			err = h.post(MustKey(ctx, wsrc, wtag), false)
		case 5:
			err = h.post(MustKey(ctx, src, tag), false)
		case 6:
			err = h.post(MustKey(ctx, wsrc, wtag), true)
		case 7:
			err = h.cancel(int(arg))
		case 8:
			err = h.insert(MustKey(ctx, src, tag), arg&0x80 != 0)
		case 9:
			err = h.empty(int(arg))
		}
		if err != nil {
			return err
		}
	}
	return h.drain()
}

func descM(m *tmsg, ok bool) string {
	if !ok || m == nil {
		return fmt.Sprintf("no message (ok %t)", ok)
	}
	return fmt.Sprintf("message %d %v", m.id, m.key)
}

func descR(r *trecv, ok bool) string {
	if !ok || r == nil {
		return fmt.Sprintf("no receive (ok %t)", ok)
	}
	return fmt.Sprintf("receive %d %v", r.id, r.key)
}

// harnessConfigs are the configurations the fuzz target and TestModel
// cover; the first command byte picks one.
var harnessConfigs = []struct {
	name    string
	cfg     Config
	collide bool
}{
	{"default", Config{}, false},
	{"default/collide", Config{Expected: 1}, true},
	{"exact-only", Config{Expected: 1, NoAnySource: true, NoAnyTag: true}, false},
	{"exact-only/collide", Config{Expected: 1, NoAnySource: true, NoAnyTag: true}, true},
	{"overtaking/collide", Config{Expected: 1, AllowOvertaking: true}, true},
	{"no-any-tag/collide", Config{Expected: 1, NoAnyTag: true}, true},
	{"no-any-source", Config{Expected: 1, NoAnySource: true}, false},
	{"overtaking", Config{Expected: 10, AllowOvertaking: true}, false},
}
