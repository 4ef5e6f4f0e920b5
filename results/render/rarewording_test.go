package render

import (
	"bytes"
	"strings"
	"testing"

	"github.com/kci-dev/kci/internal/golden"
	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/results/benchtab"
	"github.com/kci-dev/kci/results/internal/runtest"
	"github.com/kci-dev/kci/results/verdict"
)

// textReport is the plain text report of run.
func textReport(t *testing.T, run *results.Run) string {
	t.Helper()
	var b strings.Builder
	if err := Text(&b, verdict.AnalyzeRun(run), TextOptions{}); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestGoldenRareWording pins, as goldens under
// testdata/TestGoldenRareWording/, wording that no run of
// TestGoldenEveryFormat prints: a determinism check's rows, a Where in
// which no function moved, a run that measured no tree, config drift the
// patch changes, survival cells failing on both kernels, a program that
// loads on the patched kernel only, a one-seed design ratio and a series
// with a cached build, a perf column and an incomplete end.
func TestGoldenRareWording(t *testing.T) {
	// kci test --seed 7: each kernel's boots of one seed.
	seed := runtest.MkRun(results.AccelTCG, results.ClockICount, 3, 3, []runtest.VarSpec{{Name: "hash", Progs: []string{"hash_write"}}},
		func(role string, _ int, _, _ string) float64 {
			if role == results.RolePatched {
				return 530
			}
			return 520
		})
	for i := range seed.Boots {
		seed.Boots[i].Seed = 7
	}
	if r := reportOf(seed, "gtp").Perf.Variants[0].Total; r.Verdict != verdict.TooFew || r.Note != verdict.NoteOneSeed {
		t.Errorf("one seed: %s (%s), want a determinism check", r.Verdict, r.Note)
	}
	golden.Own(t, "one-seed.txt", textReport(t, seed))

	// Exact counts on every seed, the same on both kernels.
	still := runtest.WithExact(runtest.MkRun(results.AccelTCG, results.ClockICount, 3, 3, []runtest.VarSpec{{Name: "hash", Progs: []string{"hash_write"}}},
		func(string, int, string, string) float64 { return 100 }),
		func(string, uint64) map[string]float64 { return map[string]float64{"htab_map_update_elem": 112} })
	tr := reportOf(still, "gtp")
	if tr.Where == nil || tr.Where.Note != "" || len(tr.Where.Rows) != 0 {
		t.Fatalf("where %+v, want a Where without rows", tr.Where)
	}
	h := htmlWhereOf(still, tr)
	golden.Own(t, "no-function-moved.txt", textReport(t, still)+"html: "+h.Heading+" "+h.Note+"\n")

	// A complete run that measured no tree.
	empty := &results.Run{Schema: results.SchemaVersion, ID: "e0e0e0e0"}
	var page bytes.Buffer
	if err := HTML(&page, verdict.AnalyzeRun(empty), ""); err != nil {
		t.Fatal(err)
	}
	golden.Own(t, "no-tree.html", answerBox(t, page.String()))

	// Config drift, one option not deliberate, which the patch changes;
	// and survival cells that fail on both kernels.
	drift := fullRun(results.AccelKVM)
	x := results.Drift{Option: "CONFIG_X", Here: "y", Production: "n"}
	y := results.Drift{Option: "CONFIG_Y", Here: "m", Production: "y", Why: "the bench loads it"}
	z := results.Drift{Option: "CONFIG_Z", Here: "n", Production: "y", Why: "no debug"}
	drift.Trees[0].Drift = []string{x.String(), y.String()}
	drift.Trees[0].Base.Drift = []results.Drift{y, z}
	drift.Trees[0].Patched.Drift = []results.Drift{x, y}
	for i := range drift.Boots {
		for j := range drift.Boots[i].Cells {
			c := &drift.Boots[i].Cells[j]
			c.Pass, c.Observed = c.Carrier == "map", map[bool]string{true: "survives", false: "lost"}[c.Carrier == "map"]
		}
	}
	if ch := reportOf(drift, "gtp").Changes; len(ch) != 0 {
		t.Errorf("survival changes %+v, want none", ch)
	}
	golden.Own(t, "drift-and-survival.txt", textReport(t, drift))

	// A program that fails to load on the base kernel only.
	tab, notes := loadsTable([]verdict.LoadRow{{Variant: "cnt", Program: "cnt_egress",
		Base: verdict.LoadSide{Failed: "load program: invalid argument\nverifier log"}, Patched: verdict.LoadSide{VerifiedInsns: "9", Boots: 1}}})
	golden.Own(t, "loads-now.txt", tab.text("")+strings.Join(notes, "\n")+"\n")

	// Two designs measured on one seed: a ratio without an interval.
	one := &results.Run{}
	for _, tree := range []string{"ext", "gtp"} {
		one.Boots = append(one.Boots, results.Boot{Seq: len(one.Boots) + 1, Tree: tree, Role: results.RoleBase, Rep: 1, Seed: 1, Clock: results.ClockICount,
			Variants: []results.VariantResult{costVariant("none", 4_000_000, 0, 10_000), costVariant(tree, 5_000_000, 500_000, 10_000)}})
	}
	golden.Own(t, "bench-one-seed.txt", BenchString(benchtab.BuildBench(one)))

	// A series: a cached build, a perf change, an incomplete end.
	s := &results.Series{Incomplete: true, IncompleteReason: "interrupted", Trees: []results.SeriesTree{{Tree: "gtp", Patches: []results.PatchResult{
		{Index: 1, Of: 2, Subject: "a", Apply: results.StepOK, Build: results.StepOK, CacheHit: true,
			Perf: []results.ProgDelta{{Key: "gtp-gtp/gtp_write", Value: 100, Before: 100, Against: 0}}},
		{Index: 2, Of: 2, Subject: "b", Apply: results.StepOK, Build: results.StepOK,
			Perf: []results.ProgDelta{{Key: "gtp-gtp/gtp_write", Value: 110, Before: 100, Pct: 10, Against: 1}}},
	}, Culprits: []results.Culprit{{Patch: 2, Of: 2, Subject: "b", Key: "gtp-gtp/gtp_write", Before: 100, After: 110, Pct: 10, Unit: "instruction-time"}}}}}
	var st strings.Builder
	if err := SeriesText(&st, s); err != nil {
		t.Fatal(err)
	}
	golden.Own(t, "series.txt", st.String())
	golden.Own(t, "series.md", SeriesMarkdown(s))
}
