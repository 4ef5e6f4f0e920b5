package version

import (
	"runtime/debug"
	"strings"
	"testing"
	"testing/fstest"
)

func TestFormat(t *testing.T) {
	rev := "1a2b3c4d5e6f7a8b9c0d1a2b3c4d5e6f7a8b9c0d"
	for _, c := range []struct {
		name string
		bi   debug.BuildInfo
		want string
	}{
		{"checkout", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: rev}, {Key: "vcs.time", Value: "2026-12-01T07:00:00Z"}, {Key: "vcs.modified", Value: "true"}}},
			"(devel) rev 1a2b3c4d5e6f+dirty 2026-12-01T07:00:00Z"},
		{"clean checkout", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: "false"}}},
			"(devel) rev 1a2b3c4d5e6f"},
		{"tag", debug.BuildInfo{Main: debug.Module{Version: "v0.3.1"}}, "v0.3.1"},
		{"pseudo-version", debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261201070000-1a2b3c4d5e6f"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: rev}}}, "v0.0.0-20261201070000-1a2b3c4d5e6f"},
		{"no VCS info", debug.BuildInfo{}, "(devel) built without VCS info: CONTENT"},
		{"tag, no VCS info", debug.BuildInfo{Main: debug.Module{Version: "v0.3.1"}}, "v0.3.1"},
	} {
		if got := format(&c.bi, "", func() string { return "CONTENT" }); got != c.want {
			t.Errorf("%s: format = %q, want %q", c.name, got, c.want)
		}
	}
}

// A revision given with -ldflags -X names a build without VCS info.
func TestFormatLdflagsRevision(t *testing.T) {
	got := format(&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "1a2b3c4d5e6f7a8b", func() string { return "CONTENT" })
	if got != "(devel) rev 1a2b3c4d5e6f" {
		t.Errorf("format = %q", got)
	}
}

// The embedded sources' hash is a function of paths and contents.
func TestEmbeddedHash(t *testing.T) {
	a := fstest.MapFS{"kci.yaml": {Data: []byte("a")}, "bpf/x.o": {Data: []byte("b")}}
	b := fstest.MapFS{"kci.yaml": {Data: []byte("a")}, "bpf/x.o": {Data: []byte("c")}}
	a2 := fstest.MapFS{"bpf/x.o": {Data: []byte("b")}, "kci.yaml": {Data: []byte("a")}}
	if embeddedHash(a) != embeddedHash(a2) || embeddedHash(a) == embeddedHash(b) || len(embeddedHash(a)) != 12 {
		t.Errorf("hashes %s %s", embeddedHash(a), embeddedHash(b))
	}
	if id := contentID(); !strings.HasPrefix(id, "binary ") || strings.Contains(id, "unreadable") {
		t.Errorf("contentID = %q", id)
	}
}
