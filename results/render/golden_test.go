package render

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/kci-dev/kci/results"
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

// golden compares got with dir/name, or rewrites it with -update
// (schema_test.go's flag).
func golden(t *testing.T, dir, name, got string) {
	t.Helper()
	path := filepath.Join(dir, name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run %s -update to write it)", err, t.Name())
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file (go test -run %s -update rewrites it):\n--- got\n%s\n--- want\n%s", path, t.Name(), got, want)
	}
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
		golden(t, dir, "report.txt.golden", b.String())
	}
}

func TestGoldenMarkdown(t *testing.T) {
	for _, dir := range runFixtures(t) {
		golden(t, dir, "report.md.golden", MarkdownRun(verdict.AnalyzeRun(loadRun(t, dir))))
	}
}

func TestGoldenBrief(t *testing.T) {
	for _, dir := range runFixtures(t) {
		golden(t, dir, "brief.txt.golden", BriefText(verdict.AnalyzeRun(loadRun(t, dir)), nil, TextWidth))
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
// and boots, and what each "no change" would have shown; the table
// drops the programs that never ran and names the metric once.
func TestBriefFirst(t *testing.T) {
	var b strings.Builder
	if err := Text(&b, verdict.AnalyzeRun(loadDemo(t)), TextOptions{}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	lines := strings.Split(out, "\n")
	if !strings.HasPrefix(lines[2], "gtp: faster (") || !strings.Contains(lines[2], "gtp/gtp_write -41.6% [-41.8, -41.4], 3+3 boots") {
		t.Errorf("third line is not gtp's answer with its interval and boots: %q", lines[2])
	}
	for _, bad := range []string{"gtp_reap", "((", "neutral —", "delta", "shift"} {
		if strings.Contains(out, bad) {
			t.Errorf("text report has %q:\n%s", bad, out)
		}
	}
	if n := strings.Count(out, "skipped"); n != 1 {
		t.Errorf("skipped variants on %d lines, want 1", n)
	}
	if !strings.Contains(out, "would show") {
		t.Errorf("no 'would show' for the no-change rows")
	}
	md := MarkdownRun(verdict.AnalyzeRun(loadDemo(t)))
	if strings.Contains(md, "⚠️") {
		t.Errorf("a speed-up is shown as a warning:\n%s", md)
	}
}

// A program that never ran is no benchmark sample: benchstat refuses
// zeros ("summaries must be >0").
func TestBenchFormatSkipsProgramsThatNeverRan(t *testing.T) {
	var b strings.Builder
	if err := BenchFormat(&b, loadDemo(t), "gtp", results.RoleBase); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "gtp_reap") || !strings.Contains(b.String(), "Benchmarkgtp/gtp_write ") {
		t.Errorf("bench file lists the never-run gtp_reap, or lacks gtp_write:\n%s", b.String())
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
// trees asked for and no program that never ran.
func TestAggRunTables(t *testing.T) {
	tables, err := verdict.AggTrees([]string{demoDir}, []string{"gtp"})
	if err != nil {
		t.Fatal(err)
	}
	out := AggString(tables[0])
	for _, want := range []string{"total median ± spread", results.InstructionTimeLabel, "gtp-gtp", "gtp_write"} {
		if !strings.Contains(out, want) {
			t.Errorf("agg table lacks %q:\n%s", want, out)
		}
	}
	for _, bad := range []string{"ext-", "gtp_reap"} {
		if strings.Contains(out, bad) {
			t.Errorf("agg table has %q:\n%s", bad, out)
		}
	}
}

var update = flag.Bool("update", false, "rewrite the golden files under ../testdata from the fixtures")
