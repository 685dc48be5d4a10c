package main

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/fibermpi/fibermpi/endpoint"
	"github.com/fibermpi/fibermpi/fiber"
	"github.com/fibermpi/fibermpi/internal/fmpitest"
	"github.com/fibermpi/fibermpi/trace"
)

const (
	ringRounds = 3
	ringSize   = 20_000 // rendezvous: RTS, RTR, Put and Done on the wire
)

// ringJob is this process's part of a ring over the Init world (one
// endpoint per process, on a plain goroutine): every process sends
// ringRounds messages of ringSize bytes to the next.
func ringJob() (err error) {
	p, err := endpoint.Init(endpoint.ThreadSingle, endpoint.Options{Workers: 1})
	if err != nil {
		return err
	}
	defer func() {
		if ferr := p.Finalize(); err == nil {
			err = ferr
		}
	}()
	ep, err := p.World().Register(fiber.NewGoroutineWaiter())
	if err != nil {
		return err
	}
	defer ep.Unregister()
	w, me, n := ep.World(), ep.Rank(), ep.Size()
	msg, buf := bytes.Repeat([]byte{byte(me)}, ringSize), make([]byte, ringSize)
	for range ringRounds {
		r, err := ep.Isend(w, me, (me+1)%n, 1, msg)
		if err != nil {
			return err
		}
		if _, err := ep.Recv(w, (me+n-1)%n, 1, buf); err != nil {
			return err
		}
		if buf[0] != byte((me+n-1)%n) {
			return fmt.Errorf("rank %d: message from %d", me, buf[0])
		}
		if err := ep.Wait(r); err != nil {
			return err
		}
	}
	return nil
}

// TestJobOfProcesses: three real processes under fmpirun trace with
// FIBERMPI_TRACE, each writes its part, and fmpi-trace merges them into one
// trace whose matrix is the ring's, with an arrow per message, and draws
// it.
func TestJobOfProcesses(t *testing.T) {
	if fmpitest.Child() {
		if err := ringJob(); err != nil {
			t.Fatal(err)
		}
		return
	}
	const procs = 3
	dir := t.TempDir()
	path := filepath.Join(dir, "job.json")
	out, err := fmpitest.RunTest(t, procs, fmpitest.Options{Env: []string{endpoint.EnvTrace + "=" + path}})
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var stdout, stderr bytes.Buffer
	if st := cli([]string{"-width", "800", "-height", "400", path}, &stdout, &stderr); st != 0 {
		t.Fatalf("exit %d\n%s\n%s", st, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "merged 3 parts into "+path) {
		t.Errorf("output:\n%s", stdout.String())
	}
	d, err := trace.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Parts) != procs || len(d.Missing()) != 0 {
		t.Fatalf("merged parts %v of %d", d.Parts, d.Procs)
	}
	m := d.Matrix()
	if len(m.Addrs) != procs {
		t.Fatalf("matrix over endpoints %v, want %d", m.Addrs, procs)
	}
	for i := range procs {
		for j := range procs {
			var wm, wb int64
			if j == (i+1)%procs {
				wm, wb = ringRounds, ringRounds*ringSize
			}
			if m.Msgs[i][j] != wm || m.Bytes[i][j] != wb {
				t.Errorf("%d → %d: %d msgs %d bytes, want %d, %d", m.Addrs[i], m.Addrs[j], m.Msgs[i][j], m.Bytes[i][j], wm, wb)
			}
		}
	}
	if n := len(d.Flows()); n != procs*ringRounds {
		t.Errorf("%d message arrows, want %d", n, procs*ringRounds)
	}
	// The rendezvous steps of every message are on the timelines.
	kinds := map[trace.Kind]int{}
	for _, r := range d.Ranks {
		for _, rec := range r.Records {
			kinds[rec.Kind]++
		}
	}
	// (A receive posted before its message arrives offers its buffer, and
	// that message needs no RTS and no RTR: only some have them.)
	for _, k := range []trace.Kind{trace.KindSend, trace.KindPut, trace.KindDone, trace.KindMatch} {
		if kinds[k] != procs*ringRounds {
			t.Errorf("%d %v records, want %d (all: %v)", kinds[k], k, procs*ringRounds, kinds)
		}
	}
	if kinds[trace.KindRTS] != kinds[trace.KindRTR] {
		t.Errorf("%d RTS, %d RTR", kinds[trace.KindRTS], kinds[trace.KindRTR])
	}
	checkPictures(t, strings.TrimSuffix(path, ".json"), 800, 400)
}

// checkPictures: the matrix's and the timeline's PNG decode at the size
// asked for and their SVG are XML documents with an svg root of the same
// proportions.
func checkPictures(t *testing.T, prefix string, width, height int) {
	t.Helper()
	for _, kind := range []string{".matrix", ".timeline"} {
		checkPicture(t, prefix+kind, width, height)
	}
}

func checkPicture(t *testing.T, prefix string, width, height int) {
	t.Helper()
	b, err := os.ReadFile(prefix + ".png")
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if s := img.Bounds().Size(); s.X != width || s.Y != height {
		t.Errorf("PNG is %v, want %dx%d", s, width, height)
	}
	f, err := os.Open(prefix + ".svg")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var root struct {
		XMLName xml.Name
		Width   string `xml:"width,attr"`
		Height  string `xml:"height,attr"`
	}
	if err := xml.NewDecoder(f).Decode(&root); err != nil {
		t.Fatal(err)
	}
	w, _ := strconv.ParseFloat(strings.TrimRight(root.Width, "ptxin"), 64)
	h, _ := strconv.ParseFloat(strings.TrimRight(root.Height, "ptxin"), 64)
	if root.XMLName.Local != "svg" || h == 0 || fmt.Sprintf("%.3f", w/h) != fmt.Sprintf("%.3f", float64(width)/float64(height)) {
		t.Errorf("SVG root %v %s×%s, want svg of %d:%d", root.XMLName, root.Width, root.Height, width, height)
	}
}

// TestSummaryAndPictures: a hand-made recording with a known matrix and
// known call times gives that matrix in the text, the summary's split of
// time, and pictures of the default size.
func TestSummaryAndPictures(t *testing.T) {
	const ms = int64(1e6)
	d := &trace.Data{Version: trace.FormatVersion, Procs: 1, Parts: []int{0}, Ranks: []trace.RankData{
		{Addr: 0, Start: 0, End: 100 * ms, Pairs: []trace.Pair{{To: 1, Msgs: 5, Bytes: 5000}},
			Records: []trace.Record{
				{Kind: trace.KindColl, Start: 10 * ms, End: 30 * ms, Peer: trace.NoPeer, Name: "Allreduce"},
				{Kind: trace.KindSend, Start: 20 * ms, End: 25 * ms, Peer: 1}, // inside the collective
				{Kind: trace.KindRecv, Start: 50 * ms, End: 60 * ms, Peer: 1},
			}},
		{Addr: 1, Start: 0, End: 100 * ms, Pairs: []trace.Pair{{To: 0, Msgs: 1, Bytes: 7}}},
	}}
	dir := t.TempDir()
	path := filepath.Join(dir, "x.json")
	if err := d.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if st := cli([]string{path}, &stdout, &stderr); st != 0 {
		t.Fatalf("exit %d\n%s", st, stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{"5.0kB/5", "7B/1", "100ms", "70ms", "10ms", "20ms"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	sum := d.Summary()
	if s := sum[0]; s.Coll != 20e6 || s.P2P != 10e6 || s.Compute != 70e6 || s.CollCalls != 1 || s.Calls != 2 {
		t.Errorf("summary %+v", s)
	}
	checkPictures(t, filepath.Join(dir, "x"), 1400, 600)
}

// TestBadInput: usage errors exit 2, unreadable traces 1, with a message.
func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.json")
	if err := os.WriteFile(junk, []byte(`{"traceEvents":[]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{nil, 2, "usage"},
		{[]string{"-width", "10", junk}, 2, "too small"},
		{[]string{filepath.Join(dir, "none.json")}, 1, "no such trace"},
		{[]string{junk}, 1, "not written by fibermpi"},
	} {
		var stdout, stderr bytes.Buffer
		if st := cli(c.args, &stdout, &stderr); st != c.code || !strings.Contains(stderr.String(), c.msg) {
			t.Errorf("%q: exit %d, stderr %q; want %d and %q", c.args, st, stderr.String(), c.code, c.msg)
		}
	}
}

// TestWaitForGraph: a trace whose job ended in a deadlock report, in two
// parts, gets the merged wait-for graph drawn and the report printed.
func TestWaitForGraph(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "dl.json")
	parts := []*trace.Data{
		{Version: trace.FormatVersion, Procs: 2, Parts: []int{0}, Ranks: []trace.RankData{{Addr: 0, End: 10}},
			Deadlock: &trace.WaitFor{At: 5, Edges: []trace.WaitEdge{{From: 0, To: 1, Call: "Recv"}}, Idle: []int{1, 3}, Report: "part 0"}},
		{Version: trace.FormatVersion, Procs: 2, Parts: []int{1}, Ranks: []trace.RankData{{Addr: 1, End: 10}},
			Deadlock: &trace.WaitFor{At: 6, Edges: []trace.WaitEdge{{From: 1, To: 2, Call: "Send"}, {From: 2, To: 0, Call: "Barrier"}},
				Cycle: []int{0, 1, 2, 0}, Report: "part 1"}},
	}
	for i, p := range parts {
		if err := p.WriteFile(trace.PartPath(path, i)); err != nil {
			t.Fatal(err)
		}
	}
	var stdout, stderr bytes.Buffer
	if st := cli([]string{"-height", "500", path}, &stdout, &stderr); st != 0 {
		t.Fatalf("exit %d\n%s", st, stderr.String())
	}
	if out := stdout.String(); !strings.Contains(out, "wait-for cycle [0 1 2 0]") || !strings.Contains(out, "part 0\npart 1") {
		t.Errorf("output:\n%s", out)
	}
	d, err := trace.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if w := d.Deadlock; w == nil || len(w.Edges) != 3 || !slices.Equal(w.Idle, []int{3}) || !w.InCycle(2, 0) || w.InCycle(0, 2) {
		t.Errorf("merged graph %+v", d.Deadlock)
	}
	b, err := os.ReadFile(filepath.Join(dir, "dl.waitfor.png"))
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if s := img.Bounds().Size(); s.X != 750 || s.Y != 500 {
		t.Errorf("wait-for PNG %v, want 750x500", s)
	}
	if _, err := os.Stat(filepath.Join(dir, "dl.waitfor.svg")); err != nil {
		t.Error(err)
	}
}
