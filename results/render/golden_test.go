package render

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/kci-dev/kci/internal/golden"
	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/results/benchtab"
	"github.com/kci-dev/kci/results/verdict"
)

// demoDir is a recorded demo run (kci test patches/rht-no-shrink.patch).
const demoDir = "../testdata/demo"

func loadDemo(t *testing.T) *results.Run {
	t.Helper()
	run, err := results.Load(demoDir)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// runFixtures are the run directories under testdata with golden
// reports: the demo-shaped run and any recorded run (testdata/recorded-*).
func runFixtures(t *testing.T) []string {
	t.Helper()
	dirs, err := filepath.Glob("../testdata/recorded-*")
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{demoDir}, dirs...)
}

// benchLine is one sample of a Go benchmark format file.
type benchLine struct {
	name, unit string
	n          int
	value      float64
}

// benchLines are the samples of a Go benchmark format file, failing the
// test on a line that starts like one and does not parse.
func benchLines(t *testing.T, file string) []benchLine {
	t.Helper()
	var out []benchLine
	for _, l := range strings.Split(file, "\n") {
		if !strings.HasPrefix(l, "Benchmark") {
			continue
		}
		var b benchLine
		if _, err := fmt.Sscanf(l, "%s %d %g %s", &b.name, &b.n, &b.value, &b.unit); err != nil {
			t.Fatalf("bench line %q: %v", l, err)
		}
		out = append(out, b)
	}
	return out
}

// reportOf is tree's report in run, as verdict.AnalyzeRun makes it.
// (results/internal/runtest cannot offer it: verdict's own tests import
// runtest, so runtest cannot import verdict.)
func reportOf(run *results.Run, tree string) verdict.TreeReport {
	tr, _ := verdict.AnalyzeRun(run).Tree(tree)
	return tr
}

func loadRun(t *testing.T, dir string) *results.Run {
	t.Helper()
	run, err := results.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

func TestGoldenText(t *testing.T) {
	for _, dir := range runFixtures(t) {
		var b strings.Builder
		if err := Text(&b, verdict.AnalyzeRun(loadRun(t, dir)), TextOptions{}); err != nil {
			t.Fatal(err)
		}
		golden.Check(t, filepath.Join(dir, "report.txt.golden"), b.String())
	}
}

func TestGoldenMarkdown(t *testing.T) {
	for _, dir := range runFixtures(t) {
		golden.Check(t, filepath.Join(dir, "report.md.golden"), MarkdownRun(verdict.AnalyzeRun(loadRun(t, dir))))
	}
}

func TestGoldenBrief(t *testing.T) {
	for _, dir := range runFixtures(t) {
		golden.Check(t, filepath.Join(dir, "brief.txt.golden"), BriefText(verdict.AnalyzeRun(loadRun(t, dir)), nil, TextWidth))
	}
}

// Every line of the text report fits 100 columns: the demo run, and the
// noisy-mode run with failures, survival changes and doctor findings.
func TestTextWidth(t *testing.T) {
	runs := map[string]*results.Run{"tcg": fullRun(results.AccelTCG), "kvm": fullRun(results.AccelKVM)}
	for _, dir := range runFixtures(t) {
		runs[dir] = loadRun(t, dir)
	}
	for name, run := range runs {
		var b strings.Builder
		if err := Text(&b, verdict.AnalyzeRun(run), TextOptions{}); err != nil {
			t.Fatal(err)
		}
		for i, l := range strings.Split(b.String(), "\n") {
			if n := utf8.RuneCountInString(l); n > TextWidth {
				t.Errorf("%s: line %d is %d columns wide (> %d): %q", name, i+1, n, TextWidth, l)
			}
		}
	}
}

// The demo's answer comes first and says what changed, with interval
// and boots, and what each "no change" would have shown. Its words, and
// the table without the programs that never ran, are the demo's goldens
// (TestGoldenEveryFormat); here, the values behind them and that the
// text report opens on the brief.
func TestBriefFirst(t *testing.T) {
	a := verdict.AnalyzeRun(loadDemo(t))
	var b strings.Builder
	if err := Text(&b, a, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	// Line 3 on: the header line, a blank line, then the brief.
	lines := strings.SplitN(b.String(), "\n", 3)
	if len(lines) < 3 || !strings.HasPrefix(lines[2], BriefText(a, nil, TextWidth)) {
		t.Errorf("the text report does not open on the brief:\n%s", b.String())
	}
	gtp, _ := a.Tree("gtp")
	br := gtp.Brief
	if br.State != verdict.Success || br.Outcome != "faster" || len(br.Changed) != 2 {
		t.Fatalf("gtp's brief: %+v, want a success, faster in 2 rows", br)
	}
	type change struct {
		label         string
		pct, lo, hi   string
		base, patched int
	}
	var got []change
	for _, c := range br.Changed {
		got = append(got, change{c.Label(), fmt.Sprintf("%.1f", c.Pct), fmt.Sprintf("%.1f", c.LowPct), fmt.Sprintf("%.1f", c.HighPct), c.BaseN, c.PatchedN})
	}
	if want := []change{{"gtp", "-30.0", "-30.1", "-29.9", 3, 3}, {"gtp/gtp_write", "-41.6", "-41.8", "-41.4", 3, 3}}; !slices.Equal(got, want) {
		t.Errorf("gtp's changes %+v, want %+v", got, want)
	}
	// Every "no change" states the change it would have shown.
	if br.Unchanged != 5 || br.UnchangedShowPct <= 0 || br.UnchangedShowPct > 1.5 {
		t.Errorf("gtp: %d unchanged rows that would show ±%.2f%%, want 5 within ±1.5%%", br.Unchanged, br.UnchangedShowPct)
	}
	// gtp_read's three seeds a side agree within an instruction, but the
	// rhash variant's costs vary with the seed by design: not exact, so
	// untested at 3 seeds rather than "no change".
	var untested []string
	for _, c := range br.Untested {
		untested = append(untested, c.Label())
	}
	if !slices.Contains(untested, "gtp/gtp_read") {
		t.Errorf("gtp's untested rows %v, want gtp/gtp_read among them", untested)
	}
	// gtp_reap never ran: a row of the analysis the reports leave out.
	for _, v := range gtp.Perf.Variants {
		for _, p := range v.Programs {
			if p.Name == "gtp_reap" && p.Ran() {
				t.Errorf("%s/gtp_reap ran: %+v", v.Variant, p)
			}
		}
	}
}

// A program that never ran is no benchmark sample: benchstat refuses
// zeros ("summaries must be >0").
func TestBenchFormatSkipsProgramsThatNeverRan(t *testing.T) {
	var b strings.Builder
	if err := BenchFormat(&b, loadDemo(t), "gtp", results.RoleBase); err != nil {
		t.Fatal(err)
	}
	names := map[string]int{}
	for _, l := range benchLines(t, b.String()) {
		names[l.name]++
	}
	if names["Benchmarkgtp/gtp_reap"] != 0 || names["Benchmarkgtp/gtp_write"] != 3 {
		t.Errorf("bench file has %d gtp_reap and %d gtp_write lines, want 0 and 3 (one a boot):\n%s",
			names["Benchmarkgtp/gtp_reap"], names["Benchmarkgtp/gtp_write"], b.String())
	}
}

// report.json has numbers as numbers and units as fields.
func TestJSONNumbersAndUnits(t *testing.T) {
	b, err := JSON(verdict.AnalyzeRun(loadDemo(t)))
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Trees []struct {
			Perf struct {
				Unit, Metric string
				Variants     []struct {
					Programs []struct {
						Name   string
						Base   map[string]any
						Effect struct {
							Unit, Metric string
							Pct          *float64 `json:"effect_pct"`
							Lo           *float64 `json:"effect_low_pct"`
							Hi           *float64 `json:"effect_high_pct"`
						}
					}
				}
			}
		}
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	p := rep.Trees[0].Perf
	if p.Unit != "ns/pkt" || p.Metric != "instruction-time" {
		t.Errorf("unit %q metric %q, want ns/pkt instruction-time", p.Unit, p.Metric)
	}
	w := p.Variants[2].Programs[0]
	if w.Effect.Unit != "ns/pkt" || w.Effect.Metric != "instruction-time" {
		t.Errorf("gtp_write effect unit %q metric %q", w.Effect.Unit, w.Effect.Metric)
	}
	if w.Name != "gtp_write" || w.Effect.Pct == nil || *w.Effect.Pct > -41 || *w.Effect.Lo > *w.Effect.Pct || *w.Effect.Hi < *w.Effect.Pct {
		t.Errorf("gtp_write effect %+v: want about -41.6 inside its interval", w.Effect)
	}
	if _, ok := w.Base["ci"]; ok {
		t.Errorf("base has the string ci %v", w.Base["ci"])
	}
	if _, ok := w.Base["ci_low_pct"]; !ok {
		t.Errorf("base has no ci_low_pct: %v", w.Base)
	}
}

// --agg over a run: median ± spread, the unit in the title, only the
// trees asked for and no program that never ran; the table is the golden
// testdata/TestAggRunTables/gtp.txt.
func TestAggRunTables(t *testing.T) {
	tables, err := benchtab.AggTrees([]string{demoDir}, []string{"gtp"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tab := range tables {
		for _, v := range tab.Variants {
			if !strings.HasPrefix(v.Variant, "gtp-") {
				t.Errorf("%s: variant %s of another tree", tab.Title, v.Variant)
			}
			for _, p := range v.Programs {
				if p.Name == "gtp_reap" {
					t.Errorf("%s: %s lists gtp_reap, which never ran", tab.Title, v.Variant)
				}
			}
		}
	}
	golden.Own(t, "gtp.txt", AggString(tables[0]))
}
