package golden

import (
	"os"
	"path/filepath"
	"testing"
)

// recorder is a testing.TB that records failures instead of stopping.
type recorder struct {
	testing.TB
	failed bool
}

func (r *recorder) Errorf(string, ...any) { r.failed = true }
func (r *recorder) Fatalf(string, ...any) { r.failed = true }
func (r *recorder) Helper()               {}

func TestCheck(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "g.txt")
	*Update = true
	Check(t, path, "one\n")
	*Update = false
	if b, err := os.ReadFile(path); err != nil || string(b) != "one\n" {
		t.Fatalf("-update wrote %q, %v", b, err)
	}
	for _, tc := range []struct {
		got  string
		fail bool
	}{{"one\n", false}, {"two\n", true}} {
		r := &recorder{TB: t}
		Check(r, path, tc.got)
		if r.failed != tc.fail {
			t.Errorf("Check(%q) failed %v, want %v", tc.got, r.failed, tc.fail)
		}
	}
	r := &recorder{TB: t}
	Check(r, filepath.Join(t.TempDir(), "missing"), "x")
	if !r.failed {
		t.Error("a missing golden passed")
	}
}
