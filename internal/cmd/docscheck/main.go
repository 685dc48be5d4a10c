// Command docscheck checks the package pages of this module as pkgsite
// rendered them (scripts/docs-check.sh saves each page's DOM from headless
// Chromium), and the system calls the renderers made while doing it.
//
//	docscheck -pages DIR [-license BSD-3-Clause] [-examples comm,endpoint,fiber] [-trace LOG]... [PACKAGES]
//
// PACKAGES (default ./...) are listed with go list; the page of package P is
// DIR/P.html. A page fails when
//
//   - its header does not name the license (-license), or says "None
//     detected", or the page says its documentation is not displayed
//     because of license restrictions;
//   - its "Redistributable license" detail is not checked;
//   - it has no Overview, or the overview lacks the first sentence of the
//     package's doc comment (or the package has none);
//   - it lists a different number of examples than the package has (go/doc
//     attaches them to the package, its functions, types and methods), or
//     none for a package named by -examples.
//
// Each -trace LOG is strace output (-f -yy, connect, sendto and sendmsg) of
// a renderer. Every call that names an address other than loopback fails
// the check — a connect, whatever its socket and result, or a send — with
// one exception: a refused connect on a datagram socket to a destination
// given by -probe. A datagram connect sends nothing (it only asks the
// kernel for a route, which a namespace with only loopback has none of);
// Chromium makes one at start to learn whether IPv6 is reachable, and has
// no switch to turn it off. Those are counted and shown.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"html"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

func main() { os.Exit(cli(os.Args[1:], os.Stdout, os.Stderr)) }

// listFlag is a flag that may be given more than once, or as a
// comma-separated list.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(s string) error {
	for f := range strings.SplitSeq(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			*l = append(*l, f)
		}
	}
	return nil
}

func cli(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("docscheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	pages := fs.String("pages", "", "directory of the rendered pages: DIR/IMPORTPATH.html")
	license := fs.String("license", "BSD-3-Clause", "license every page must show as detected")
	var examples, traces, probes listFlag
	fs.Var(&examples, "examples", "packages, relative to the module, whose pages must show examples")
	fs.Var(&traces, "trace", "strace log of a renderer, to check for outbound connections")
	fs.Var(&probes, "probe", "HOST:PORT of route probes: a refused datagram connect there is not counted as outbound")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *pages == "" {
		fmt.Fprintln(stderr, "docscheck: -pages is required")
		return 2
	}
	patterns := fs.Args()
	if len(patterns) == 0 {
		patterns = []string{"./..."}
	}
	pkgs, err := listPackages(patterns)
	if err != nil {
		fmt.Fprintln(stderr, "docscheck:", err)
		return 1
	}
	failed := false
	need := make(map[string]bool)
	for _, e := range examples {
		need[e] = true
	}
	for _, p := range pkgs {
		rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, p.Module.Path), "/")
		if rel == "" {
			rel = "."
		}
		page, err := os.ReadFile(filepath.Join(*pages, filepath.FromSlash(p.ImportPath)+".html"))
		if err != nil {
			fmt.Fprintf(stdout, "FAIL %s: no rendered page: %v\n", p.ImportPath, err)
			failed = true
			continue
		}
		// pkgsite shows a command's overview only: no index, no examples.
		command := p.Name == "main"
		n := 0
		if !command {
			if n, err = countExamples(p); err != nil {
				fmt.Fprintf(stdout, "FAIL %s: %v\n", p.ImportPath, err)
				failed = true
				continue
			}
		}
		problems := checkPage(page, pageWant{License: *license, Synopsis: p.Doc, Examples: n, NeedExamples: need[rel]})
		if command && need[rel] {
			problems = append(problems, "named by -examples, but it is a command, whose page shows no examples")
		}
		delete(need, rel)
		if len(problems) > 0 {
			failed = true
			for _, pr := range problems {
				fmt.Fprintf(stdout, "FAIL %s: %s\n", p.ImportPath, pr)
			}
			continue
		}
		shown := plural(n, "example")
		if command {
			shown = "a command (no examples shown)"
		}
		fmt.Fprintf(stdout, "ok   %s: license %s (redistributable), overview, %s\n", p.ImportPath, *license, shown)
	}
	for rel := range need {
		fmt.Fprintf(stdout, "FAIL %s: named by -examples but not among the packages checked\n", rel)
		failed = true
	}
	var outbound int
	var probed []string
	for _, t := range traces {
		b, err := os.ReadFile(t)
		if err != nil {
			fmt.Fprintln(stdout, "FAIL", err)
			failed = true
			continue
		}
		r := scanTrace(b, probes)
		for _, v := range uniq(r.Outbound) {
			fmt.Fprintf(stdout, "FAIL %s: outbound: %s\n", t, v)
			failed = true
		}
		outbound += len(r.Outbound)
		probed = append(probed, r.Probes...)
	}
	if len(traces) > 0 {
		status := "ok  "
		if outbound > 0 {
			status = "FAIL"
		}
		fmt.Fprintf(stdout, "%s %d traced runs: %d outbound connection attempts; %d route probes (datagram connects, no packet sent) refused by the namespace",
			status, len(traces), outbound, len(probed))
		if len(probed) > 0 {
			fmt.Fprintf(stdout, " (%s)", strings.Join(uniq(probed), ", "))
		}
		fmt.Fprintln(stdout)
	}
	if failed {
		return 1
	}
	return 0
}

// pkg is what go list tells about a package.
type pkg struct {
	ImportPath, Name, Dir, Doc                   string
	GoFiles, CgoFiles, TestGoFiles, XTestGoFiles []string
	Module                                       struct{ Path string }
	Error                                        *struct{ Err string }
}

func listPackages(patterns []string) ([]pkg, error) {
	cmd := exec.Command("go", append([]string{"list", "-json"}, patterns...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %v: %s", err, strings.TrimSpace(stderr.String()))
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			return nil, err
		}
		if p.Error != nil {
			return nil, fmt.Errorf("%s: %s", p.ImportPath, p.Error.Err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs, nil
}

// countExamples returns the number of examples go/doc attaches to p (to the
// package, its functions, types and methods), as a documentation page shows
// them.
func countExamples(p pkg) (int, error) {
	fset := token.NewFileSet()
	var files []*ast.File
	for _, names := range [][]string{p.GoFiles, p.CgoFiles, p.TestGoFiles, p.XTestGoFiles} {
		for _, name := range names {
			f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.ParseComments)
			if err != nil {
				return 0, err
			}
			files = append(files, f)
		}
	}
	d, err := doc.NewFromFiles(fset, files, p.ImportPath)
	if err != nil {
		return 0, err
	}
	n := len(d.Examples)
	for _, f := range d.Funcs {
		n += len(f.Examples)
	}
	for _, t := range d.Types {
		n += len(t.Examples)
		for _, f := range t.Funcs {
			n += len(f.Examples)
		}
		for _, m := range t.Methods {
			n += len(m.Examples)
		}
	}
	return n, nil
}

// pageWant is what one package page must show.
type pageWant struct {
	License      string // the license name the header must show
	Synopsis     string // the first sentence of the package doc
	Examples     int    // the number of examples the package has
	NeedExamples bool   // whether the page must show at least one
}

var (
	licenseHeaderRE = regexp.MustCompile(`(?s)data-test-id="UnitHeader-licenses"[^>]*>(.*?)</span>`)
	tagRE           = regexp.MustCompile(`(?s)<[^>]*>`)
	spaceRE         = regexp.MustCompile(`\s+`)
	altRE           = regexp.MustCompile(`alt="([^"]*)"`)
	examplesListRE  = regexp.MustCompile(`(?s)<ul class="Documentation-examplesList">(.*?)</ul>`)
	exampleLinkRE   = regexp.MustCompile(`<a href="#example-`)
)

// restrictedRE matches what pkgsite writes on a page whose license it does
// not detect as redistributable.
var restrictedRE = regexp.MustCompile(`(?i)none detected|not displayed due to license restrictions|documentation not displayed`)

// text returns the text of an HTML fragment: tags dropped, entities
// decoded, runs of white space made one space.
func text(fragment string) string {
	return strings.TrimSpace(spaceRE.ReplaceAllString(html.UnescapeString(tagRE.ReplaceAllString(fragment, " ")), " "))
}

// squeeze drops all white space from s: markup inside a sentence (a doc
// link, code) may add or remove a space around it.
func squeeze(s string) string { return spaceRE.ReplaceAllString(s, "") }

// checkPage returns what is wrong with a rendered package page.
func checkPage(page []byte, want pageWant) []string {
	s := string(page)
	var problems []string
	if m := restrictedRE.FindString(s); m != "" {
		problems = append(problems, fmt.Sprintf("the page says %q", m))
	}
	if m := licenseHeaderRE.FindStringSubmatch(s); m == nil {
		problems = append(problems, "no License in the page header")
	} else if h := text(m[1]); !strings.Contains(h, want.License) {
		problems = append(problems, fmt.Sprintf("the header says %q, not the license %s", h, want.License))
	}
	problems = append(problems, checkRedistributable(s)...)
	if !strings.Contains(s, `id="pkg-overview"`) {
		problems = append(problems, "no Overview section")
	} else if want.Synopsis == "" {
		problems = append(problems, "the package has no doc comment")
	} else if !strings.Contains(squeeze(text(s)), squeeze(text(want.Synopsis))) {
		problems = append(problems, fmt.Sprintf("the overview lacks the package doc's first sentence %q", want.Synopsis))
	}
	shown := 0
	if m := examplesListRE.FindStringSubmatch(s); m != nil {
		shown = len(exampleLinkRE.FindAllString(m[1], -1))
	}
	switch {
	case want.NeedExamples && shown == 0:
		problems = append(problems, "no Examples section")
	case shown != want.Examples:
		problems = append(problems, fmt.Sprintf("%d examples listed; the package has %d", shown, want.Examples))
	}
	return problems
}

// checkRedistributable checks the "Redistributable license" detail: the
// icon before it in its <summary> must be the checked one.
func checkRedistributable(s string) []string {
	i := strings.Index(s, "Redistributable license")
	if i < 0 {
		return []string{`no "Redistributable license" detail`}
	}
	j := strings.LastIndex(s[:i], "<summary")
	if j < 0 {
		return []string{`the "Redistributable license" detail is not in a <summary>`}
	}
	alts := altRE.FindAllStringSubmatch(s[j:i], -1)
	if len(alts) == 0 {
		return []string{`no icon before "Redistributable license"`}
	}
	if a := alts[len(alts)-1][1]; a != "checked" {
		return []string{fmt.Sprintf(`"Redistributable license" is marked %q, not checked`, a)}
	}
	return nil
}

// traceReport is what a strace log shows of network use.
type traceReport struct {
	Outbound []string // calls that could send a packet off this host
	Probes   []string // refused datagram connects to a -probe destination
}

var (
	// 1234  connect(18<UDPv6:[187025]>, {sa_family=AF_INET6, ...
	callRE    = regexp.MustCompile(`^(\d+)\s+(connect|sendto|sendmsg)\((\d+)(<[^>]*>)?,(.*)$`)
	resumedRE = regexp.MustCompile(`^(\d+)\s+<\.\.\. (connect|sendto|sendmsg) resumed>.*\)\s+=\s+(-?\d+)`)
	resultRE  = regexp.MustCompile(`\)\s+=\s+(-?\d+)`)
	inet4RE   = regexp.MustCompile(`sa_family=AF_INET,.*?inet_addr\("([^"]+)"\)`)
	inet6RE   = regexp.MustCompile(`sa_family=AF_INET6,.*?inet_pton\(AF_INET6, "([^"]+)"`)
	portRE    = regexp.MustCompile(`sin6?_port=htons\((\d+)\)`)
)

// loopback reports whether addr (an IPv4 or IPv6 address as strace prints
// it) is a loopback address.
func loopback(addr string) bool {
	return strings.HasPrefix(addr, "127.") || addr == "::1" || strings.HasPrefix(addr, "::ffff:127.")
}

// scanTrace reads strace -f -yy output of connect, sendto and sendmsg;
// probes are the destinations (HOST:PORT, [HOST]:PORT for IPv6) of route
// probes.
func scanTrace(log []byte, probes []string) traceReport {
	var r traceReport
	type pending struct {
		what, dest string
		datagram   bool
	}
	unfinished := make(map[string]pending) // by pid
	settle := func(p pending, result int) {
		switch {
		case p.what == "connect" && p.datagram && result < 0 && slices.Contains(probes, p.dest):
			r.Probes = append(r.Probes, p.dest)
		case p.what == "connect" && p.datagram && result < 0:
			r.Outbound = append(r.Outbound, "datagram connect to "+p.dest+" (refused)")
		case p.what == "connect" && p.datagram:
			r.Outbound = append(r.Outbound, "datagram connect to "+p.dest+" succeeded")
		default:
			r.Outbound = append(r.Outbound, p.what+" to "+p.dest)
		}
	}
	sc := bufio.NewScanner(bytes.NewReader(log))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if m := resumedRE.FindStringSubmatch(line); m != nil {
			if p, ok := unfinished[m[1]]; ok {
				delete(unfinished, m[1])
				var res int
				fmt.Sscan(m[3], &res)
				settle(p, res)
			}
			continue
		}
		m := callRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		var addr string
		if a := inet4RE.FindStringSubmatch(m[5]); a != nil {
			addr = a[1]
		} else if a := inet6RE.FindStringSubmatch(m[5]); a != nil {
			addr = a[1]
		} else {
			continue // no internet address: a Unix or netlink socket, or a connected one
		}
		if loopback(addr) {
			continue
		}
		dest := addr
		if p := portRE.FindStringSubmatch(m[5]); p != nil {
			if strings.Contains(addr, ":") {
				dest = "[" + addr + "]"
			}
			dest += ":" + p[1]
		}
		p := pending{what: m[2], dest: dest, datagram: strings.HasPrefix(m[4], "<UDP")}
		if strings.Contains(m[5], "<unfinished ...>") {
			unfinished[m[1]] = p
			continue
		}
		res := -1
		if rm := resultRE.FindStringSubmatch(m[5]); rm != nil {
			fmt.Sscan(rm[1], &res)
		}
		settle(p, res)
	}
	for _, p := range unfinished { // never resumed: the result is unknown
		settle(p, 0)
	}
	return r
}

// plural writes n and noun, in the plural unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// uniq returns ss without repeats, in order, each repeated one with its
// count.
func uniq(ss []string) []string {
	seen := make(map[string]int)
	var order []string
	for _, s := range ss {
		if seen[s] == 0 {
			order = append(order, s)
		}
		seen[s]++
	}
	for i, s := range order {
		if seen[s] > 1 {
			order[i] = fmt.Sprintf("%s (%d×)", s, seen[s])
		}
	}
	return order
}
