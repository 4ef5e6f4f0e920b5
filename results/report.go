package results

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"strings"
)

// Report is the JSON form of a rendered run: the record's facts plus
// everything computed from it.
type Report struct {
	Schema           int          `json:"schema"`
	RunID            string       `json:"run_id"`
	Incomplete       bool         `json:"incomplete"`
	IncompleteReason string       `json:"incomplete_reason,omitempty"`
	Host             Host         `json:"host"`
	Emulated         bool         `json:"emulated"`
	Trees            []TreeReport `json:"trees"`
	Phases           []Phase      `json:"phases,omitempty"`
	// Boots are the run's boots; BootsFromCache of them came from kci's
	// result cache (an earlier boot of the same exact key), not booted.
	Boots          int `json:"boots"`
	BootsFromCache int `json:"boots_from_cache"`
}

// BuildReport computes the report of the given trees (all if empty).
func BuildReport(run *Run, trees ...string) Report {
	r := Report{
		Schema: SchemaVersion, RunID: run.ID,
		Incomplete: run.Incomplete, IncompleteReason: run.IncompleteReason,
		Host: run.Host, Emulated: run.Emulated(""), Phases: run.Phases,
	}
	r.Boots, r.BootsFromCache = run.BootCount("")
	for _, t := range selectTrees(run, trees) {
		tr := Analyze(run, t)
		b := BriefOf(tr)
		tr.Brief = &b
		for i := range tr.Perf.Variants {
			v := &tr.Perf.Variants[i]
			v.Total.Change = effectPtr(RowEffect(tr.Perf, v.Variant, v.Total))
			for j := range v.Programs {
				v.Programs[j].Change = effectPtr(RowEffect(tr.Perf, v.Variant, v.Programs[j]))
			}
		}
		r.Trees = append(r.Trees, tr)
	}
	return r
}

func effectPtr(e Effect) *Effect { return &e }

// MultiReport is the JSON of several runs: one document, whatever their
// number (kci report --format json DIR DIR...).
type MultiReport struct {
	Runs []Report `json:"runs"`
}

// JSONRuns renders several runs as one JSON document.
func JSONRuns(runs []*Run, trees ...string) ([]byte, error) {
	m := MultiReport{Runs: []Report{}}
	for _, r := range runs {
		m.Runs = append(m.Runs, BuildReport(r, trees...))
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("results: encode report: %w", err)
	}
	return append(b, '\n'), nil
}

// JSON renders the report as indented JSON. Undefined numbers (the median
// of no samples, the delta against a zero base) are null.
func JSON(run *Run, trees ...string) ([]byte, error) {
	b, err := json.MarshalIndent(BuildReport(run, trees...), "", "  ")
	if err != nil {
		return nil, fmt.Errorf("results: encode report: %w", err)
	}
	return append(b, '\n'), nil
}

// finite maps NaN and ±Inf to nil: encoding/json refuses them.
func finite(x float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return &x
}

// MarshalJSON writes undefined statistics as null, and the median's CI
// as numbers: its ends in percent of the median.
func (d Dist) MarshalJSON() ([]byte, error) {
	type plain Dist
	ciLo, ciHi := math.NaN(), math.NaN()
	if d.Median != 0 {
		ciLo, ciHi = (d.Lo/d.Median-1)*100, (d.Hi/d.Median-1)*100
	}
	return json.Marshal(struct {
		plain
		CI     string   `json:"ci,omitempty"` // the string form, left out
		CILo   *float64 `json:"ci_low_pct"`
		CIHi   *float64 `json:"ci_high_pct"`
		Median *float64 `json:"median"`
		Lo     *float64 `json:"lo"`
		Hi     *float64 `json:"hi"`
		CV     *float64 `json:"cv_pct"`
		Min    *float64 `json:"min"`
		Max    *float64 `json:"max"`
		Spread *float64 `json:"spread_pct"`
	}{plain(d), "", finite(ciLo), finite(ciHi), finite(d.Median), finite(d.Lo), finite(d.Hi), finite(d.CV), finite(d.Min), finite(d.Max), finite(d.Spread)})
}

// MarshalJSON writes undefined statistics as null.
func (r Row) MarshalJSON() ([]byte, error) {
	type plain Row
	return json.Marshal(struct {
		plain
		DeltaPct *float64 `json:"delta_pct"`
		P        *float64 `json:"p"`
		PAdj     *float64 `json:"p_adj"`
	}{plain(r), finite(r.DeltaPct), finite(r.P), finite(r.PAdj)})
}

// MarshalJSON writes undefined numbers as null, with the unit and the
// metric beside them.
func (e Effect) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Variant  string   `json:"variant"`
		Name     string   `json:"name"`
		Verdict  Verdict  `json:"verdict"`
		Pct      *float64 `json:"effect_pct"`
		Lo       *float64 `json:"effect_low_pct"`
		Hi       *float64 `json:"effect_high_pct"`
		Show     *float64 `json:"would_show_pct,omitempty"`
		BaseN    int      `json:"base_boots"`
		PatchedN int      `json:"patched_boots"`
		Metric   string   `json:"metric"`
		Unit     string   `json:"unit"`
	}{e.Variant, e.Name, e.Verdict, finite(e.Pct), finite(e.LowPct), finite(e.HighPct), positive(e.WouldShowPct), e.BaseN, e.PatchedN, e.Metric, e.Unit})
}

// MarshalJSON adds what the tree's numbers are: unit and metric.
func (ab TreeAB) MarshalJSON() ([]byte, error) {
	type plain TreeAB
	return json.Marshal(struct {
		plain
		Unit   string `json:"unit"`
		Metric string `json:"metric"`
	}{plain(ab), "ns/pkt", ab.Metric()})
}

func positive(x float64) *float64 {
	if x > 0 {
		return finite(x)
	}
	return nil
}

// MarshalJSON writes an undefined estimate or an unbounded interval end
// as null.
func (s Shift) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Est *float64 `json:"est_pct"`
		Lo  *float64 `json:"lo_pct"`
		Hi  *float64 `json:"hi_pct"`
	}{finite(s.Est), finite(s.Lo), finite(s.Hi)})
}

// WriteReports writes report.txt, report.md, report.json, report.html
// and the two benchmark-format files per tree into dir.
func WriteReports(dir string, run *Run) error {
	var txt strings.Builder
	if err := Text(&txt, run, TextOptions{}); err != nil {
		return err
	}
	if err := writeAtomic(filepath.Join(dir, "report.txt"), []byte(txt.String())); err != nil {
		return err
	}
	if err := writeAtomic(filepath.Join(dir, "report.md"), []byte(MarkdownRun(run))); err != nil {
		return err
	}
	js, err := JSON(run)
	if err != nil {
		return err
	}
	if err := writeAtomic(filepath.Join(dir, "report.json"), js); err != nil {
		return err
	}
	if err := WriteHTML(dir, run); err != nil {
		return err
	}
	for _, tree := range run.TreeNames() {
		bp, pp := benchPaths(dir, tree)
		for role, path := range map[string]string{RoleBase: bp, RolePatched: pp} {
			var b strings.Builder
			if err := BenchFormat(&b, run, tree, role); err != nil {
				return err
			}
			if err := writeAtomic(path, []byte(b.String())); err != nil {
				return err
			}
		}
	}
	return nil
}
