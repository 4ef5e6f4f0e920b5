package render

import (
	"encoding/json"
	"html"
	"strings"
	"testing"

	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/results/internal/runtest"
	"github.com/kci-dev/kci/results/verdict"
)

// A program's call rows (call:<prog>/instructions and /modelled-cycles)
// are in their own units wherever they show: the table's legend, the
// JSON's rows, the charts' unit blocks; never ns.

func callsAnalysis() *verdict.Analysis { return verdict.AnalyzeRun(runtest.CallsRun()) }

func TestCallRowsText(t *testing.T) {
	var b strings.Builder
	if err := Text(&b, callsAnalysis(), TextOptions{}); err != nil {
		t.Fatal(err)
	}
	s := flatText(b.String())
	for _, want := range []string{
		"call:hash_write/instructions 150.0 151.0 +0.7%",
		"call:hash_write/modelled-cycles 400.0 641.0 +60.2%",
		"(call:<prog> rows: a program's calls in bpf_stats' scope, " + results.InstructionsLabel + " or " + results.ModelledCyclesLabel,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("report.txt lacks %q:\n%s", want, b.String())
		}
	}
}

func TestCallRowsJSON(t *testing.T) {
	js, err := JSON(callsAnalysis())
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Trees []struct {
			Perf struct {
				Variants []struct {
					Programs []jsonRow `json:"programs"`
				} `json:"variants"`
			} `json:"perf"`
		} `json:"trees"`
	}
	if err := json.Unmarshal(js, &rep); err != nil {
		t.Fatal(err)
	}
	units := map[string]string{}
	for _, tr := range rep.Trees {
		for _, v := range tr.Perf.Variants {
			for _, r := range v.Programs {
				units[r.Name] = r.Unit + " / " + r.Effect.Metric
			}
		}
	}
	for name, want := range map[string]string{
		"call:hash_write/instructions":    results.InstructionsLabel + " / " + verdict.ExactCountMetric,
		"call:hash_write/modelled-cycles": results.ModelledCyclesLabel + " / " + verdict.CacheModelMetric,
	} {
		if units[name] != want {
			t.Errorf("%s: %q, want %q", name, units[name], want)
		}
	}
}

func TestCallRowsHTML(t *testing.T) {
	var b strings.Builder
	if err := HTML(&b, callsAnalysis(), ""); err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, blk := range chartsRE.FindAllStringSubmatch(b.String(), -1) {
		for _, f := range figureRE.FindAllStringSubmatch(blk[2], -1) {
			_, name, _ := strings.Cut(html.UnescapeString(f[1]), "/")
			if !verdict.IsCallRow(name) {
				continue
			}
			found++
			if want := verdict.RowUnit(name); blk[1] != want {
				t.Errorf("%s charted among %q rows, want %q", name, blk[1], want)
			}
		}
	}
	if found != 2 {
		t.Errorf("%d call rows charted, want 2", found)
	}
}
