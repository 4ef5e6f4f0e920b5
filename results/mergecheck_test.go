package results_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/results/internal/runtest"
)

// saveShard writes a small A/B run with id and command line into
// root/name and returns the directory.
func saveShard(t *testing.T, root, name, id string, args ...string) string {
	t.Helper()
	r := runtest.AbRun("gtp", results.AccelKVM, runtest.Normal(30, 3, 100, 0.01), runtest.Normal(40, 3, 100, 0.01))
	r.ID, r.Args = id, args
	d := filepath.Join(root, name)
	if err := results.Save(d, r); err != nil {
		t.Fatal(err)
	}
	return d
}

// The same shard twice doubled n (cnt p 0.310 -> 0.119): every way of
// naming it twice is refused, and nothing is written to --out.
func TestMergeDirsRefusesTheSameShardTwice(t *testing.T) {
	root := t.TempDir()
	a := saveShard(t, root, "a", "aaaa0001", "kci", "test", "--shard", "1/2", "p.patch")
	if err := os.Symlink(a, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	copyOfA := saveShard(t, root, "copy", "aaaa0001", "kci", "test", "--shard", "1/2", "p.patch")
	rerun := saveShard(t, root, "rerun", "cccc0003", "kci", "test", "--shard=1/2", "p.patch")
	b := saveShard(t, root, "b", "bbbb0002", "kci", "test", "--shard", "2/2", "p.patch")
	t.Chdir(root)
	for _, tc := range []struct {
		name string
		dirs []string
		want string
	}{
		{"same path", []string{a, a}, "are the same directory"},
		{"relative path", []string{a, "./a/../a"}, "are the same directory"},
		{"symlink", []string{a, filepath.Join(root, "link")}, "are the same directory"},
		{"copied run", []string{a, copyOfA}, "hold the same run aaaa0001"},
		{"shard run twice", []string{a, b, rerun}, "both ran --shard 1/2"},
	} {
		out := filepath.Join(root, "out-"+strings.ReplaceAll(tc.name, " ", "-"))
		_, err := results.MergeDirs(out, tc.dirs...)
		var mi *results.MergeInputError
		if !errors.As(err, &mi) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: MergeDirs(%v) = %v, want a MergeInputError saying %q", tc.name, tc.dirs, err, tc.want)
		}
		if _, serr := os.Stat(out); serr == nil {
			t.Errorf("%s: %s was created before refusing", tc.name, out)
		}
	}
	if _, err := results.MergeDirs(filepath.Join(root, "merged"), a, b); err != nil {
		t.Errorf("two distinct shards refused: %v", err)
	}
}

// A merge over a directory holding a run would mix its console/ in.
func TestMergeDirsRefusesAnOutHoldingARun(t *testing.T) {
	root := t.TempDir()
	a := saveShard(t, root, "a", "aaaa0001", "kci", "test", "--shard", "1/2")
	b := saveShard(t, root, "b", "bbbb0002", "kci", "test", "--shard", "2/2")
	old := saveShard(t, root, "old", "dddd0004")
	before, _ := os.ReadFile(filepath.Join(old, results.RunFile))
	for _, out := range []string{old, a} {
		_, err := results.MergeDirs(out, a, b)
		var hr *results.HoldsRunError
		if !errors.As(err, &hr) {
			t.Errorf("MergeDirs(out=%s) = %v, want HoldsRunError", out, err)
		}
	}
	after, _ := os.ReadFile(filepath.Join(old, results.RunFile))
	if string(before) != string(after) {
		t.Error("the earlier run's record changed")
	}
}

func TestRecorderNeverOverwritesARun(t *testing.T) {
	dir := saveShard(t, t.TempDir(), "run", "eeee0005")
	if _, err := results.NewRecorder(dir, ""); err == nil || !strings.Contains(err.Error(), "holds a run eeee0005") {
		t.Errorf("NewRecorder over a run: %v", err)
	}
	to, err := results.SetAside(dir, time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	if r, err := results.Load(to); err != nil || r.ID != "eeee0005" {
		t.Errorf("set-aside run at %s: %v %v", to, r, err)
	}
	if _, err := results.NewRecorder(dir, ""); err != nil {
		t.Errorf("NewRecorder after SetAside: %v", err)
	}
}
