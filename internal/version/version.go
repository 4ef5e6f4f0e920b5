// Package version is kci's own version, from the build info the Go
// toolchain embeds: the module version (a tag, or a pseudo-version for
// `go install ...@commit`) and, for a build in a checkout, the VCS
// revision and whether the tree was modified. Numbers compare within one
// kci version, so every run records it.
//
// A build without VCS info (GOFLAGS=-buildvcs=false, go run, a source
// tarball) cannot know its revision: nothing in a plain go build writes
// it, and go:embed may not reach .git. A packager names it with
// -ldflags "-X github.com/kci-dev/kci/internal/version.revision=COMMIT".
// Without that, the version says so and names the build by content: the
// executable's sha256 (exact, whatever changed) and the embedded sources'
// (the guest agent, BPF objects, kci.yaml, patches: the same for the same
// checkout on any machine). Looking for a .git near the binary or the
// working directory at run time would name whatever is checked out there
// now, not what was built.
package version

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"io/fs"
	"os"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/kci-dev/kci"
)

// revision is set with -ldflags -X where the build has no VCS info.
var revision string

var once = sync.OnceValue(func() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	return format(bi, revision, contentID)
})

// String is the one-line version: "v0.3.1", "(devel) rev 1a2b3c4d5e6f+dirty
// 2026-12-01T07:00:00Z", "(devel) built without VCS info: binary
// 1a2b3c4d5e6f, embedded sources 9f8e7d6c5b4a", or "unknown" without build
// info.
func String() string { return once() }

// format is bi's version; ldRev is the -X revision, content names a
// build that has neither.
func format(bi *debug.BuildInfo, ldRev string, content func() string) string {
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	rev, when := ldRev, ""
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
	if rev == "" && v == "(devel)" {
		parts = append(parts, "built without VCS info: "+content())
	}
	return strings.Join(parts, " ")
}

// contentID names this build by the hashes of the executable and of the
// sources embedded in it.
func contentID() string {
	exe := "unreadable"
	if p, err := os.Executable(); err == nil {
		if f, err := os.Open(p); err == nil {
			h := sha256.New()
			if _, err := io.Copy(h, f); err == nil {
				exe = hex.EncodeToString(h.Sum(nil))[:12]
			}
			_ = f.Close() // read-only
		}
	}
	return "binary " + exe + ", embedded sources " + embeddedHash(kci.Default, kci.AgentSource)
}

// embeddedHash hashes every file's path and content, in fs.WalkDir's
// (lexical) order.
func embeddedHash(fss ...fs.FS) string {
	h := sha256.New()
	for _, fsys := range fss {
		err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			data, err := fs.ReadFile(fsys, p)
			if err != nil {
				return err
			}
			_, _ = io.WriteString(h, p+"\x00")
			_, _ = h.Write(data)
			_, _ = io.WriteString(h, "\x00")
			return nil
		})
		if err != nil {
			return "unreadable"
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}
