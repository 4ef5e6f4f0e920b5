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
		r.Trees = append(r.Trees, Analyze(run, t))
	}
	return r
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

// MarshalJSON writes undefined statistics as null.
func (d Dist) MarshalJSON() ([]byte, error) {
	type plain Dist
	return json.Marshal(struct {
		plain
		Median *float64 `json:"median"`
		Lo     *float64 `json:"lo"`
		Hi     *float64 `json:"hi"`
		CV     *float64 `json:"cv_pct"`
		Min    *float64 `json:"min"`
		Max    *float64 `json:"max"`
		Spread *float64 `json:"spread_pct"`
	}{plain(d), finite(d.Median), finite(d.Lo), finite(d.Hi), finite(d.CV), finite(d.Min), finite(d.Max), finite(d.Spread)})
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

// MarshalJSON writes an undefined estimate or an unbounded interval end
// as null.
func (s Shift) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Est *float64 `json:"est_pct"`
		Lo  *float64 `json:"lo_pct"`
		Hi  *float64 `json:"hi_pct"`
	}{finite(s.Est), finite(s.Lo), finite(s.Hi)})
}

// WriteReports writes report.txt, report.md, report.json and the two
// benchmark-format files per tree into dir.
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
