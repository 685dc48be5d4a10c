package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"
)

var snapshot = time.Date(2099, 5, 6, 7, 8, 9, 0, time.UTC)

func readJSON(t *testing.T, name string, v any) {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

func TestBuild(t *testing.T) {
	dir := t.TempDir()
	n, err := build(dir, os.DirFS("testdata/osv"), snapshot)
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Errorf("build counted %d entries; want 2", n)
	}
	var db struct{ Modified time.Time }
	readJSON(t, filepath.Join(dir, "index", "db.json"), &db)
	if !db.Modified.Equal(snapshot) {
		t.Errorf("db.json modified %v; want %v", db.Modified, snapshot)
	}
	var modules []moduleVulns
	readJSON(t, filepath.Join(dir, "index", "modules.json"), &modules)
	stamp := time.Date(2099, 3, 4, 5, 6, 7, 0, time.UTC)
	want := []moduleVulns{
		// a module named twice in one entry is indexed once for it
		{Path: "example.com/a", Vulns: []vulnIndex{{ID: "GO-2099-0001"}, {ID: "GO-2099-0002", Modified: stamp}}},
		{Path: "example.com/b", Vulns: []vulnIndex{{ID: "GO-2099-0001"}}},
		{Path: "stdlib", Vulns: []vulnIndex{{ID: "GO-2099-0002", Modified: stamp}}},
	}
	if diff := cmp.Diff(want, modules); diff != "" {
		t.Errorf("modules.json (-want +got):\n%s", diff)
	}
	ids, err := os.ReadDir(filepath.Join(dir, "ID"))
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 2 {
		t.Errorf("ID holds %d files; want 2", len(ids))
	}
	for _, id := range ids {
		got, err := os.ReadFile(filepath.Join(dir, "ID", id.Name()))
		if err != nil {
			t.Fatal(err)
		}
		src, err := os.ReadFile(filepath.Join("testdata", "osv", id.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, src) {
			t.Errorf("ID/%s differs from its source entry", id.Name())
		}
	}
}

func TestBuildRefuses(t *testing.T) {
	entry := func(id, module string) *fstest.MapFile {
		return &fstest.MapFile{Data: []byte(`{"id":"` + id + `","affected":[{"package":{"name":"` + module + `"}}]}`)}
	}
	for _, c := range []struct {
		name string
		src  fstest.MapFS
		msg  string
	}{
		{"empty", fstest.MapFS{"x.txt": {Data: []byte("x")}}, errNoEntries.Error()},
		{"misnamed", fstest.MapFS{"GO-1.json": entry("GO-2", "m")}, `GO-1.json: holds entry "GO-2"`},
		{"no id", fstest.MapFS{"GO-1.json": {Data: []byte(`{"affected":[{"package":{"name":"m"}}]}`)}}, `holds entry ""`},
		{"no module", fstest.MapFS{"GO-1.json": entry("GO-1", "")}, "without a module path"},
		{"affects nothing", fstest.MapFS{"GO-1.json": {Data: []byte(`{"id":"GO-1"}`)}}, "affects no module"},
		{"not json", fstest.MapFS{"GO-1.json": {Data: []byte(`{`)}}, "GO-1.json: unexpected end"},
	} {
		dir := t.TempDir()
		_, err := build(dir, c.src, snapshot)
		if err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: build returned %v; want an error with %q", c.name, err, c.msg)
		}
		if _, err := os.Stat(filepath.Join(dir, doneFile)); err == nil {
			t.Errorf("%s: a refused build wrote %s", c.name, doneFile)
		}
	}
}

// fakeModule lays testdata/osv out as the vulndb module's data/osv.
func fakeModule(t *testing.T, version string) *module {
	t.Helper()
	dir := t.TempDir()
	osv := filepath.Join(dir, "data", "osv")
	if err := os.MkdirAll(osv, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"GO-2099-0001.json", "GO-2099-0002.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", "osv", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(osv, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return &module{Version: version, Time: snapshot, Dir: dir}
}

func TestCLI(t *testing.T) {
	cache := t.TempDir()
	m := fakeModule(t, "v0.0.0-20990506070809-abcdef012345")
	calls := 0
	ok := func(query string) (*module, error) {
		calls++
		if query != "latest" {
			t.Errorf("download(%q); want latest", query)
		}
		return m, nil
	}
	var out, errOut bytes.Buffer
	if code := cli([]string{"-cache", cache}, &out, &errOut, ok); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	want := filepath.Join(cache, m.Version)
	if got := strings.TrimSpace(out.String()); got != want {
		t.Errorf("printed %q; want %q", got, want)
	}
	if !strings.Contains(errOut.String(), "2 entries") || !strings.Contains(errOut.String(), "of 2099-05-06") {
		t.Errorf("stderr %q does not say what it used", errOut.String())
	}
	if _, err := os.Stat(filepath.Join(want, "index", "modules.json")); err != nil {
		t.Fatal(err)
	}

	// A second run finds the database built: the module's files are not
	// read again.
	if err := os.RemoveAll(filepath.Join(m.Dir, "data")); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	errOut.Reset()
	if code := cli([]string{"-cache", cache}, &out, &errOut, ok); code != 0 || strings.TrimSpace(out.String()) != want {
		t.Fatalf("second run: exit %d, stdout %q, stderr %q", code, out.String(), errOut.String())
	}

	// Offline: the newest cached database, with a warning.
	older := filepath.Join(cache, "v0.0.0-20980101000000-000000000000")
	if _, err := build(older, os.DirFS("testdata/osv"), snapshot.AddDate(-1, 0, 0)); err != nil {
		t.Fatal(err)
	}
	offline := func(string) (*module, error) { return nil, errors.New("dial tcp: network is unreachable") }
	out.Reset()
	errOut.Reset()
	if code := cli([]string{"-cache", cache}, &out, &errOut, offline); code != 0 || strings.TrimSpace(out.String()) != want {
		t.Fatalf("offline: exit %d, stdout %q, stderr %q", code, out.String(), errOut.String())
	}
	if s := errOut.String(); !strings.Contains(s, "WARNING") || !strings.Contains(s, "network is unreachable") || !strings.Contains(s, "of 2099-05-06") {
		t.Errorf("offline: stderr %q lacks the warning, the reason or the database's date", s)
	}

	// Offline with nothing cached: status 3, nothing on stdout.
	out.Reset()
	errOut.Reset()
	if code := cli([]string{"-cache", t.TempDir()}, &out, &errOut, offline); code != exitNoDB || out.Len() != 0 {
		t.Errorf("offline, empty cache: exit %d, stdout %q; want %d and nothing", code, out.String(), exitNoDB)
	}
	if calls != 2 {
		t.Errorf("download called %d times; want 2", calls)
	}
}

func TestCLIIncompleteBuildIsRedone(t *testing.T) {
	cache := t.TempDir()
	m := fakeModule(t, "v1.0.0")
	dir := filepath.Join(cache, m.Version)
	// An ID directory without db.json: a build that did not finish.
	if err := os.MkdirAll(filepath.Join(dir, "ID"), 0o755); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	code := cli([]string{"-cache", cache}, &out, &errOut, func(string) (*module, error) { return m, nil })
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if _, err := os.Stat(filepath.Join(dir, doneFile)); err != nil {
		t.Errorf("the incomplete database was not rebuilt: %v", err)
	}
	if ids, _ := os.ReadDir(filepath.Join(dir, "ID")); len(ids) != 2 {
		t.Errorf("ID holds %d files; want 2", len(ids))
	}
}

func TestCLIBadFlags(t *testing.T) {
	for _, args := range [][]string{{"-frobnicate"}, {"stray"}} {
		var out, errOut bytes.Buffer
		if code := cli(args, &out, &errOut, nil); code != exitUsage || errOut.Len() == 0 {
			t.Errorf("%q: exit %d, stderr %q; want %d and a message", args, code, errOut.String(), exitUsage)
		}
	}
}
