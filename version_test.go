package fibermpi

import (
	"bytes"
	"os"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"
)

// semverRE matches a semantic version with a leading "v" and an optional
// pre-release (no build metadata: Go module versions carry none).
var semverRE = regexp.MustCompile(`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$`)

func TestVersionIsSemver(t *testing.T) {
	if !semverRE.MatchString(Version) {
		t.Fatalf("Version %q is not a semantic version such as v0.1.0 or v0.2.0-dev", Version)
	}
}

// TestChangelogMatchesVersion keeps Version and CHANGELOG.md in step: a
// development version ("-dev") has an [Unreleased] section on top and no
// section of its release yet; a release version has its section, with a
// date, on top.
func TestChangelogMatchesVersion(t *testing.T) {
	b, err := os.ReadFile("CHANGELOG.md")
	if err != nil {
		t.Fatal(err)
	}
	var heads []string
	for line := range strings.Lines(string(b)) {
		if strings.HasPrefix(line, "## ") {
			heads = append(heads, strings.TrimSpace(line))
		}
	}
	if len(heads) == 0 {
		t.Fatal("CHANGELOG.md has no \"## \" section")
	}
	release, dev := strings.CutSuffix(strings.TrimPrefix(Version, "v"), "-dev")
	section := regexp.MustCompile(`^## \[` + regexp.QuoteMeta(release) + `\]( - \d{4}-\d{2}-\d{2})?$`)
	if dev {
		if heads[0] != "## [Unreleased]" {
			t.Errorf("Version %s is a development version, but the first section of CHANGELOG.md is %q, not \"## [Unreleased]\"", Version, heads[0])
		}
		for _, h := range heads {
			if section.MatchString(h) {
				t.Errorf("Version %s is a development version, but CHANGELOG.md already has %q", Version, h)
			}
		}
		return
	}
	for i, h := range heads {
		if strings.HasPrefix(h, "## [Unreleased]") {
			continue
		}
		if !section.MatchString(h) || !strings.Contains(h, " - ") {
			t.Errorf("Version %s, but the newest release section of CHANGELOG.md (section %d) is %q, not \"## [%s] - YYYY-MM-DD\"", Version, i+1, h, release)
		}
		return
	}
	t.Errorf("Version %s, but CHANGELOG.md has no release section", Version)
}

func TestVersionInfo(t *testing.T) {
	vcs := []debug.BuildSetting{
		{Key: "-buildmode", Value: "exe"},
		{Key: "vcs", Value: "git"},
		{Key: "vcs.revision", Value: "97be35e1c0ffee0123456789abcdef0123456789"},
		{Key: "vcs.time", Value: "2026-11-24T21:40:02Z"},
		{Key: "vcs.modified", Value: "true"},
	}
	other := &debug.Module{Path: "example.com/other", Version: "v1.2.3"}
	for _, c := range []struct {
		name string
		bi   *debug.BuildInfo
		want string
	}{
		{"no build info", nil, "fibermpi " + Version + " (go1.99 linux/amd64)"},
		{"working tree", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: modulePath, Version: "(devel)"}, Settings: vcs},
			"fibermpi " + Version + " (module (devel), commit 97be35e1c0ff 2026-11-24T21:40:02Z, modified; go1.26.8 linux/amd64)"},
		{"clean tree", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: modulePath, Version: "v0.1.0"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "false"}}},
			"fibermpi " + Version + " (module v0.1.0, commit abc; go1.26.8 linux/amd64)"},
		{"no vcs", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: modulePath, Version: "(devel)"}},
			"fibermpi " + Version + " (module (devel); go1.26.8 linux/amd64)"},
		{"a dependency", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "example.com/app", Version: "(devel)"},
			Deps: []*debug.Module{other, {Path: modulePath, Version: "v0.1.0"}}, Settings: vcs},
			"fibermpi " + Version + " (module v0.1.0; go1.26.8 linux/amd64)"},
		{"a replaced dependency", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "example.com/app"},
			Deps: []*debug.Module{{Path: modulePath, Version: "v0.1.0", Replace: &debug.Module{Path: "../fibermpi"}}}},
			"fibermpi " + Version + " (module v0.1.0 => ../fibermpi; go1.26.8 linux/amd64)"},
		{"built with a profile", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: modulePath, Version: "(devel)"},
			Settings: []debug.BuildSetting{{Key: "-pgo", Value: "/src/fibermpi/cmd/fmpi-osu/default.pgo"}, {Key: "vcs.revision", Value: "abc"}}},
			"fibermpi " + Version + " (module (devel), commit abc, pgo default.pgo; go1.26.8 linux/amd64)"},
		{"a dependency built with a profile", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "example.com/app"},
			Deps: []*debug.Module{{Path: modulePath, Version: "v0.1.0"}}, Settings: []debug.BuildSetting{{Key: "-pgo", Value: "/app/cpu.pprof"}}},
			"fibermpi " + Version + " (module v0.1.0, pgo cpu.pprof; go1.26.8 linux/amd64)"},
		{"not linked in", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "example.com/app"}, Deps: []*debug.Module{other}},
			"fibermpi " + Version + " (go1.26.8 linux/amd64)"},
	} {
		if got := versionInfo(c.bi, "go1.99", "linux/amd64"); got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
}

// TestPrintVersion checks what a -version flag prints from this test
// binary, whose main module is fibermpi's.
func TestPrintVersion(t *testing.T) {
	var b bytes.Buffer
	if err := PrintVersion(&b, "prog"); err != nil {
		t.Fatal(err)
	}
	s := b.String()
	if !strings.HasPrefix(s, "prog fibermpi "+Version+" (") || !strings.HasSuffix(s, ")\n") || strings.Count(s, "\n") != 1 {
		t.Errorf("PrintVersion wrote %q", s)
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Path == modulePath && !strings.Contains(s, "module ") {
		t.Errorf("PrintVersion wrote %q, without the module version from the build info", s)
	}
}
