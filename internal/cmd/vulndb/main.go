// Command vulndb builds a local copy of the Go vulnerability database, for
// govulncheck -db file:///DIR, from the module golang.org/x/vulndb as the Go
// module proxy serves it.
//
//	go run ./internal/cmd/vulndb [-query latest] [-cache DIR]
//
// It prints the directory of the database on stdout, and what it used on
// stderr. make lint runs it (scripts/vulncheck.sh) because the database's
// own host is not reachable from every machine that builds fibermpi, while
// the module proxy is.
//
// # Where the data comes from
//
// The golang.org/x/vulndb module is the repository the Go security team
// publishes the database from; its data/osv directory holds every entry, one
// OSV JSON file per vulnerability (GO-YYYY-NNNN.json). The go command
// downloads the module (a pseudo-version of its newest commit for the query
// "latest") and checks the zip against the checksum database, as it does
// for any module, so the entries are the ones the repository holds at that
// commit.
//
// # What it writes
//
// The layout govulncheck reads from a file URL (version 1 of the database
// API):
//
//	DIR/index/db.json       {"modified": the time of the vulndb commit}
//	DIR/index/modules.json  [{"path": module, "vulns": [{"id", "modified"}]}]
//	DIR/ID/GO-YYYY-NNNN.json  each entry, byte for byte
//
// The index gives no "fixed" version: that field only lets a client skip
// entries fixed before the version it checks, so without it govulncheck
// reads every entry of a module it uses and decides from the entry's own
// ranges. The entries in the repository carry no modification times (the
// published database derives them from the git history), so db.json takes
// the commit's time instead.
//
// DIR is CACHE/<version>, built once per vulndb version. When the proxy
// cannot be reached, the newest database already in CACHE is used, with a
// warning; when there is none, the command exits with status 3.
package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// vulndbModule is the module that carries the database's entries.
const vulndbModule = "golang.org/x/vulndb"

// Exit statuses besides 0.
const (
	exitFailed = 1 // the database could not be built
	exitUsage  = 2 // bad flags
	exitNoDB   = 3 // no database: the proxy is unreachable and nothing is cached
)

func main() { os.Exit(cli(os.Args[1:], os.Stdout, os.Stderr, goDownload)) }

// cli runs the command; download fetches the module (goDownload, or a fake
// in tests).
func cli(args []string, stdout, stderr io.Writer, download func(query string) (*module, error)) int {
	fs := flag.NewFlagSet("vulndb", flag.ContinueOnError)
	fs.SetOutput(stderr)
	query := fs.String("query", "latest", "version of "+vulndbModule+" to use: latest, or a (pseudo-)version")
	cache := fs.String("cache", "", "directory of the built databases (default: fibermpi/vulndb under the user's cache directory)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "vulndb: unexpected arguments %q\n", fs.Args())
		return exitUsage
	}
	if *cache == "" {
		dir, err := os.UserCacheDir()
		if err != nil {
			fmt.Fprintf(stderr, "vulndb: no cache directory (%v); give one with -cache\n", err)
			return exitUsage
		}
		*cache = filepath.Join(dir, "fibermpi", "vulndb")
	}
	m, err := download(*query)
	if err != nil {
		dir, at, cerr := newestCached(*cache)
		if cerr != nil {
			fmt.Fprintf(stderr, "vulndb: cannot download %s@%s (%v), and no database is cached in %s (%v)\n",
				vulndbModule, *query, err, *cache, cerr)
			return exitNoDB
		}
		fmt.Fprintf(stderr, "vulndb: WARNING: cannot download %s@%s (%v); using the newest cached database, of %s (%d days old): %s\n",
			vulndbModule, *query, err, at.Format(time.DateOnly), int(time.Since(at).Hours()/24), dir)
		fmt.Fprintln(stdout, dir)
		return 0
	}
	dir := filepath.Join(*cache, m.Version)
	n, err := ensure(dir, m)
	if err != nil {
		fmt.Fprintf(stderr, "vulndb: %v\n", err)
		return exitFailed
	}
	fmt.Fprintf(stderr, "vulndb: %s@%s of %s, %d entries: %s\n", vulndbModule, m.Version, m.Time.Format(time.DateOnly), n, dir)
	fmt.Fprintln(stdout, dir)
	return 0
}

// module is a downloaded version of the vulndb module.
type module struct {
	Version string
	Time    time.Time // of the commit
	Dir     string    // the extracted module in the module cache
}

// goDownload downloads vulndbModule@query with the go command, from a
// temporary directory so that no go.mod or go.sum is touched.
func goDownload(query string) (*module, error) {
	tmp, err := os.MkdirTemp("", "vulndb")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	cmd := exec.Command("go", "mod", "download", "-json", vulndbModule+"@"+query)
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	// With -json the go command reports a failure in the Error field, and
	// exits non-zero.
	var dl struct {
		Version, Info, Dir, Error string
	}
	if jerr := json.Unmarshal(out, &dl); jerr == nil && dl.Error != "" {
		return nil, errors.New(dl.Error)
	}
	if err != nil {
		return nil, fmt.Errorf("go mod download: %v: %s", err, strings.TrimSpace(stderr.String()))
	}
	if dl.Dir == "" || dl.Version == "" || dl.Info == "" {
		return nil, fmt.Errorf("go mod download printed no module directory: %s", out)
	}
	b, err := os.ReadFile(dl.Info)
	if err != nil {
		return nil, err
	}
	var info struct{ Time time.Time }
	if err := json.Unmarshal(b, &info); err != nil {
		return nil, fmt.Errorf("%s: %v", dl.Info, err)
	}
	return &module{Version: dl.Version, Time: info.Time, Dir: dl.Dir}, nil
}

// doneFile marks a complete database (written last).
const doneFile = "index/db.json"

// ensure builds the database of m in dir unless it is there already, and
// returns its number of entries.
func ensure(dir string, m *module) (int, error) {
	if ids, err := os.ReadDir(filepath.Join(dir, "ID")); err == nil {
		if _, err := os.Stat(filepath.Join(dir, doneFile)); err == nil {
			return len(ids), nil
		}
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return 0, err
	}
	// Build beside dir and rename, so that an interrupted build leaves no
	// half database behind under dir's name.
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".build-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(tmp)
	n, err := build(tmp, os.DirFS(filepath.Join(m.Dir, "data", "osv")), m.Time)
	if err != nil {
		return 0, fmt.Errorf("%s@%s: %v", vulndbModule, m.Version, err)
	}
	os.RemoveAll(dir) // an incomplete one, if any
	if err := os.Rename(tmp, dir); err != nil {
		return 0, err
	}
	return n, nil
}

// entry is what the index needs of an OSV entry.
type entry struct {
	ID       string    `json:"id"`
	Modified time.Time `json:"modified"`
	Affected []struct {
		Package struct {
			Name string `json:"name"`
		} `json:"package"`
	} `json:"affected"`
}

// moduleVulns is one element of index/modules.json.
type moduleVulns struct {
	Path  string      `json:"path"`
	Vulns []vulnIndex `json:"vulns"`
}

// vulnIndex is one vulnerability of a module in index/modules.json.
type vulnIndex struct {
	ID       string    `json:"id"`
	Modified time.Time `json:"modified"`
}

// errNoEntries is returned by build when src holds no OSV entry.
var errNoEntries = errors.New("no OSV entries (data/osv/*.json)")

// build writes the database of the OSV entries in src (files ID.json) to
// dir, with modified as the database's time, and returns the number of
// entries.
func build(dir string, src fs.FS, modified time.Time) (int, error) {
	names, err := fs.Glob(src, "*.json")
	if err != nil {
		return 0, err
	}
	if len(names) == 0 {
		return 0, errNoEntries
	}
	if err := os.MkdirAll(filepath.Join(dir, "ID"), 0o755); err != nil {
		return 0, err
	}
	if err := os.MkdirAll(filepath.Join(dir, "index"), 0o755); err != nil {
		return 0, err
	}
	byModule := make(map[string][]vulnIndex)
	for _, name := range names {
		b, err := fs.ReadFile(src, name)
		if err != nil {
			return 0, err
		}
		var e entry
		if err := json.Unmarshal(b, &e); err != nil {
			return 0, fmt.Errorf("%s: %v", name, err)
		}
		if e.ID == "" || name != e.ID+".json" {
			return 0, fmt.Errorf("%s: holds entry %q; each file must be named after its entry's id", name, e.ID)
		}
		if len(e.Affected) == 0 {
			return 0, fmt.Errorf("%s: affects no module", name)
		}
		seen := make(map[string]bool)
		for _, a := range e.Affected {
			p := a.Package.Name
			if p == "" {
				return 0, fmt.Errorf("%s: an affected package without a module path", name)
			}
			if !seen[p] {
				seen[p] = true
				byModule[p] = append(byModule[p], vulnIndex{ID: e.ID, Modified: e.Modified})
			}
		}
		if err := os.WriteFile(filepath.Join(dir, "ID", name), b, 0o644); err != nil {
			return 0, err
		}
	}
	index := make([]moduleVulns, 0, len(byModule))
	for p, vs := range byModule {
		slices.SortFunc(vs, func(a, b vulnIndex) int { return cmp.Compare(a.ID, b.ID) })
		index = append(index, moduleVulns{Path: p, Vulns: vs})
	}
	slices.SortFunc(index, func(a, b moduleVulns) int { return cmp.Compare(a.Path, b.Path) })
	if err := writeJSON(filepath.Join(dir, "index", "modules.json"), index); err != nil {
		return 0, err
	}
	// db.json last: its presence marks a complete database.
	if err := writeJSON(filepath.Join(dir, doneFile), struct {
		Modified time.Time `json:"modified"`
	}{modified.UTC()}); err != nil {
		return 0, err
	}
	return len(names), nil
}

func writeJSON(name string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return os.WriteFile(name, b, 0o644)
}

// newestCached returns the complete database in cache with the newest
// db.json time.
func newestCached(cache string) (dir string, modified time.Time, err error) {
	des, err := os.ReadDir(cache)
	if err != nil {
		return "", time.Time{}, err
	}
	for _, de := range des {
		if !de.IsDir() || strings.HasPrefix(de.Name(), ".") {
			continue
		}
		d := filepath.Join(cache, de.Name())
		b, err := os.ReadFile(filepath.Join(d, doneFile))
		if err != nil {
			continue
		}
		var db struct{ Modified time.Time }
		if json.Unmarshal(b, &db) != nil {
			continue
		}
		if dir == "" || db.Modified.After(modified) {
			dir, modified = d, db.Modified
		}
	}
	if dir == "" {
		return "", time.Time{}, errors.New("none found")
	}
	return dir, modified, nil
}
