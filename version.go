package fibermpi

import (
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
)

// Version is the release of fibermpi this source belongs to, in semantic
// versioning with a leading "v", as its git tag spells it. Between releases
// it names the next one with the pre-release suffix "-dev" ("v0.2.0-dev"
// after v0.1.0), which sorts before the release itself. The module stays at
// major version 0 until its API is frozen; see CHANGELOG.md.
const Version = "v0.1.0-dev"

// modulePath is the path of the module this package belongs to.
const modulePath = "github.com/fibermpi/fibermpi"

// VersionInfo describes the fibermpi linked into the running program on one
// line: Version, then what the Go toolchain recorded in the binary when it
// was built (runtime/debug.ReadBuildInfo), when it recorded anything: the
// module version the go command resolved (a tag, a pseudo-version, or
// "(devel)" for a build from a working tree), the commit and whether the
// tree had uncommitted changes, the profile the compiler optimized the
// program with (profile-guided optimization: a main package's default.pgo,
// or go build -pgo=FILE), and the Go version, OS and architecture.
//
//	fibermpi v0.1.0-dev (module (devel), commit 97be35e1c0ff 2026-11-24T21:40:02Z, modified, pgo default.pgo; go1.26.8 linux/amd64)
func VersionInfo() string {
	bi, _ := debug.ReadBuildInfo()
	return versionInfo(bi, runtime.Version(), runtime.GOOS+"/"+runtime.GOARCH)
}

// PrintVersion writes "prog " and VersionInfo to w, on one line: what a
// command's -version flag prints.
func PrintVersion(w io.Writer, prog string) error {
	_, err := fmt.Fprintf(w, "%s %s\n", prog, VersionInfo())
	return err
}

// versionInfo formats VersionInfo from the build info bi (nil when the
// binary carries none), the Go version goVersion and the platform.
func versionInfo(bi *debug.BuildInfo, goVersion, platform string) string {
	var parts []string
	if bi != nil {
		if m := fibermpiModule(bi); m != nil {
			v := m.Version
			if m.Replace != nil {
				v += " => " + m.Replace.Path
				if m.Replace.Version != "" {
					v += " " + m.Replace.Version
				}
			}
			if v != "" {
				parts = append(parts, "module "+v)
			}
		}
		if c := commit(bi); c != "" {
			parts = append(parts, c)
		}
		if p := pgo(bi); p != "" {
			parts = append(parts, "pgo "+p)
		}
		if bi.GoVersion != "" {
			goVersion = bi.GoVersion
		}
	}
	s := "fibermpi " + Version + " ("
	if len(parts) > 0 {
		s += strings.Join(parts, ", ") + "; "
	}
	return s + goVersion + " " + platform + ")"
}

// fibermpiModule returns this module's entry in bi: the main module when
// the program is built inside fibermpi, a dependency when another module
// imports it, or nil.
func fibermpiModule(bi *debug.BuildInfo) *debug.Module {
	if bi.Main.Path == modulePath {
		return &bi.Main
	}
	for _, d := range bi.Deps {
		if d.Path == modulePath {
			return d
		}
	}
	return nil
}

// BuildProfile returns the base name of the CPU profile the Go compiler
// optimized the running program with (profile-guided optimization: a main
// package's default.pgo, or go build -pgo=FILE), or "" for a build without
// one. Benchmark programs print it beside their figures.
func BuildProfile() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	return pgo(bi)
}

// pgo returns the base name of the profile the program was built with
// (the go command records its path as the build setting -pgo), or "".
func pgo(bi *debug.BuildInfo) string {
	for _, s := range bi.Settings {
		if s.Key == "-pgo" && s.Value != "" {
			return filepath.Base(s.Value)
		}
	}
	return ""
}

// commit describes the version-control state the go command recorded for
// the main module (nothing with -buildvcs=false or outside a checkout): the
// first 12 digits of the revision, its time, and ", modified" for a tree
// with uncommitted changes. It describes fibermpi's tree only when
// fibermpi is the main module.
func commit(bi *debug.BuildInfo) string {
	if bi.Main.Path != modulePath {
		return ""
	}
	var rev, at string
	var modified bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if rev == "" {
		return ""
	}
	c := "commit " + rev[:min(len(rev), 12)]
	if at != "" {
		c += " " + at
	}
	if modified {
		c += ", modified"
	}
	return c
}
