package render

import (
	"encoding/json"
	"html"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/results/benchtab"
	"github.com/kci-dev/kci/results/internal/runtest"
	"github.com/kci-dev/kci/results/verdict"
)

// The cache model's rows (modelled-cycles, cycles-marginal) count
// modelled cycles per packet: every format says so where it shows them,
// and none calls them ns. runtest.CyclesRun's hash variant has both rows
// changed, so they are in the headline, the table and the charts.

// flatText folds the blanks (wrapping) and Markdown's escapes of a report
// into single spaces, so phrases read across line breaks.
func flatText(s string) string {
	s = strings.NewReplacer(`\[`, "[", `\]`, "]", "**", "").Replace(s)
	return strings.Join(strings.Fields(s), " ")
}

// cyclesClause matches a headline's or a list's clause about one of the
// cache model's rows, up to the next clause.
var cyclesClause = regexp.MustCompile(`(modelled-cycles|cycles-marginal) [+-][0-9.]+% [^;)]*`)

// checkCyclesWords fails when the text names a changed cache model row
// without its unit, or labels it ns; and, for a report with the table,
// when the table's legend does not give the rows their unit.
func checkCyclesWords(t *testing.T, format, text string, table bool) {
	t.Helper()
	s := flatText(text)
	clauses := cyclesClause.FindAllString(s, -1)
	if len(clauses) == 0 {
		t.Fatalf("%s: no change of a cache model row in:\n%s", format, text)
	}
	for _, c := range clauses {
		if !strings.Contains(c, "in "+results.ModelledCyclesLabel) || strings.Contains(c, "ns/pkt") {
			t.Errorf("%s: %q: want the row's unit %q, never ns", format, c, results.ModelledCyclesLabel)
		}
	}
	if table {
		want := verdict.CyclesRow + " and " + verdict.CyclesMarginalRow + " rows: " + results.ModelledCyclesLabel
		if !strings.Contains(s, want) {
			t.Errorf("%s: the table's legend does not say %q", format, want)
		}
	}
}

func cyclesAnalysis() *verdict.Analysis { return verdict.AnalyzeRun(runtest.CyclesRun()) }

func TestCyclesUnitText(t *testing.T) {
	a := cyclesAnalysis()
	var b strings.Builder
	if err := Text(&b, a, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	checkCyclesWords(t, "report.txt", b.String(), true)
	checkCyclesWords(t, "brief (text)", BriefText(a, nil, TextWidth), false)
}

func TestCyclesUnitMarkdown(t *testing.T) {
	a := cyclesAnalysis()
	checkCyclesWords(t, "report.md", MarkdownRun(a), true)
	checkCyclesWords(t, "PR comment", MarkdownComment(a, "gtp", "https://example.invalid/report.html"), true)
	checkCyclesWords(t, "brief (Markdown)", BriefRunMarkdown(a, nil, "run"), false)
	// The check run's summary lists the changed rows too.
	tr, _ := a.Tree("gtp")
	checkCyclesWords(t, "check run", tr.Conclusion.Title+"\n"+tr.Conclusion.Summary, false)
}

// jsonRow is what report.json says of a row and of its change.
type jsonRow struct {
	Name   string `json:"name"`
	Unit   string `json:"unit"`
	Effect struct {
		Unit   string `json:"unit"`
		Metric string `json:"metric"`
	} `json:"effect"`
}

func TestCyclesUnitJSON(t *testing.T) {
	js, err := JSON(cyclesAnalysis())
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Trees []struct {
			Perf struct {
				Variants []struct {
					Total    jsonRow   `json:"total"`
					Programs []jsonRow `json:"programs"`
				} `json:"variants"`
			} `json:"perf"`
			Brief struct {
				Changed []struct {
					Name string `json:"name"`
					Unit string `json:"unit"`
				} `json:"changed"`
			} `json:"brief"`
		} `json:"trees"`
	}
	if err := json.Unmarshal(js, &rep); err != nil {
		t.Fatal(err)
	}
	cycles := 0
	for _, tr := range rep.Trees {
		for _, v := range tr.Perf.Variants {
			for _, r := range append([]jsonRow{v.Total}, v.Programs...) {
				want, metric := "ns/pkt", "instruction-time"
				if verdict.IsCyclesRow(r.Name) {
					want, metric = results.ModelledCyclesLabel, verdict.CacheModelMetric
					cycles++
				}
				if r.Unit != want || r.Effect.Unit != want || r.Effect.Metric != metric {
					t.Errorf("row %s: unit %q, effect in %q (%s); want %q (%s)", r.Name, r.Unit, r.Effect.Unit, r.Effect.Metric, want, metric)
				}
			}
		}
		for _, c := range tr.Brief.Changed {
			if verdict.IsCyclesRow(c.Name) != (c.Unit == results.ModelledCyclesLabel) {
				t.Errorf("brief: changed row %s in %q", c.Name, c.Unit)
			}
		}
	}
	if cycles != 3 { // none's modelled-cycles, hash's two
		t.Errorf("%d cache model rows in report.json, want 3", cycles)
	}
}

var (
	chartsRE = regexp.MustCompile(`(?s)<div class="charts" data-unit="([^"]*)">(.*?)</div>`)
	yLabelRE = regexp.MustCompile(`>([^<>]*/pkt)</text>`)
)

// checkChartUnits: every chart block is of one unit, each figure's axis
// says that unit, and the cache model's rows are in theirs.
func checkChartUnits(t *testing.T, page string) {
	t.Helper()
	seen := 0
	for _, blk := range chartsRE.FindAllStringSubmatch(page, -1) {
		unit := blk[1]
		for _, f := range figureRE.FindAllStringSubmatch(blk[2], -1) {
			label, svg := f[1], f[4]
			seen++
			_, name, _ := strings.Cut(label, "/")
			if want := verdict.IsCyclesRow(name); want != (unit == results.ModelledCyclesLabel) {
				t.Errorf("%s charted among %q rows", label, unit)
			}
			axes := yLabelRE.FindAllStringSubmatch(svg, -1)
			if len(axes) != 1 || axes[0][1] != unit {
				t.Errorf("%s: axis labels %v, want one: %q", label, axes, unit)
			}
		}
	}
	if seen != 8 { // the rows that ran: none's 2, hash's total and 5
		t.Errorf("%d figures in unit blocks, want 8", seen)
	}
}

func TestCyclesUnitHTML(t *testing.T) {
	var b strings.Builder
	if err := HTML(&b, cyclesAnalysis(), ""); err != nil {
		t.Fatal(err)
	}
	checkChartUnits(t, b.String())
	checkCyclesWords(t, "report.html", html.UnescapeString(b.String()), true)
}

// The page the browser builds keeps the blocks: a headless Chromium's
// DOM of the cache model's report.
func TestCyclesUnitHTMLInChromium(t *testing.T) {
	bin := chromium(t)
	dir := t.TempDir()
	if err := WriteHTML(dir, cyclesAnalysis()); err != nil {
		t.Fatal(err)
	}
	checkChartUnits(t, string(runChromium(t, bin, filepath.Join(dir, HTMLFile), "--dump-dom")))
}

// kci bench's table names the cache model's rows' unit.
func TestCyclesUnitBench(t *testing.T) {
	run := runtest.CyclesRun()
	for i := range run.Boots {
		run.Boots[i].Role = results.RoleBase
	}
	s := flatText(BenchString(benchtab.BuildBench(run)))
	for _, want := range []string{"[modelled-cycles]: the window in " + results.ModelledCyclesLabel + ", not ns",
		"[cycles-marginal]: modelled-cycles − the same boot's none, " + results.ModelledCyclesLabel} {
		if !strings.Contains(s, want) {
			t.Errorf("bench table lacks %q", want)
		}
	}
}
