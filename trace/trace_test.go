package trace_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/fibermpi/fibermpi/trace"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestFullBuffer: past its record limit a rank drops records and counts
// them, and its pair counts stay exact.
func TestFullBuffer(t *testing.T) {
	rc := trace.NewRecorder(0, 1, 10)
	r := rc.Rank(3)
	for i := range 25 {
		r.Sent(trace.Now(), 4, 0, 1, i)
	}
	r.Instant(trace.KindEager, 4, 0, 1, 8)
	d := rc.Data()
	if len(d.Ranks) != 1 {
		t.Fatalf("%d ranks", len(d.Ranks))
	}
	rd := d.Ranks[0]
	if len(rd.Records) != 10 || rd.Dropped != 16 {
		t.Errorf("%d records, %d dropped; want 10, 16", len(rd.Records), rd.Dropped)
	}
	if len(rd.Pairs) != 1 || rd.Pairs[0] != (trace.Pair{To: 4, Msgs: 25, Bytes: 300}) {
		t.Errorf("pairs %+v", rd.Pairs)
	}
	var out bytes.Buffer
	if err := trace.WriteSummary(&out, d.Summary()); err != nil || !strings.Contains(out.String(), "16 records dropped") {
		t.Errorf("summary %q, %v", out.String(), err)
	}
	if rc.Rank(3) != r || (*trace.Recorder)(nil).Rank(1) != nil {
		t.Error("Rank does not return the same rank, or a nil recorder's is not nil")
	}
}

// TestRoundTrip: a recording written and read back is the same, kinds
// by name.
func TestRoundTrip(t *testing.T) {
	rc := trace.NewRecorder(1, 2, 0)
	r := rc.Rank(5)
	sp := r.Begin("fibermpi.Recv")
	r.Instant(trace.KindRTR, 2, 7, 9, 100)
	sp.End(trace.KindRecv, 2, 7, 9, 100, "")
	rc.Stop()
	d := rc.Data()
	var buf bytes.Buffer
	if err := d.Write(&buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"k":"RTR"`) {
		t.Errorf("kinds not by name: %s", buf.String())
	}
	back, err := trace.Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	got, want := back.Ranks[0].Records, d.Ranks[0].Records
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] || back.Procs != 2 || back.Parts[0] != 1 {
		t.Errorf("read back %+v, want %+v", back, d)
	}
}

// TestBadFiles: what is not a fibermpi trace, or parts that do not fit
// together, get ErrFormat.
func TestBadFiles(t *testing.T) {
	for _, in := range []string{`not json`, `{"traceEvents":[]}`, `{"fibermpi":{"version":99}}`, `{"fibermpi":{"version":1,"ranks":[{"records":[{"k":"nonsense"}]}]}}`} {
		if _, err := trace.Read(strings.NewReader(in)); !errors.Is(err, trace.ErrFormat) {
			t.Errorf("%s: %v, want ErrFormat", in, err)
		}
	}
	a := &trace.Data{Version: 1, Procs: 2, Parts: []int{0}, Ranks: []trace.RankData{{Addr: 0}}}
	b := &trace.Data{Version: 1, Procs: 3, Parts: []int{1}}
	c := &trace.Data{Version: 1, Procs: 2, Parts: []int{1}, Ranks: []trace.RankData{{Addr: 0}}}
	for _, parts := range [][]*trace.Data{{}, {a, b}, {a, a}, {a, c}} {
		if _, err := trace.Merge(parts...); !errors.Is(err, trace.ErrFormat) {
			t.Errorf("merge of %d parts: %v, want ErrFormat", len(parts), err)
		}
	}
	m, err := trace.Merge(a)
	if err != nil || len(m.Missing()) != 1 || m.Missing()[0] != 1 {
		t.Errorf("merge of one part of two: %v, missing %v", err, m.Missing())
	}
}
