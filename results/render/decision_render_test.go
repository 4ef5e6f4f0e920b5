package render

import (
	"strings"
	"testing"

	"github.com/kci-dev/kci/results"
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
	ab := compareOf(run, "gtp")
	tot := ab.Variants[0].Total
	if tot.Patched.N != 6 || tot.Patched.Max > 1000 {
		t.Errorf("patched n=%d max=%.0f: a failed boot's numbers entered the statistics", tot.Patched.N, tot.Patched.Max)
	}
	if len(ab.Excluded) != 2 || ab.Excluded[0].Kind != "boot-error" || ab.Excluded[1].Kind != "infra" {
		t.Errorf("excluded %+v, want both failed boots listed", ab.Excluded)
	}
	var bench strings.Builder
	BenchFormat(&bench, run, "gtp", results.RolePatched)
	if strings.Contains(bench.String(), "50000.000") {
		t.Errorf("a failed boot's numbers are in the benchstat file:\n%s", bench.String())
	}
	run.Boots[len(run.Boots)-1].Error = "" // an infra failure is neither blamed nor counted; a clean boot is
	if n := compareOf(run, "gtp").Variants[0].Total.Patched.N; n != 7 {
		t.Errorf("n=%d after the boot succeeds, want 7", n)
	}
}

func TestScaleWarningsNameTheBoots(t *testing.T) {
	run := runtest.AbRun("gtp", results.AccelTCG, runtest.Normal(1, 3, 100, 0.01), runtest.Normal(2, 3, 100, 0.01))
	for i := range run.Boots {
		run.Boots[i].TSCkHz, run.Boots[i].Clocksource = 2995000, "tsc"
	}
	if w := compareOf(run, "gtp").Warnings; len(w) != 0 {
		t.Fatalf("uniform boots flagged: %v", w)
	}
	run.Boots[3].TSCkHz = 2995000 + 1000 // 0.03 %: within tolerance
	run.Boots[4].TSCkHz = 2890000        // −3.5 %
	run.Boots[1].Clocksource = "hpet"
	w := compareOf(run, "gtp").Warnings
	if len(w) != 2 || !strings.Contains(w[0], "boot 5 (base rep 3) 2890000 kHz") || strings.Contains(w[0], "boot 4") ||
		!strings.Contains(w[1], `boot 2 (patched rep 1) "hpet"`) {
		t.Errorf("warnings %q", w)
	}
	var txt strings.Builder
	Text(&txt, verdict.AnalyzeRun(run), TextOptions{})
	if !strings.Contains(txt.String(), "warning: guest tsc_khz differs") || !strings.Contains(Markdown(verdict.AnalyzeRun(run), "gtp"), "tsc\\_khz differs") && !strings.Contains(Markdown(verdict.AnalyzeRun(run), "gtp"), "tsc_khz differs") {
		t.Errorf("scale warnings missing from the reports")
	}
	if c := concludeOf(run, "gtp"); !strings.Contains(c.Summary, "clocksource differs") {
		t.Errorf("summary lacks the clocksource flag: %q", c.Summary)
	}
}

// Instruction-time numbers are labelled as such everywhere, never as real
// ns.
func TestDeterministicLabels(t *testing.T) {
	run := runtest.IcountRun(t, func(string, string) float64 { return 1 })
	var txt strings.Builder
	Text(&txt, verdict.AnalyzeRun(run), TextOptions{})
	md := Markdown(verdict.AnalyzeRun(run), "gtp")
	var bench strings.Builder
	BenchFormat(&bench, run, "gtp", results.RoleBase)
	for what, s := range map[string]string{"text": txt.String(), "markdown": md, "benchstat": bench.String()} {
		if !strings.Contains(s, results.InstructionTimeLabel) {
			t.Errorf("%s lacks %q", what, results.InstructionTimeLabel)
		}
		if strings.Contains(s, "performance, ns/pkt") || strings.Contains(s, "Performance, ns/pkt") || strings.Contains(s, " ns/pkt\n") {
			t.Errorf("%s shows instruction time as real ns:\n%s", what, s)
		}
	}
	if !strings.Contains(bench.String(), "insn-ns/pkt\n") || !strings.Contains(txt.String(), "per-seed means") || strings.Contains(txt.String(), "p adj") {
		t.Errorf("benchstat unit or deterministic table wrong:\n%s\n%s", bench.String(), txt.String())
	}
	dir := t.TempDir()
	if err := results.Save(dir, run); err != nil {
		t.Fatal(err)
	}
	tables, err := verdict.AggTrees([]string{dir}, nil)
	if err != nil || len(tables) == 0 || !strings.Contains(tables[0].Title, results.InstructionTimeLabel) {
		t.Errorf("agg title: %v %+v", err, tables)
	}
	js, err := JSON(verdict.AnalyzeRun(run))
	if err != nil || !strings.Contains(string(js), `"clock": "icount"`) || !strings.Contains(string(js), `"spread_pct"`) {
		t.Errorf("JSON report of a deterministic run: %v", err)
	}
}
