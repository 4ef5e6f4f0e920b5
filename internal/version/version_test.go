package version

import (
	"runtime/debug"
	"testing"
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
		{"no version", debug.BuildInfo{}, "(devel)"},
	} {
		if got := format(&c.bi); got != c.want {
			t.Errorf("%s: format = %q, want %q", c.name, got, c.want)
		}
	}
}
