package trace

import (
	"context"
	"runtime/pprof"
	rtrace "runtime/trace"
	"slices"
	"strconv"
	"sync"
	"time"
)

// Kind says what a Record is.
type Kind uint8

// The kinds of record. Spans have a duration; instants and matches do not.
const (
	KindNone Kind = iota
	// KindSend is a send call (blocking or not) to Peer of Bytes.
	KindSend
	// KindRecv is a blocking receive call; Peer is the source matched.
	KindRecv
	// KindWait is a wait for a request that was not yet complete: the
	// caller was parked (a fiber yielded to its worker, a goroutine parked).
	KindWait
	// KindColl is a blocking collective call; Name says which.
	KindColl
	// KindEager is an eager packet posted to Peer.
	KindEager
	// KindRTS is a rendezvous announcement posted to Peer.
	KindRTS
	// KindRTR is a receiver's ready-to-receive reply to Peer.
	KindRTR
	// KindPut is the sender's Put of rendezvous data into Peer's buffer
	// (a span).
	KindPut
	// KindDone is the receiver learning that Peer's data is in its buffer.
	KindDone
	// KindMatch is a receive meeting the message from Peer (the end of its
	// flow arrow).
	KindMatch
	kindCount
)

var kindNames = [kindCount]string{"none", "send", "recv", "wait", "coll", "eager", "RTS", "RTR", "put", "done", "match"}

// String names the kind as the timeline shows it.
func (k Kind) String() string {
	if k < kindCount {
		return kindNames[k]
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// MarshalText writes the kind's name.
func (k Kind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText reads a kind's name.
func (k *Kind) UnmarshalText(b []byte) error {
	for i, n := range kindNames {
		if n == string(b) {
			*k = Kind(i)
			return nil
		}
	}
	return &FormatError{Msg: "unknown record kind " + strconv.Quote(string(b))}
}

// span reports whether records of kind k have a duration.
func (k Kind) span() bool {
	switch k {
	case KindSend, KindRecv, KindWait, KindColl, KindPut:
		return true
	}
	return false
}

// NoPeer is a Record's Peer when there is none.
const NoPeer = -1

// Record is one thing a rank did. Times are wall-clock nanoseconds since
// the Unix epoch.
type Record struct {
	Kind    Kind   `json:"k"`
	Start   int64  `json:"t"`
	End     int64  `json:"e,omitempty"`
	Peer    int32  `json:"p"`
	Tag     int32  `json:"g,omitempty"`
	Context uint32 `json:"c,omitempty"`
	Bytes   int64  `json:"b,omitempty"`
	Name    string `json:"n,omitempty"`
}

// Pair counts the messages and bytes a rank sent to one peer.
type Pair struct {
	To    int32 `json:"to"`
	Msgs  int64 `json:"msgs"`
	Bytes int64 `json:"bytes"`
}

// DefaultMaxRecords is how many records a Rank keeps before it only counts.
const DefaultMaxRecords = 1 << 20

// Now returns the current time as records carry it.
func Now() int64 { return time.Now().UnixNano() }

// Recorder collects the records of one process's endpoints. Its methods
// are safe for concurrent use.
type Recorder struct {
	proc, procs int
	max         int
	start       int64

	mu       sync.Mutex
	ranks    []*Rank
	end      int64
	deadlock *WaitFor
}

// NewRecorder returns a recorder for process proc of a job of procs
// processes, keeping up to maxRecords records per rank (0 means
// DefaultMaxRecords).
func NewRecorder(proc, procs, maxRecords int) *Recorder {
	if maxRecords <= 0 {
		maxRecords = DefaultMaxRecords
	}
	return &Recorder{proc: proc, procs: max(procs, 1), max: maxRecords, start: Now()}
}

// Rank returns the rank that records for the endpoint at addr, making it
// on first use. A nil Recorder returns a nil Rank, whose hooks the callers
// skip.
func (rc *Recorder) Rank(addr int32) *Rank {
	if rc == nil {
		return nil
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, r := range rc.ranks {
		if r.addr == addr {
			return r
		}
	}
	r := &Rank{rc: rc, addr: addr, pairs: make(map[int32]*Pair), names: []string{""}}
	rc.ranks = append(rc.ranks, r)
	return r
}

// Stop ends the recording period (the end of every rank's timeline);
// records made later are still kept. Stop is idempotent.
func (rc *Recorder) Stop() {
	rc.mu.Lock()
	if rc.end == 0 {
		rc.end = Now()
	}
	rc.mu.Unlock()
}

// Data returns a copy of what has been recorded so far, leaving out the
// endpoints that recorded nothing.
func (rc *Recorder) Data() *Data {
	rc.mu.Lock()
	ranks := slices.Clone(rc.ranks)
	end := rc.end
	dl := rc.deadlock
	rc.mu.Unlock()
	if end == 0 {
		end = Now()
	}
	d := &Data{Version: FormatVersion, Procs: rc.procs, Parts: []int{rc.proc}, Deadlock: dl}
	for _, r := range ranks {
		r.mu.Lock()
		rd := RankData{Addr: r.addr, Proc: rc.proc, Start: rc.start, End: end, Dropped: r.dropped}
		rd.Records = make([]Record, 0, r.n)
		for _, c := range r.chunks {
			for _, x := range c {
				rd.Records = append(rd.Records, Record{Kind: x.kind, Start: x.start, End: x.end, Peer: x.peer,
					Tag: x.tag, Context: x.ctx, Bytes: x.bytes, Name: r.names[x.name]})
			}
		}
		for _, p := range r.pairs {
			rd.Pairs = append(rd.Pairs, *p)
		}
		r.mu.Unlock()
		if r.n == 0 && len(rd.Pairs) == 0 && rd.Dropped == 0 {
			continue // an endpoint that never communicated (Init's, often)
		}
		slices.SortFunc(rd.Pairs, func(a, b Pair) int { return int(a.To) - int(b.To) })
		d.Ranks = append(d.Ranks, rd)
	}
	slices.SortFunc(d.Ranks, func(a, b RankData) int { return int(a.Addr) - int(b.Addr) })
	return d
}

// Rank records for one endpoint. A nil *Rank records nothing; the
// endpoint layer tests for nil before calling, so tracing off costs one
// branch.
type Rank struct {
	rc   *Recorder
	addr int32

	mu      sync.Mutex
	chunks  [][]rec // full but the last; each of chunkSize
	n       int     // records in chunks
	dropped int64
	pairs   map[int32]*Pair
	names   []string // rec.name indexes it; names[0] is ""
}

// rec is a Record as a Rank keeps it: without pointers, so that a million
// of them cost the garbage collector nothing to scan, in chunks, so that
// none is ever copied.
type rec struct {
	start, end, bytes int64
	peer, tag         int32
	ctx               uint32
	name              uint16
	kind              Kind
}

const chunkSize = 4096

// add appends x; r.mu is held.
func (r *Rank) add(x rec) {
	if r.n >= r.rc.max {
		r.dropped++
		return
	}
	if last := len(r.chunks) - 1; last < 0 || len(r.chunks[last]) == chunkSize {
		r.chunks = append(r.chunks, make([]rec, 0, chunkSize))
	}
	last := len(r.chunks) - 1
	r.chunks[last] = append(r.chunks[last], x)
	r.n++
}

// nameIndex returns name's index in r.names, adding it; r.mu is held.
func (r *Rank) nameIndex(name string) uint16 {
	if name == "" {
		return 0
	}
	for i, n := range r.names {
		if n == name {
			return uint16(i)
		}
	}
	if len(r.names) == 1<<16-1 {
		return 0 // more distinct names than any program has: drop the name
	}
	r.names = append(r.names, name)
	return uint16(len(r.names) - 1)
}

// Addr returns the endpoint address the rank records for.
func (r *Rank) Addr() int32 { return r.addr }

// Add appends a record.
func (r *Rank) Add(x Record) {
	r.mu.Lock()
	r.add(rec{kind: x.Kind, start: x.Start, end: x.End, peer: x.Peer, tag: x.Tag, ctx: x.Context, bytes: x.Bytes, name: r.nameIndex(x.Name)})
	r.mu.Unlock()
}

// Sent counts a message of n bytes to peer and records the send call that
// began at start.
func (r *Rank) Sent(start int64, peer, tag int32, ctx uint32, n int) {
	end := Now()
	r.mu.Lock()
	p := r.pairs[peer]
	if p == nil {
		p = &Pair{To: peer}
		r.pairs[peer] = p
	}
	p.Msgs++
	p.Bytes += int64(n)
	r.add(rec{kind: KindSend, start: start, end: end, peer: peer, tag: tag, ctx: ctx, bytes: int64(n)})
	r.mu.Unlock()
}

// Instant records a protocol step of kind k with peer now.
func (r *Rank) Instant(k Kind, peer, tag int32, ctx uint32, n int) {
	r.Add(Record{Kind: k, Start: Now(), Peer: peer, Tag: tag, Context: ctx, Bytes: int64(n)})
}

// Span is a call in progress; End records it.
type Span struct {
	r     *Rank
	start int64
	reg   *rtrace.Region
}

// Begin starts a span of a call named name (it names the runtime/trace
// region too). It must end on the same goroutine, which a blocking call
// does: a fiber resumes on the goroutine it parked on.
func (r *Rank) Begin(name string) Span {
	return Span{r: r, start: Now(), reg: rtrace.StartRegion(context.Background(), name)}
}

// Start returns when the span began.
func (s Span) Start() int64 { return s.start }

// End records the span as a record of kind k.
func (s Span) End(k Kind, peer, tag int32, ctx uint32, n int, name string) {
	s.reg.End()
	s.r.Add(Record{Kind: k, Start: s.start, End: Now(), Peer: peer, Tag: tag, Context: ctx, Bytes: int64(n), Name: name})
}

// Label sets pprof labels naming the rank and the endpoint on the calling
// goroutine (a fiber's, or a plain goroutine registered with the
// endpoint), so CPU profiles split by rank. It replaces the goroutine's
// labels.
func (r *Rank) Label(rank int) {
	pprof.SetGoroutineLabels(pprof.WithLabels(context.Background(),
		pprof.Labels("fibermpi.rank", strconv.Itoa(rank), "fibermpi.endpoint", strconv.Itoa(int(r.addr)))))
}
