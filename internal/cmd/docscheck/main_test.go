package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// page builds a small page shaped like pkgsite's unit page: the license in
// the header, the "Redistributable license" detail with its icon, an
// overview and an examples list. Each part can be changed to break it.
type page struct {
	license    string // inside the header's license span
	redistAlt  string // alt of the icon before "Redistributable license"
	overview   bool
	doc        string
	examples   []string
	restricted bool
}

func (p page) render() []byte {
	var b strings.Builder
	b.WriteString(`<html><body><header>`)
	b.WriteString(`<span class="go-Main-headerDetailItem" data-test-id="UnitHeader-licenses">` + "\n  License: " + p.license + "\n</span>")
	b.WriteString(`</header><ul class="UnitMeta-details"><li><details><summary class="go-textSubtle">` +
		`<img class="go-Icon" src="check.svg" alt="checked">Valid go.mod file</summary></details></li>` +
		`<li><details><summary class="go-textSubtle"><img class="go-Icon" src="x.svg" alt="` + p.redistAlt + `">` +
		"\n  Redistributable license\n" + `<img class="go-Icon" src="help.svg" alt=""></summary></details></li></ul>`)
	if p.restricted {
		b.WriteString(`<p>Documentation not displayed due to license restrictions.</p>`)
	}
	if p.overview {
		b.WriteString(`<h3 id="pkg-overview">Overview</h3><p>` + p.doc + `</p>`)
	}
	if len(p.examples) > 0 {
		b.WriteString(`<section class="Documentation-examples"><ul class="Documentation-examplesList">`)
		for _, e := range p.examples {
			b.WriteString(`<li><a href="#example-` + e + `" class="js-exampleHref">` + e + `</a></li>`)
		}
		b.WriteString(`</ul></section>`)
	}
	b.WriteString(`<a href="#example-Outside">not in the list</a></body></html>`)
	return []byte(b.String())
}

func good() page {
	return page{
		license:   `<a href="?tab=licenses" data-test-id="UnitHeader-license">BSD-3-Clause</a>`,
		redistAlt: "checked",
		overview:  true,
		doc:       `Package comm is fibermpi&#39;s typed face: <a href="#Comm">Comm</a>[T], a communicator.`,
		examples:  []string{"Comm.Send", "package-PingPong"},
	}
}

var want = pageWant{
	License:      "BSD-3-Clause",
	Synopsis:     "Package comm is fibermpi's typed face: Comm[T], a communicator.",
	Examples:     2,
	NeedExamples: true,
}

func TestCheckPageGood(t *testing.T) {
	if problems := checkPage(good().render(), want); len(problems) != 0 {
		t.Errorf("a good page has problems: %q", problems)
	}
	noExamples := good()
	noExamples.examples = nil
	w := want
	w.Examples, w.NeedExamples = 0, false
	if problems := checkPage(noExamples.render(), w); len(problems) != 0 {
		t.Errorf("a page of a package without examples has problems: %q", problems)
	}
}

func TestCheckPageBad(t *testing.T) {
	for _, c := range []struct {
		name   string
		change func(*page, *pageWant)
		want   []string
	}{
		{"no license detected", func(p *page, _ *pageWant) {
			p.license = `<span>None detected</span> <a href="/license-policy"><em>not legal advice</em></a>`
			p.redistAlt = "unchecked"
		}, []string{
			`the page says "None detected"`,
			`the header says "License: None detected", not the license BSD-3-Clause`,
			`"Redistributable license" is marked "unchecked", not checked`,
		}},
		{"another license", func(p *page, _ *pageWant) { p.license = `<a>MIT</a>` },
			[]string{`the header says "License: MIT", not the license BSD-3-Clause`}},
		{"restricted", func(p *page, _ *pageWant) { p.restricted = true },
			[]string{`the page says "Documentation not displayed"`}},
		{"no overview", func(p *page, _ *pageWant) { p.overview = false }, []string{"no Overview section"}},
		{"other overview", func(p *page, _ *pageWant) { p.doc = "Package comm is something else." },
			[]string{`the overview lacks the package doc's first sentence "Package comm is fibermpi's typed face: Comm[T], a communicator."`}},
		{"no doc comment", func(_ *page, w *pageWant) { w.Synopsis = "" }, []string{"the package has no doc comment"}},
		{"no examples", func(p *page, _ *pageWant) { p.examples = nil }, []string{"no Examples section"}},
		{"an example missing", func(p *page, _ *pageWant) { p.examples = p.examples[:1] },
			[]string{"1 examples listed; the package has 2"}},
		{"examples not needed but missing", func(p *page, w *pageWant) { p.examples, w.NeedExamples = nil, false },
			[]string{"0 examples listed; the package has 2"}},
	} {
		p, w := good(), want
		c.change(&p, &w)
		if diff := cmp.Diff(c.want, checkPage(p.render(), w)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, diff)
		}
	}
}

func TestCheckRedistributableMissing(t *testing.T) {
	if got := checkRedistributable("<html>nothing</html>"); len(got) != 1 || !strings.Contains(got[0], "no \"Redistributable license\"") {
		t.Errorf("checkRedistributable of a page without the detail = %q", got)
	}
}

func TestCountExamples(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"a.go": "// Package a is a test package.\npackage a\n\n// T is a type.\ntype T int\n\n// M is a method.\nfunc (T) M() {}\n\n// F is a func.\nfunc F() {}\n",
		"a_test.go": "package a\n\nfunc ExampleT() {}\n\nfunc ExampleT_M() {}\n\nfunc ExampleF_second() {}\n\n" +
			"func Example_tour() {}\n\nfunc ExampleNothing() {}\n",
		"x_test.go": "package a_test\n\nfunc ExampleF() {}\n",
	}
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	n, err := countExamples(pkg{ImportPath: "example.com/a", Dir: dir,
		GoFiles: []string{"a.go"}, TestGoFiles: []string{"a_test.go"}, XTestGoFiles: []string{"x_test.go"}})
	if err != nil {
		t.Fatal(err)
	}
	// ExampleNothing names no identifier, so no page shows it.
	if n != 5 {
		t.Errorf("countExamples = %d; want 5", n)
	}
}

func TestScanTrace(t *testing.T) {
	log := strings.Join([]string{
		// loopback and local sockets: ignored
		`100  connect(5<TCP:[1]>, {sa_family=AF_INET, sin_port=htons(6062), sin_addr=inet_addr("127.0.0.1")}, 16) = -1 EINPROGRESS (Operation now in progress)`,
		`100  connect(6<UNIX:[2]>, {sa_family=AF_UNIX, sun_path="/run/dbus/socket"}, 110) = -1 ENOENT (No such file or directory)`,
		`100  connect(7<TCPv6:[3]>, {sa_family=AF_INET6, sin6_port=htons(9), sin6_flowinfo=htonl(0), inet_pton(AF_INET6, "::1", &sin6_addr), sin6_scope_id=0}, 28) = -1 ECONNREFUSED (Connection refused)`,
		`100  sendmsg(8<UNIX-STREAM:[4]>, {msg_name=NULL, msg_namelen=0, msg_iov=[{iov_base="x", iov_len=1}], msg_iovlen=1, msg_controllen=0, msg_flags=0}, MSG_NOSIGNAL) = 1`,
		// a refused datagram connect to the probe destination, finished later
		`101  connect(18<UDPv6:[5]>, {sa_family=AF_INET6, sin6_port=htons(443), sin6_flowinfo=htonl(0), inet_pton(AF_INET6, "2001:4860:4860::8888", &sin6_addr), sin6_scope_id=0}, 28 <unfinished ...>`,
		`101  <... connect resumed>) = -1 ENETUNREACH (Network is unreachable)`,
		// a refused datagram connect elsewhere: a name lookup, outbound
		`101  connect(19<UDP:[5]>, {sa_family=AF_INET, sin_port=htons(53), sin_addr=inet_addr("10.255.255.53")}, 16 <unfinished ...>`,
		`102  connect(9<TCP:[6]>, {sa_family=AF_INET, sin_port=htons(6062), sin_addr=inet_addr("127.0.0.1")}, 16 <unfinished ...>`,
		`101  <... connect resumed>) = -1 ENETUNREACH (Network is unreachable)`,
		`102  <... connect resumed>) = 0`,
		// outbound: a TCP connect (refused or not), a datagram connect that succeeded, a send with an address
		`103  connect(10<TCP:[7]>, {sa_family=AF_INET, sin_port=htons(443), sin_addr=inet_addr("192.0.2.7")}, 16) = -1 ENETUNREACH (Network is unreachable)`,
		`103  connect(11<UDP:[8]>, {sa_family=AF_INET, sin_port=htons(53), sin_addr=inet_addr("10.255.255.53")}, 16) = 0`,
		`103  sendto(12<UDP:[9]>, "q", 1, 0, {sa_family=AF_INET, sin_port=htons(53), sin_addr=inet_addr("198.51.100.1")}, 16) = -1 ENETUNREACH (Network is unreachable)`,
		// unfinished and never resumed: taken as succeeded
		`104  connect(13<UDP:[10]>, {sa_family=AF_INET, sin_port=htons(123), sin_addr=inet_addr("203.0.113.9")}, 16 <unfinished ...>`,
		`105 +++ exited with 0 +++`,
	}, "\n")
	r := scanTrace([]byte(log), []string{"[2001:4860:4860::8888]:443"})
	wantOut := []string{
		"datagram connect to 10.255.255.53:53 (refused)",
		"connect to 192.0.2.7:443",
		"datagram connect to 10.255.255.53:53 succeeded",
		"sendto to 198.51.100.1:53",
		"datagram connect to 203.0.113.9:123 succeeded",
	}
	if diff := cmp.Diff(wantOut, r.Outbound); diff != "" {
		t.Errorf("outbound (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"[2001:4860:4860::8888]:443"}, r.Probes); diff != "" {
		t.Errorf("probes (-want +got):\n%s", diff)
	}
}

func TestCLI(t *testing.T) {
	pages := t.TempDir()
	path := filepath.Join(pages, "github.com", "fibermpi", "fibermpi", "internal", "testenv.html")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	g := good()
	g.doc = "Package testenv tells tests about the build they run in, and measures what benchmarks and the example programs report beside wall-clock time (ProcessCPU)."
	g.examples = nil
	if err := os.WriteFile(path, g.render(), 0o644); err != nil {
		t.Fatal(err)
	}
	cmdPage := filepath.Join(pages, "github.com", "fibermpi", "fibermpi", "internal", "cmd", "docscheck.html")
	if err := os.MkdirAll(filepath.Dir(cmdPage), 0o755); err != nil {
		t.Fatal(err)
	}
	g.doc = "Command docscheck checks the package pages of this module as pkgsite rendered them (scripts/docs-check.sh saves each page's DOM from headless Chromium), and the system calls the renderers made while doing it."
	if err := os.WriteFile(cmdPage, g.render(), 0o644); err != nil {
		t.Fatal(err)
	}
	clean := filepath.Join(t.TempDir(), "clean.strace")
	if err := os.WriteFile(clean, []byte(`1  connect(3<UDPv6:[1]>, {sa_family=AF_INET6, sin6_port=htons(443), inet_pton(AF_INET6, "2001:db8::1", &sin6_addr)}, 28) = -1 ENETUNREACH (Network is unreachable)`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dirty := filepath.Join(t.TempDir(), "dirty.strace")
	if err := os.WriteFile(dirty, []byte(`1  connect(3<TCP:[1]>, {sa_family=AF_INET, sin_port=htons(80), sin_addr=inet_addr("192.0.2.1")}, 16) = -1 ENETUNREACH (Network is unreachable)`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		code int
		out  []string
	}{
		{[]string{"-pages", pages, "-trace", clean, "-probe", "[2001:db8::1]:443", "../../testenv"}, 0, []string{
			"ok   github.com/fibermpi/fibermpi/internal/testenv: license BSD-3-Clause (redistributable), overview, 0 examples",
			"ok   1 traced runs: 0 outbound connection attempts; 1 route probes (datagram connects, no packet sent) refused by the namespace ([2001:db8::1]:443)",
		}},
		{[]string{"-pages", pages, "-trace", clean, "../../testenv"}, 1, []string{
			"FAIL " + clean + ": outbound: datagram connect to [2001:db8::1]:443 (refused)",
		}},
		{[]string{"-pages", pages, "-trace", clean + "," + dirty, "-probe", "[2001:db8::1]:443", "../../testenv"}, 1, []string{
			"FAIL " + dirty + ": outbound: connect to 192.0.2.1:80",
			"FAIL 2 traced runs: 1 outbound connection attempts",
		}},
		{[]string{"-pages", pages, "-license", "MIT", "../../testenv"}, 1, []string{`the header says "License: BSD-3-Clause", not the license MIT`}},
		{[]string{"-pages", pages, "-examples", "internal/testenv", "../../testenv"}, 1, []string{"FAIL github.com/fibermpi/fibermpi/internal/testenv: no Examples section"}},
		{[]string{"-pages", pages, "-examples", "comm", "../../testenv"}, 1, []string{"FAIL comm: named by -examples but not among the packages checked"}},
		{[]string{"-pages", pages, "."}, 0, []string{"ok   github.com/fibermpi/fibermpi/internal/cmd/docscheck: license BSD-3-Clause (redistributable), overview, a command (no examples shown)"}},
		{[]string{"-pages", pages, "../vulndb"}, 1, []string{"FAIL github.com/fibermpi/fibermpi/internal/cmd/vulndb: no rendered page"}},
		{[]string{"-pages", pages, "-examples", "internal/cmd/docscheck", "."}, 1, []string{"it is a command, whose page shows no examples"}},
		{[]string{"../../testenv"}, 2, nil},
	} {
		var out, errOut bytes.Buffer
		code := cli(c.args, &out, &errOut)
		if code != c.code {
			t.Errorf("%q: exit %d; want %d\n%s%s", c.args, code, c.code, out.String(), errOut.String())
		}
		for _, w := range c.out {
			if !strings.Contains(out.String(), w) {
				t.Errorf("%q: output lacks %q:\n%s", c.args, w, out.String())
			}
		}
	}
}
