package job

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/results/render"
	"github.com/kci-dev/kci/results/verdict"
	"github.com/kci-dev/kci/wire"
)

func TestProfilesWriteRun(t *testing.T) {
	dir := t.TempDir()
	var log strings.Builder
	p, err := newProfiles(dir, func(f string, a ...any) { log.WriteString(strings.TrimSpace(f) + "\n") })
	if err != nil {
		t.Fatal(err)
	}
	w := 3 * time.Second
	p.add("stock", "base", 1, "6.12.117", "tcg", []wire.Profile{
		{Variant: "hash", Folded: "kci-guest;htab_map_update_elem 4\nkci-guest;other 6\n", FreqHz: 99, Window: w},
		{Variant: "lru", Error: "perf_event_open: ENODEV"},
	})
	p.add("stock", "patched", 1, "6.12.117-dirty", "tcg", []wire.Profile{
		{Variant: "hash", Folded: "kci-guest;htab_map_update_elem 8\nkci-guest;other 2\n", FreqHz: 99, Window: w},
	})
	set, err := p.finish()
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Entries) != 3 || len(set.Diffs) != 1 {
		t.Fatalf("set: %d entries, %d diffs", len(set.Entries), len(set.Diffs))
	}
	for _, f := range []string{"stock-base-rep1-hash.svg", "stock-patched-rep1-hash.pb.gz", "stock-hash-diff.md", "summary.md"} {
		if _, err := os.Stat(filepath.Join(dir, "profiles", f)); err != nil {
			t.Error(err)
		}
	}
	md, _ := os.ReadFile(filepath.Join(dir, "profiles", "stock-hash-diff.md"))
	if !strings.Contains(string(md), "| `htab_map_update_elem` | +40.00 | 40.00 | 80.00 |") {
		t.Errorf("diff:\n%s", md)
	}
	sec, err := p.section(dir, set)
	if err != nil {
		t.Fatal(err)
	}
	// The section goes through the renderer, after the run's own report.
	run := &results.Run{Schema: results.SchemaVersion, ID: "00000001", Trees: []results.Tree{{Name: "stock"}}}
	if err := render.WriteReports(dir, verdict.AnalyzeRun(run), sec); err != nil {
		t.Fatal(err)
	}
	rep, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	for _, want := range []string{"# kci", "### CPU profiles", "[stock-base-rep1-hash.svg](profiles/stock-base-rep1-hash.svg)", "| `htab_map_update_elem` | kernel | 40.00 |", "profile failed: perf_event_open: ENODEV"} {
		if !strings.Contains(string(rep), want) {
			t.Errorf("report.md lacks %q:\n%s", want, rep)
		}
	}
	if i, j := strings.Index(string(rep), "# kci"), strings.Index(string(rep), "### CPU profiles"); i < 0 || j < i {
		t.Errorf("the profiles section is not after the run's report:\n%s", rep)
	}
	txt, _ := os.ReadFile(filepath.Join(dir, "report.txt"))
	if !strings.Contains(string(txt), "htab_map_update_elem") || strings.Contains(string(txt), "](profiles/") {
		t.Errorf("report.txt lacks the profiles' text section, or has Markdown links:\n%s", txt)
	}
	var nilProfiles *profiles
	nilProfiles.add("stock", "base", 1, "", "", []wire.Profile{{Variant: "hash"}})
	if s, err := nilProfiles.finish(); s != nil || err != nil {
		t.Error("a run without profiling must not write profiles")
	}
}
