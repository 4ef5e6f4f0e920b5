package render

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kci-dev/kci/internal/golden"
	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/results/benchtab"
	"github.com/kci-dev/kci/results/internal/runtest"
	"github.com/kci-dev/kci/results/verdict"

	"github.com/kci-dev/kci/internal/failure"
)

// A failed boot's variant results entered the statistics while the boot
// was listed as excluded.
func TestFailedBootExcludedEntirely(t *testing.T) {
	run := runtest.AbRun("gtp", results.AccelKVM, runtest.Normal(70, 6, 500, 0.01), runtest.Normal(71, 6, 500, 0.01))
	crash := runtest.Vr("gtp-x", runtest.Pc{Name: "x_prog", Ns: 5e4})
	run.Boots = append(run.Boots,
		results.Boot{Seq: 13, Tree: "gtp", Role: results.RolePatched, Rep: 7, Error: "Kernel panic - not syncing", ErrorKind: "crash", Variants: []results.VariantResult{crash}},
		results.Boot{Seq: 14, Tree: "gtp", Role: results.RolePatched, Rep: 8, Error: "qemu: cannot allocate memory", ErrorKind: failure.Infra, Variants: []results.VariantResult{crash}})
	ab := reportOf(run, "gtp").Perf
	tot := ab.Variants[0].Total
	if tot.Patched.N != 6 || tot.Patched.Max > 1000 {
		t.Errorf("patched n=%d max=%.0f: a failed boot's numbers entered the statistics", tot.Patched.N, tot.Patched.Max)
	}
	if len(ab.Excluded) != 2 || ab.Excluded[0].Kind != "boot-error" || ab.Excluded[1].Kind != "infra" {
		t.Errorf("excluded %+v, want both failed boots listed", ab.Excluded)
	}
	var bench strings.Builder
	if err := BenchFormat(&bench, run, "gtp", results.RolePatched); err != nil {
		t.Fatal(err)
	}
	totals := 0
	for _, l := range benchLines(t, bench.String()) {
		if l.value > 1000 {
			t.Errorf("a failed boot's numbers are in the benchstat file: %+v", l)
		}
		if l.name == "Benchmarkgtp-x/total" {
			totals++
		}
	}
	if totals != 6 {
		t.Errorf("%d gtp-x totals in the benchstat file, want the 6 good boots'", totals)
	}
	run.Boots[len(run.Boots)-1].Error = "" // an infra failure is neither blamed nor counted; a clean boot is
	if n := reportOf(run, "gtp").Perf.Variants[0].Total.Patched.N; n != 7 {
		t.Errorf("n=%d after the boot succeeds, want 7", n)
	}
}

func TestScaleWarningsNameTheBoots(t *testing.T) {
	run := runtest.AbRun("gtp", results.AccelTCG, runtest.Normal(1, 3, 100, 0.01), runtest.Normal(2, 3, 100, 0.01))
	for i := range run.Boots {
		run.Boots[i].TSCkHz, run.Boots[i].Clocksource = 2995000, "tsc"
	}
	if w := reportOf(run, "gtp").Perf.Warnings; len(w) != 0 {
		t.Fatalf("uniform boots flagged: %v", w)
	}
	run.Boots[3].TSCkHz = 2995000 + 1000 // 0.03 %: within tolerance
	run.Boots[4].TSCkHz = 2890000        // −3.5 %
	run.Boots[1].Clocksource = "hpet"
	// The warnings' words, and where the reports show them, are the
	// goldens testdata/TestScaleWarningsNameTheBoots/.
	a := verdict.AnalyzeRun(run)
	tr, _ := a.Tree("gtp")
	if w := tr.Perf.Warnings; len(w) != 2 {
		t.Errorf("warnings %q, want one for boot 5's tsc_khz and one for boot 2's clocksource", w)
	}
	var txt strings.Builder
	if err := Text(&txt, a, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	golden.Own(t, "warnings.txt", strings.Join(tr.Perf.Warnings, "\n")+"\n")
	golden.Own(t, "report.txt", txt.String())
	golden.Own(t, "comment.md", Markdown(a, "gtp"))
	golden.Own(t, "summary.txt", tr.Conclusion.Summary+"\n")
}

// Instruction-time numbers are labelled as such everywhere, never as real
// ns.
// The words, and the unit of the bench file, are the goldens
// testdata/TestDeterministicLabels/; report.json says the clock and the
// spread.
func TestDeterministicLabels(t *testing.T) {
	run := runtest.IcountRun(t, func(string, string) float64 { return 1 })
	a := verdict.AnalyzeRun(run)
	var txt strings.Builder
	if err := Text(&txt, a, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	var bench strings.Builder
	if err := BenchFormat(&bench, run, "gtp", results.RoleBase); err != nil {
		t.Fatal(err)
	}
	golden.Own(t, "report.txt", txt.String())
	golden.Own(t, "comment.md", Markdown(a, "gtp"))
	golden.Own(t, "bench-gtp-base.txt", bench.String())
	lines := benchLines(t, bench.String())
	if len(lines) == 0 {
		t.Errorf("no samples in the bench file:\n%s", bench.String())
	}
	for _, l := range lines {
		want := "insn-ns/pkt"
		if strings.HasSuffix(l.name, "/total") {
			want = TotalUnitPrefix + want
		}
		if l.unit != want {
			t.Errorf("bench line %+v: unit %q, want %q", l, l.unit, want)
		}
	}
	dir := filepath.Join(t.TempDir(), "run") // the tables' titles name it
	if err := results.Save(dir, run); err != nil {
		t.Fatal(err)
	}
	tables, err := benchtab.AggTrees([]string{dir}, nil)
	if err != nil || len(tables) == 0 {
		t.Fatalf("agg: %v %+v", err, tables)
	}
	if tables[0].Metric != "instruction-time" {
		t.Errorf("agg metric %q, want instruction-time", tables[0].Metric)
	}
	golden.Own(t, "agg.txt", AggString(tables[0]))
	js, err := JSON(a)
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Trees []struct {
			Perf struct {
				Clock    string
				Variants []struct {
					Total struct {
						Base struct {
							Spread *float64 `json:"spread_pct"`
						}
					}
				}
			}
		}
	}
	if err := json.Unmarshal(js, &rep); err != nil {
		t.Fatal(err)
	}
	if p := rep.Trees[0].Perf; p.Clock != results.ClockICount || len(p.Variants) == 0 || p.Variants[0].Total.Base.Spread == nil {
		t.Errorf("JSON report of a deterministic run: clock %q, variants %+v, want icount with a spread", p.Clock, p.Variants)
	}
}
