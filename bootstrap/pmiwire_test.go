package bootstrap

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPMI1Lines(t *testing.T) {
	got := string(formatPMI1("put", "kvsname", "kvs_1", "key", "0/k", "value", "1:ab"))
	if want := "cmd=put kvsname=kvs_1 key=0/k value=1:ab\n"; got != want {
		t.Errorf("formatPMI1 = %q, want %q", got, want)
	}
	// What Hydra answered in this repository's probes.
	r := bufio.NewReader(strings.NewReader("cmd=get_result rc=-1 msg=key_nokey_not_found value=unknown\n" +
		"cmd=get_result rc=0 msg=success value=(vector,(0,1,1))\ncmd=maxes kvsname_max=256 keylen_max=64 vallen_max=1024\ncmd=trunc"))
	for _, want := range []pmiMsg{
		{"cmd": "get_result", "rc": "-1", "msg": "key_nokey_not_found", "value": "unknown"},
		{"cmd": "get_result", "rc": "0", "msg": "success", "value": "(vector,(0,1,1))"},
		{"cmd": "maxes", "kvsname_max": "256", "keylen_max": "64", "vallen_max": "1024"},
	} {
		m, err := readPMI1(r)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(want, m); d != "" {
			t.Errorf("readPMI1 (-want +got):\n%s", d)
		}
	}
	if _, err := readPMI1(r); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("a line cut by the end of the connection: %v, want ErrUnexpectedEOF", err)
	}
	for _, bad := range []string{"", "rc=0", "cmd=x novalue", "cmd=x =v"} {
		if _, err := parsePMI1(bad); !errors.Is(err, errPMIProtocol) {
			t.Errorf("parsePMI1(%q): %v, want a protocol error", bad, err)
		}
	}
	long := bufio.NewReaderSize(strings.NewReader("cmd=x v="+strings.Repeat("a", pmiMaxLine+10)+"\n"), 16)
	if _, err := readPMI1(long); !errors.Is(err, errPMIProtocol) {
		t.Errorf("a line beyond %d bytes: %v, want a protocol error", pmiMaxLine, err)
	}
}

func TestPMI2Frames(t *testing.T) {
	b := formatPMI2("kvs-put", "key", "0/k", "value", "a;b")
	if want := "31    cmd=kvs-put;key=0/k;value=a;;b;"; string(b) != want {
		t.Errorf("formatPMI2 = %q, want %q", b, want)
	}
	r := bufio.NewReader(bytes.NewReader(append(b, "18    cmd=x;last=novsemi"...)))
	m, err := readPMI2(r)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(pmiMsg{"cmd": "kvs-put", "key": "0/k", "value": "a;b"}, m); d != "" {
		t.Errorf("round trip (-want +got):\n%s", d)
	}
	if m, err = readPMI2(r); err != nil || m["last"] != "novsemi" {
		t.Errorf("a frame without its last ';': %v, %v", m, err)
	}
	for _, bad := range []string{"abcdef", "-1    ", "99    cmd=x;", "5     k=v;;"} {
		if _, err := readPMI2(bufio.NewReader(strings.NewReader(bad))); err == nil {
			t.Errorf("readPMI2(%q) accepted it", bad)
		}
	}
}

func FuzzPMI2(f *testing.F) {
	f.Add("cmd=fullinit-response;pmi-version=2;rank=0;size=2;rc=0;")
	f.Add("cmd=x;v=a;;b;;;")
	f.Fuzz(func(t *testing.T, body string) {
		m, err := parsePMI2(body)
		if err != nil {
			return
		}
		// Whatever parses re-encodes to what parses to the same.
		var kv []string
		for k, v := range m {
			if k != "cmd" {
				kv = append(kv, k, v)
			}
		}
		if strings.ContainsAny(m.cmd(), ";") {
			return
		}
		again, err := readPMI2(bufio.NewReader(bytes.NewReader(formatPMI2(m.cmd(), kv...))))
		if err != nil {
			t.Fatalf("re-encoded %v: %v", m, err)
		}
		if d := cmp.Diff(m, again); d != "" {
			t.Fatalf("round trip of %q (-first +again):\n%s", body, d)
		}
	})
}

func TestPMIKeysAndChunks(t *testing.T) {
	c := &pmiClient{keyMax: 64, valMax: 1024}
	for _, tc := range []struct {
		rank       int
		key        string
		chunk, ver int
		want       string
	}{
		{0, "fibermpi/host", 0, 0, "0/fibermpi/host"},
		{3, "fibermpi/shm", 2, 0, "3/fibermpi/shm~2"},
		{3, "fibermpi/shm", 0, 4, "3/fibermpi/shm^4"},
	} {
		if got := c.kvsKey(tc.rank, tc.key, tc.chunk, tc.ver); got != tc.want {
			t.Errorf("kvsKey(%d, %q, %d, %d) = %q, want %q", tc.rank, tc.key, tc.chunk, tc.ver, got, tc.want)
		}
	}
	for _, key := range []string{"a key with spaces", "k=v", strings.Repeat("long", 20)} {
		k := c.kvsKey(1, key, 12, 3)
		if len(k) >= c.keyMax || strings.ContainsAny(k, " =;") || !strings.HasPrefix(k, "1#") {
			t.Errorf("kvsKey(1, %q) = %q: not a hashed key PMI can carry", key, k)
		}
	}
	if a, b := c.kvsKey(1, "k=v", 0, 0), c.kvsKey(2, "k=v", 0, 0); a == b {
		t.Errorf("two ranks share the key %q", a)
	}
	for _, n := range []int{0, 1, 503, 504, 505, 3000, MaxValue} {
		v := bytes.Repeat([]byte{0xa5}, n)
		parts := c.encode(v)
		for _, p := range parts {
			if len(p) >= c.valMax {
				t.Fatalf("encode(%d bytes): a chunk of %d bytes", n, len(p))
			}
		}
		if want := max(1, (2*n+c.chunkHex()-1)/c.chunkHex()); len(parts) != want {
			t.Errorf("encode(%d bytes): %d chunks, want %d", n, len(parts), want)
		}
	}
}

func TestSafeJobID(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"kvs_11227_0_472995708_vm", "pmi-kvs_11227_0_472995708_vm"},
		{"26.0", "pmi-26_0-"},
		{strings.Repeat("x", 60), "pmi-" + strings.Repeat("x", 28) + "-"},
	} {
		got := safeJobID(tc.in)
		if !strings.HasPrefix(got, tc.want) || strings.ContainsAny(got, "/. ") || len(got) > 48 {
			t.Errorf("safeJobID(%q) = %q, want %q…, safe in a file name", tc.in, got, tc.want)
		}
	}
	if safeJobID("26.0") == safeJobID("26_0") {
		t.Errorf("safeJobID maps two job ids to one")
	}
}

func TestFirstHost(t *testing.T) {
	for in, want := range map[string]string{
		"vm": "vm", "node[03-05,9]": "node03", "a,b": "a", "rack[2,4]-n[1-3]": "rack2-n[1-3]", "n[7]x,y": "n7x",
	} {
		if got, err := firstHost(in); err != nil || got != want {
			t.Errorf("firstHost(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "node[1-3"} {
		if got, err := firstHost(bad); err == nil {
			t.Errorf("firstHost(%q) = %q, want an error", bad, got)
		}
	}
}
