package trace

import (
	"bufio"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
)

// FormatVersion is the version of the "fibermpi" member this package writes.
const FormatVersion = 1

// ErrFormat is returned (wrapped in a *FormatError) when a file is not a
// fibermpi trace or its parts do not fit together.
var ErrFormat = errors.New("trace: bad trace file")

// FormatError says what is wrong with a trace file.
type FormatError struct{ Msg string }

func (e *FormatError) Error() string { return "trace: " + e.Msg }

// Is makes errors.Is(err, ErrFormat) true.
func (e *FormatError) Is(target error) bool { return target == ErrFormat }

// Data is a recording: the records of some or all of a job's endpoints.
type Data struct {
	Version int        `json:"version"`
	Procs   int        `json:"procs"` // processes in the job
	Parts   []int      `json:"parts"` // the processes whose records these are
	Ranks   []RankData `json:"ranks"`
	// Deadlock is the wait-for graph of the job's deadlock report, if
	// there was one.
	Deadlock *WaitFor `json:"deadlock,omitempty"`
}

// RankData is one endpoint's recording.
type RankData struct {
	Addr    int32    `json:"addr"`
	Proc    int      `json:"proc"`
	Start   int64    `json:"start"` // the recording period, ns since the epoch
	End     int64    `json:"end"`
	Records []Record `json:"records"`
	Pairs   []Pair   `json:"pairs"`
	Dropped int64    `json:"dropped,omitempty"`
}

// File is a trace file: Chrome trace JSON (object format) with the
// recording alongside.
type File struct {
	TraceEvents     []Event `json:"traceEvents"`
	DisplayTimeUnit string  `json:"displayTimeUnit,omitempty"`
	Fibermpi        *Data   `json:"fibermpi,omitempty"`
}

// Event is one Chrome trace event (the Trace Event Format's fields).
type Event struct {
	Name string         `json:"name"`
	Cat  string         `json:"cat,omitempty"`
	Ph   string         `json:"ph"`
	Ts   float64        `json:"ts"` // µs
	Dur  float64        `json:"dur,omitempty"`
	Pid  int            `json:"pid"`
	Tid  int            `json:"tid"`
	ID   string         `json:"id,omitempty"`
	BP   string         `json:"bp,omitempty"`
	S    string         `json:"s,omitempty"`
	Args map[string]any `json:"args,omitempty"`
}

// Write writes d as a trace file to w.
func (d *Data) Write(w io.Writer) error {
	bw := bufio.NewWriter(w)
	f := File{TraceEvents: d.Chrome(), DisplayTimeUnit: "ns", Fibermpi: d}
	if err := json.NewEncoder(bw).Encode(&f); err != nil {
		return err
	}
	return bw.Flush()
}

// WriteFile writes d to the file path.
func (d *Data) WriteFile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := d.Write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Read reads a trace file written by Write.
func Read(r io.Reader) (*Data, error) {
	var f File
	if err := json.NewDecoder(bufio.NewReader(r)).Decode(&f); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrFormat, err)
	}
	d := f.Fibermpi
	switch {
	case d == nil:
		return nil, &FormatError{Msg: "no \"fibermpi\" member: not written by fibermpi"}
	case d.Version != FormatVersion:
		return nil, &FormatError{Msg: fmt.Sprintf("format version %d, want %d", d.Version, FormatVersion)}
	}
	return d, nil
}

// ReadFile reads the trace file path.
func ReadFile(path string) (*Data, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	d, err := Read(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return d, nil
}

// PartPath is the file a process of a job of several writes its part to,
// given the path the job was asked to trace to.
func PartPath(path string, proc int) string { return path + "." + strconv.Itoa(proc) }

// Merge joins the parts of one job into one recording. Parts must come
// from the same job (the same number of processes) and not overlap.
func Merge(parts ...*Data) (*Data, error) {
	if len(parts) == 0 {
		return nil, &FormatError{Msg: "nothing to merge"}
	}
	m := &Data{Version: FormatVersion, Procs: parts[0].Procs}
	seen := map[int]bool{}
	addrs := map[int32]bool{}
	for _, p := range parts {
		if p.Procs != m.Procs {
			return nil, &FormatError{Msg: fmt.Sprintf("parts of jobs of %d and %d processes", m.Procs, p.Procs)}
		}
		for _, pr := range p.Parts {
			if seen[pr] {
				return nil, &FormatError{Msg: fmt.Sprintf("process %d's part given twice", pr)}
			}
			seen[pr] = true
			m.Parts = append(m.Parts, pr)
		}
		for _, r := range p.Ranks {
			if addrs[r.Addr] {
				return nil, &FormatError{Msg: fmt.Sprintf("endpoint %d recorded twice", r.Addr)}
			}
			addrs[r.Addr] = true
			m.Ranks = append(m.Ranks, r)
		}
		if p.Deadlock != nil {
			m.Deadlock = m.Deadlock.merge(p.Deadlock) // each process reports its ranks' waits
		}
	}
	slices.Sort(m.Parts)
	slices.SortFunc(m.Ranks, func(a, b RankData) int { return cmp.Compare(a.Addr, b.Addr) })
	return m, nil
}

// Missing returns the processes of the job whose parts d lacks.
func (d *Data) Missing() []int {
	var miss []int
	for p := range d.Procs {
		if !slices.Contains(d.Parts, p) {
			miss = append(miss, p)
		}
	}
	return miss
}

// Flow is one message: the send that started it and the match that ended
// it, as indices into the ranks and their records.
type Flow struct {
	FromRank, FromRec int
	ToRank, ToRec     int
}

type flowKey struct {
	from, to int32
	ctx      uint32
	tag      int32
}

// Flows pairs every recorded send with the receive that matched it, by
// non-overtaking order (see the package doc). Sends whose match was not
// recorded (a part missing, records dropped) have no flow.
func (d *Data) Flows() []Flow {
	type ref struct {
		rank, rec int
		t         int64
	}
	sends := map[flowKey][]ref{}
	matches := map[flowKey][]ref{}
	for i, r := range d.Ranks {
		for j, rec := range r.Records {
			switch rec.Kind {
			case KindSend:
				k := flowKey{r.Addr, rec.Peer, rec.Context, rec.Tag}
				sends[k] = append(sends[k], ref{i, j, rec.Start})
			case KindMatch:
				k := flowKey{rec.Peer, r.Addr, rec.Context, rec.Tag}
				matches[k] = append(matches[k], ref{i, j, rec.Start})
			}
		}
	}
	var flows []Flow
	for k, ss := range sends {
		ms := matches[k]
		byTime := func(a, b ref) int { return cmp.Or(cmp.Compare(a.t, b.t), cmp.Compare(a.rec, b.rec)) }
		slices.SortStableFunc(ss, byTime)
		slices.SortStableFunc(ms, byTime)
		for n := range min(len(ss), len(ms)) {
			flows = append(flows, Flow{ss[n].rank, ss[n].rec, ms[n].rank, ms[n].rec})
		}
	}
	slices.SortFunc(flows, func(a, b Flow) int {
		return cmp.Or(cmp.Compare(d.Ranks[a.FromRank].Records[a.FromRec].Start, d.Ranks[b.FromRank].Records[b.FromRec].Start),
			cmp.Compare(a.FromRank, b.FromRank), cmp.Compare(a.FromRec, b.FromRec))
	})
	return flows
}

// origin returns the earliest time in d (the timeline's zero).
func (d *Data) origin() int64 {
	var t0 int64
	for i, r := range d.Ranks {
		if i == 0 || r.Start < t0 {
			t0 = r.Start
		}
	}
	return t0
}

// Chrome returns d as Chrome trace events: a process per OS process, a
// thread track per endpoint, a slice per span, an instant per protocol
// step, and a flow arrow per message from its send to its match.
func (d *Data) Chrome() []Event {
	t0 := d.origin()
	us := func(ns int64) float64 { return float64(ns-t0) / 1e3 }
	var ev []Event
	procs := map[int]bool{}
	for _, r := range d.Ranks {
		pid, tid := r.Proc, int(r.Addr)
		if !procs[pid] {
			procs[pid] = true
			ev = append(ev, Event{Name: "process_name", Ph: "M", Pid: pid, Args: map[string]any{"name": "process " + strconv.Itoa(pid)}},
				Event{Name: "process_sort_index", Ph: "M", Pid: pid, Args: map[string]any{"sort_index": pid}})
		}
		ev = append(ev, Event{Name: "thread_name", Ph: "M", Pid: pid, Tid: tid, Args: map[string]any{"name": "endpoint " + strconv.Itoa(tid)}},
			Event{Name: "thread_sort_index", Ph: "M", Pid: pid, Tid: tid, Args: map[string]any{"sort_index": tid}})
		for _, rec := range r.Records {
			e := Event{Name: rec.Kind.String(), Cat: "fibermpi", Ts: us(rec.Start), Pid: pid, Tid: tid, Args: recArgs(rec)}
			switch {
			case rec.Kind.span():
				if rec.Name != "" {
					e.Name = rec.Name
				}
				e.Ph, e.Dur = "X", max(float64(rec.End-rec.Start)/1e3, 0.001)
			case rec.Kind == KindMatch:
				// A short slice, so that the flow arrow has one to end on.
				e.Ph, e.Dur = "X", 0.001
			default:
				e.Ph, e.S = "i", "t"
			}
			ev = append(ev, e)
		}
	}
	for n, f := range d.Flows() {
		from, to := d.Ranks[f.FromRank], d.Ranks[f.ToRank]
		s, m := from.Records[f.FromRec], to.Records[f.ToRec]
		id := strconv.Itoa(n + 1)
		ev = append(ev,
			Event{Name: "message", Cat: "msg", Ph: "s", ID: id, Ts: us(s.Start), Pid: from.Proc, Tid: int(from.Addr)},
			Event{Name: "message", Cat: "msg", Ph: "f", BP: "e", ID: id, Ts: us(m.Start), Pid: to.Proc, Tid: int(to.Addr)})
	}
	return ev
}

func recArgs(rec Record) map[string]any {
	a := map[string]any{}
	if rec.Peer != NoPeer {
		a["peer"] = rec.Peer
	}
	if rec.Kind != KindColl && rec.Kind != KindWait {
		a["tag"] = rec.Tag
	}
	a["context"] = rec.Context
	if rec.Bytes != 0 {
		a["bytes"] = rec.Bytes
	}
	return a
}
