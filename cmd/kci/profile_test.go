package main

import (
	"github.com/kci-dev/kci/internal/golden"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestProfileRerender re-renders a saved run's profiles from .folded
// files alone, as kci profile RUNDIR does.
func TestProfileRerender(t *testing.T) {
	run := t.TempDir()
	dir := filepath.Join(run, "profiles")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"stock-base-rep1-hash.folded":    "kci-guest;udp_sendmsg;htab_map_update_elem 30\nkci-guest;udp_sendmsg 70\n",
		"stock-patched-rep1-hash.folded": "kci-guest;udp_sendmsg;htab_map_update_elem 60\nkci-guest;udp_sendmsg 40\n",
	}
	for n, body := range files {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := newProfileCmd()
	var out strings.Builder
	cmd.SetOut(&out)
	cmd.SetArgs([]string{run})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	// The output (top symbols, the diff, the files written) is the golden
	// testdata/TestProfileRerender/output.txt.
	golden.Own(t, "output.txt", strings.ReplaceAll(out.String(), run, "$RUN"))
	for _, f := range []string{"stock-base-rep1-hash.svg", "stock-patched-rep1-hash.pb.gz", "stock-hash-diff.md", "summary.md"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
}

func TestIsRunDir(t *testing.T) {
	run := t.TempDir()
	if isRunDir(run) {
		t.Error("an empty directory (a patch directory, say) is not a run")
	}
	os.WriteFile(filepath.Join(run, "run.json"), []byte("{}"), 0o644)
	if !isRunDir(run) {
		t.Error("a directory with run.json is a run")
	}
	if isRunDir(filepath.Join(run, "missing")) {
		t.Error("a missing path is not a run")
	}
}
