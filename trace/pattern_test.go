package trace_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/fibermpi/fibermpi/comm"
	"github.com/fibermpi/fibermpi/endpoint"
	"github.com/fibermpi/fibermpi/internal/jobtest"
	"github.com/fibermpi/fibermpi/trace"
)

// pattern is a known communication pattern: every rank runs body, and
// want(from, to) says how many messages and bytes world rank from sends to
// world rank to.
type pattern struct {
	name  string
	ranks int
	body  func(ep *endpoint.Endpoint) error
	want  func(from, to int) (msgs, bytes int64)
}

// exchange sends to each of to (sizes[i] bytes to to[i]) and receives from
// each of from (sizes given by size(from)), nonblocking sends first.
func exchange(ep *endpoint.Endpoint, to []int, sizes []int, from []int, size func(from int) int) error {
	w, me := ep.World(), ep.Rank()
	var reqs []*endpoint.Request
	for i, d := range to {
		r, err := ep.Isend(w, me, d, 7, bytes.Repeat([]byte{byte(me)}, sizes[i]))
		if err != nil {
			return err
		}
		reqs = append(reqs, r)
	}
	for _, s := range from {
		buf := make([]byte, size(s))
		st, err := ep.Recv(w, s, 7, buf)
		if err != nil {
			return err
		}
		if st.Count != len(buf) || (len(buf) > 0 && buf[0] != byte(s)) {
			return fmt.Errorf("from %d: %d bytes starting %v", s, st.Count, buf[:min(1, len(buf))])
		}
	}
	for _, r := range reqs {
		if err := ep.Wait(r); err != nil {
			return err
		}
	}
	return nil
}

func ring(n, rounds, size int) pattern {
	return pattern{
		name: fmt.Sprintf("ring/n=%d/%dB", n, size), ranks: n,
		body: func(ep *endpoint.Endpoint) error {
			me := ep.Rank()
			for range rounds {
				if err := exchange(ep, []int{(me + 1) % n}, []int{size}, []int{(me + n - 1) % n}, func(int) int { return size }); err != nil {
					return err
				}
			}
			return nil
		},
		want: func(from, to int) (int64, int64) {
			if to == (from+1)%n {
				return int64(rounds), int64(rounds * size)
			}
			return 0, 0
		},
	}
}

func allToAll(n int) pattern {
	size := func(from, to int) int { return 10*from + to + 1 }
	return pattern{
		name: fmt.Sprintf("alltoall/n=%d", n), ranks: n,
		body: func(ep *endpoint.Endpoint) error {
			me := ep.Rank()
			var to, sizes, from []int
			for j := range n {
				if j != me {
					to, sizes, from = append(to, j), append(sizes, size(me, j)), append(from, j)
				}
			}
			return exchange(ep, to, sizes, from, func(s int) int { return size(s, me) })
		},
		want: func(from, to int) (int64, int64) {
			if from == to {
				return 0, 0
			}
			return 1, int64(size(from, to))
		},
	}
}

// stencil is a rows×cols grid of ranks (row-major, not periodic) exchanging
// halos with their four neighbours: 16 bytes east–west, 24 north–south.
func stencil(rows, cols, iters int) pattern {
	neighbours := func(r int) (ns []int, sizes []int) {
		i, j := r/cols, r%cols
		if i > 0 {
			ns, sizes = append(ns, r-cols), append(sizes, 24)
		}
		if i < rows-1 {
			ns, sizes = append(ns, r+cols), append(sizes, 24)
		}
		if j > 0 {
			ns, sizes = append(ns, r-1), append(sizes, 16)
		}
		if j < cols-1 {
			ns, sizes = append(ns, r+1), append(sizes, 16)
		}
		return ns, sizes
	}
	return pattern{
		name: fmt.Sprintf("stencil/%dx%d", rows, cols), ranks: rows * cols,
		body: func(ep *endpoint.Endpoint) error {
			me := ep.Rank()
			ns, sizes := neighbours(me)
			for range iters {
				err := exchange(ep, ns, sizes, ns, func(s int) int {
					if s/cols == me/cols {
						return 16
					}
					return 24
				})
				if err != nil {
					return err
				}
			}
			return nil
		},
		want: func(from, to int) (int64, int64) {
			ns, sizes := neighbours(from)
			for k, x := range ns {
				if x == to {
					return int64(iters), int64(iters * sizes[k])
				}
			}
			return 0, 0
		},
	}
}

// runTraced runs p under setup s with tracing into dir and returns the
// (merged) recording and the world's rank → address map.
func runTraced(t *testing.T, s jobtest.Setup, p pattern, dir string) (*trace.Data, []int32) {
	t.Helper()
	path := filepath.Join(dir, "t.json")
	var mu sync.Mutex
	var addrs []int32
	opts := s.Options
	s.Options = func() []endpoint.Options {
		o := opts()
		for i := range o {
			o[i].Trace = path
		}
		return o
	}
	err := jobtest.RunSetup(s, p.ranks, endpoint.ThreadSingle, func(ep *endpoint.Endpoint) error {
		if ep.Rank() == 0 {
			mu.Lock()
			for _, a := range ep.World().Addrs {
				addrs = append(addrs, int32(a))
			}
			mu.Unlock()
		}
		return p.body(ep)
	})
	if err != nil {
		t.Fatal(err)
	}
	var parts []*trace.Data
	if s.Procs == 1 {
		d, err := trace.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, d)
	} else {
		for i := range s.Procs {
			d, err := trace.ReadFile(trace.PartPath(path, i))
			if err != nil {
				t.Fatal(err)
			}
			parts = append(parts, d)
		}
	}
	d, err := trace.Merge(parts...)
	if err != nil {
		t.Fatal(err)
	}
	if miss := d.Missing(); len(miss) > 0 {
		t.Fatalf("parts of processes %v missing", miss)
	}
	return d, addrs
}

// TestPatterns: a ring (eager and rendezvous sizes), an all-to-all and a
// 2-D stencil give exactly their matrices, every message gets one flow
// arrow from its send to its match, and the file is a valid Chrome trace,
// under every layout of the job (one process, the protocol between
// processes, 2 and 3 simulated processes).
func TestPatterns(t *testing.T) {
	patterns := []pattern{ring(4, 3, 100), ring(3, 2, 20_000), allToAll(4), stencil(2, 3, 2)}
	for _, p := range patterns {
		for _, s := range jobtest.Setups(p.ranks) {
			if s.Real {
				continue // real processes: cmd/fmpi-trace's test
			}
			t.Run(p.name+"/"+s.Name, func(t *testing.T) {
				d, addrs := runTraced(t, s, p, t.TempDir())
				checkMatrix(t, d, p, addrs)
				checkFlows(t, d)
				checkChrome(t, d)
			})
		}
	}
}

func checkMatrix(t *testing.T, d *trace.Data, p pattern, addrs []int32) {
	t.Helper()
	if len(addrs) != p.ranks {
		t.Fatalf("world of %d addresses, want %d", len(addrs), p.ranks)
	}
	m := d.Matrix()
	index := map[int32]int{}
	for i, a := range m.Addrs {
		index[a] = i
	}
	rankOf := map[int32]int{}
	for r, a := range addrs {
		if _, ok := index[a]; !ok {
			t.Fatalf("rank %d (endpoint %d) not in the matrix (endpoints %v)", r, a, m.Addrs)
		}
		rankOf[a] = r
	}
	var total int64
	for i, a := range m.Addrs {
		for j, b := range m.Addrs {
			ra, oka := rankOf[a]
			rb, okb := rankOf[b]
			var wm, wb int64
			if oka && okb {
				wm, wb = p.want(ra, rb)
			}
			if m.Msgs[i][j] != wm || m.Bytes[i][j] != wb {
				t.Errorf("endpoint %d → %d: %d msgs %d bytes, want %d msgs %d bytes", a, b, m.Msgs[i][j], m.Bytes[i][j], wm, wb)
			}
			total += wm
		}
	}
	if total == 0 {
		t.Fatal("pattern sends nothing")
	}
}

func checkFlows(t *testing.T, d *trace.Data) {
	t.Helper()
	var sends int
	for _, r := range d.Ranks {
		for _, rec := range r.Records {
			if rec.Kind == trace.KindSend {
				sends++
			}
		}
	}
	flows := d.Flows()
	if len(flows) != sends {
		t.Errorf("%d flows for %d sends", len(flows), sends)
	}
	for _, f := range flows {
		from, to := d.Ranks[f.FromRank], d.Ranks[f.ToRank]
		s, m := from.Records[f.FromRec], to.Records[f.ToRec]
		if s.Kind != trace.KindSend || m.Kind != trace.KindMatch || s.Peer != to.Addr || m.Peer != from.Addr || s.Bytes != m.Bytes || s.Tag != m.Tag {
			t.Errorf("flow from %+v (endpoint %d) to %+v (endpoint %d)", s, from.Addr, m, to.Addr)
		}
	}
}

// checkChrome writes d and checks the file against the Trace Event
// Format: an object with a traceEvents array of events with the fields
// their phase requires, a named track for every endpoint, and flow starts
// and ends in pairs on the right tracks.
func checkChrome(t *testing.T, d *trace.Data) {
	t.Helper()
	var buf bytes.Buffer
	if err := d.Write(&buf); err != nil {
		t.Fatal(err)
	}
	var f struct {
		TraceEvents []map[string]any `json:"traceEvents"`
	}
	if err := json.Unmarshal(buf.Bytes(), &f); err != nil {
		t.Fatal(err)
	}
	if len(f.TraceEvents) == 0 {
		t.Fatal("no events")
	}
	type track struct{ pid, tid float64 }
	named := map[track]bool{}
	flowStart := map[string]track{}
	flowEnd := map[string]track{}
	for i, e := range f.TraceEvents {
		bad := func(why string) { t.Errorf("event %d %v: %s", i, e, why) }
		ph, _ := e["ph"].(string)
		if _, ok := e["name"].(string); !ok {
			bad("no name")
		}
		pid, ok1 := e["pid"].(float64)
		tid, ok2 := e["tid"].(float64)
		if !ok1 || !ok2 {
			bad("no pid/tid")
		}
		if ts, ok := e["ts"].(float64); !ok || ts < 0 {
			bad("no or negative ts")
		}
		switch ph {
		case "M":
			args, _ := e["args"].(map[string]any)
			if e["name"] == "thread_name" {
				if _, ok := args["name"].(string); !ok {
					bad("thread_name without args.name")
				}
				named[track{pid, tid}] = true
			}
		case "X":
			if dur, ok := e["dur"].(float64); !ok || dur <= 0 {
				bad("complete event without a positive dur")
			}
		case "i":
			if e["s"] != "t" {
				bad("instant without thread scope")
			}
		case "s", "f":
			id, ok := e["id"].(string)
			if !ok {
				bad("flow without id")
			}
			if ph == "s" {
				flowStart[id] = track{pid, tid}
			} else {
				if e["bp"] != "e" {
					bad("flow end not bound to its enclosing slice")
				}
				flowEnd[id] = track{pid, tid}
			}
		default:
			bad("unexpected phase")
		}
	}
	for _, r := range d.Ranks {
		if !named[track{float64(r.Proc), float64(r.Addr)}] {
			t.Errorf("endpoint %d has no named track", r.Addr)
		}
	}
	if len(flowStart) != len(flowEnd) || len(flowStart) != len(d.Flows()) {
		t.Errorf("%d flow starts, %d ends, %d flows", len(flowStart), len(flowEnd), len(d.Flows()))
	}
	for id, s := range flowStart {
		if _, ok := flowEnd[id]; !ok {
			t.Errorf("flow %s from %v has no end", id, s)
		}
	}
}

// TestCollectiveSpans: a blocking collective is one span named after it on
// every rank, and its messages count in the matrix. (Its ranks share the
// process, so it is told to run by messages, not through memory.)
func TestCollectiveSpans(t *testing.T) {
	const n = 4
	s := jobtest.Setups(n)[0]
	p := pattern{name: "alltoall-coll", ranks: n, body: func(ep *endpoint.Endpoint) error {
		c, err := comm.World[int64](ep)
		if err != nil {
			return err
		}
		if err := c.SetCollPath(comm.CollMessages); err != nil {
			return err
		}
		send, recv := make([]int64, n), make([]int64, n)
		return c.Alltoall(send, recv)
	}}
	d, _ := runTraced(t, s, p, t.TempDir())
	var msgs int64
	for _, r := range d.Ranks {
		var colls int
		for _, rec := range r.Records {
			if rec.Kind == trace.KindColl && rec.Name == "Alltoall" && rec.End >= rec.Start {
				colls++
			}
		}
		if colls != 1 {
			t.Errorf("endpoint %d: %d Alltoall spans, want 1", r.Addr, colls)
		}
		for _, pr := range r.Pairs {
			msgs += pr.Msgs
		}
	}
	if msgs < n*(n-1) {
		t.Errorf("%d messages in the matrix, want at least %d", msgs, n*(n-1))
	}
	sum := d.Summary()
	for _, s := range sum {
		if s.Coll <= 0 || s.CollCalls != 1 || s.Compute < 0 || s.Compute+s.P2P+s.Coll > s.Total {
			t.Errorf("summary %+v", s)
		}
	}
}
