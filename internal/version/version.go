// Package version is kci's own version, from the build info the Go
// toolchain embeds: the module version (a tag, or a pseudo-version for
// `go install ...@commit`) and, for a build in a checkout, the VCS
// revision and whether the tree was modified. Numbers compare within one
// kci version, so every run records it.
package version

import (
	"runtime/debug"
	"strings"
)

// String is the one-line version: "v0.3.1", "(devel) rev 1a2b3c4d5e6f+dirty
// 2026-12-01T07:00:00Z", or "unknown" without build info.
func String() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	return format(bi)
}

func format(bi *debug.BuildInfo) string {
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, when string
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			when = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	parts := []string{v}
	// A module version built from a tag already names its commit; a
	// checkout build says which revision (and that it had local changes).
	if rev != "" && !strings.Contains(v, rev[:min(12, len(rev))]) {
		r := "rev " + rev[:min(12, len(rev))]
		if dirty {
			r += "+dirty"
		}
		parts = append(parts, r)
		if when != "" {
			parts = append(parts, when)
		}
	}
	return strings.Join(parts, " ")
}
