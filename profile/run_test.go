package profile

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
)

func TestStem(t *testing.T) {
	e := Entry{Tree: "gtp-x", Role: RolePatched, Rep: 12, Variant: "gtp-gtpchurn"}
	if e.Stem() != "gtp-x-patched-rep12-gtp-gtpchurn" {
		t.Fatalf("stem %q", e.Stem())
	}
	back, ok := parseStem(e.Stem())
	if !ok || back.Tree != e.Tree || back.Role != e.Role || back.Rep != e.Rep || back.Variant != e.Variant {
		t.Errorf("parseStem = %+v, %v", back, ok)
	}
	if _, ok := parseStem("stock-diff-hash"); ok {
		t.Error("a diff stem parsed as an entry")
	}
}

func TestWriterAndRender(t *testing.T) {
	run := t.TempDir()
	w, err := NewWriter(run)
	if err != nil {
		t.Fatal(err)
	}
	base := Entry{Tree: "stock", Role: RoleBase, Rep: 1, Variant: "hash", Kernel: "6.12.117", Accel: "tcg", CPUs: []int{0, 1}, FreqHz: 99, Window: 3 * time.Second}
	patched := base
	patched.Role = RolePatched
	if _, err := w.Add(base, "kci-guest;a;upd 20\nkci-guest;a;other 20\n"); err != nil {
		t.Fatal(err)
	}
	e, err := w.Add(patched, "kci-guest;a;upd 60\nkci-guest;a;other 20\n")
	if err != nil {
		t.Fatal(err)
	}
	if e.Samples != 80 || e.SVG != "stock-patched-rep1-hash.svg" {
		t.Errorf("entry %+v", e)
	}
	failed := base
	failed.Variant, failed.Error = "lru", "perf_event_open: no such device"
	if _, err := w.Add(failed, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Add(Entry{Tree: "stock", Role: RoleBase, Rep: 1, Variant: "cnt"}, "garbage"); err == nil {
		t.Error("unparsable payload: want an error")
	}
	set, err := w.Finish(10)
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Diffs) != 1 || set.Diffs[0].Variant != "hash" {
		t.Fatalf("diffs %+v, want one for hash", set.Diffs)
	}
	dir := filepath.Join(run, Dir)
	for _, f := range []string{
		"stock-base-rep1-hash.folded", "stock-base-rep1-hash.svg", "stock-base-rep1-hash.pb.gz",
		"stock-patched-rep1-hash.svg", "stock-hash-diff.txt", "stock-hash-diff.md", "stock-hash-diff.svg",
		"summary.md", "index.json",
	} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	txt, _ := os.ReadFile(filepath.Join(dir, "stock-hash-diff.txt"))
	if !strings.Contains(string(txt), "+25.00    50.00    75.00") {
		t.Errorf("diff text:\n%s", txt)
	}
	sum, _ := os.ReadFile(filepath.Join(dir, "summary.md"))
	for _, want := range []string{"profile failed: perf_event_open: no such device", "| `upd` | kernel | 75.00 |", "stock-hash-diff.svg", "tcg · CPUs 0,1 · 99 Hz · 3s window"} {
		if !strings.Contains(string(sum), want) {
			t.Errorf("summary lacks %q:\n%s", want, sum)
		}
	}
	f, _ := os.Open(filepath.Join(dir, "stock-base-rep1-hash.pb.gz"))
	pp, err := profile.Parse(f)
	f.Close()
	if err != nil || pp.Period != int64(time.Second)/99 {
		t.Errorf("pprof: %v, period %v", err, pp)
	}

	// Re-render from the folded files alone (no index, no SVGs).
	os.Remove(filepath.Join(dir, "index.json"))
	os.Remove(filepath.Join(dir, "stock-base-rep1-hash.svg"))
	os.Remove(filepath.Join(dir, "stock-hash-diff.svg"))
	set2, err := Render(run, 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(set2.Entries) != 2 || len(set2.Diffs) != 1 {
		t.Errorf("rendered %d entries %d diffs, want 2 and 1", len(set2.Entries), len(set2.Diffs))
	}
	for _, f := range []string{"stock-base-rep1-hash.svg", "stock-hash-diff.svg", "index.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	var b bytes.Buffer
	if err := WriteSummary(&b, dir, set2, SummaryOptions{TopN: 5}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "upd") || !strings.Contains(b.String(), filepath.Join(dir, "stock-base-rep1-hash.svg")) {
		t.Errorf("text summary:\n%s", b.String())
	}
	b.Reset()
	if err := WriteSummary(&b, dir, set2, SummaryOptions{TopN: 5, Markdown: true, LinkPrefix: "profiles/"}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "[stock-hash-diff.svg](profiles/stock-hash-diff.svg)") {
		t.Errorf("markdown summary links:\n%s", b.String())
	}
}

func TestRenderEmpty(t *testing.T) {
	if _, err := Render(t.TempDir(), 5); err == nil {
		t.Error("a run without profiles: want an error")
	}
}
