package render

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/kci-dev/kci/internal/lines"
	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/results/verdict"
)

// Report is the JSON form of a rendered run: the record's facts plus
// everything computed from it.
type Report struct {
	Schema           int                  `json:"schema"`
	RunID            string               `json:"run_id"`
	Incomplete       bool                 `json:"incomplete"`
	IncompleteReason string               `json:"incomplete_reason,omitempty"`
	Host             results.Host         `json:"host"`
	Emulated         bool                 `json:"emulated"`
	Trees            []verdict.TreeReport `json:"trees"`
	Phases           []results.Phase      `json:"phases,omitempty"`
	// Boots are the run's boots; BootsFromCache of them came from kci's
	// result cache (an earlier boot of the same exact key), not booted.
	Boots          int `json:"boots"`
	BootsFromCache int `json:"boots_from_cache"`
	// Replayed: every boot came from the result cache but the re-check
	// (results.Run.Replayed), e.g. the same kci test run again.
	Replayed bool `json:"replayed"`
}

// BuildReport is the JSON report of an analysed run's given trees (all
// if none are given).
func BuildReport(a *verdict.Analysis, trees ...string) Report {
	run := a.Run
	r := Report{
		Schema: results.SchemaVersion, RunID: run.ID,
		Incomplete: run.Incomplete, IncompleteReason: run.IncompleteReason,
		Host: run.Host, Emulated: run.Emulated(""), Phases: run.Phases,
	}
	r.Boots, r.BootsFromCache = run.BootCount("")
	r.Replayed = run.Replayed("")
	r.Trees = append(r.Trees, a.Select(trees)...) // no tree: null
	return r
}

// MultiReport is the JSON of several runs: one document, whatever their
// number (kci report --format json DIR DIR...).
type MultiReport struct {
	Runs []Report `json:"runs"`
}

// JSONRuns renders several analysed runs as one JSON document.
func JSONRuns(runs []*verdict.Analysis, trees ...string) ([]byte, error) {
	m := MultiReport{Runs: []Report{}}
	for _, a := range runs {
		m.Runs = append(m.Runs, BuildReport(a, trees...))
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("results: encode report: %w", err)
	}
	return append(b, '\n'), nil
}

// JSON renders the report as indented JSON. Undefined numbers (the median
// of no samples, the delta against a zero base) are null.
func JSON(a *verdict.Analysis, trees ...string) ([]byte, error) {
	b, err := json.MarshalIndent(BuildReport(a, trees...), "", "  ")
	if err != nil {
		return nil, fmt.Errorf("results: encode report: %w", err)
	}
	return append(b, '\n'), nil
}

// Section is a part of the report that another stage produced (the
// profiles' top tables): WriteReports places it after the run's own
// sections, so no stage appends to a rendered file afterwards.
type Section struct {
	Text     string // for report.txt
	Markdown string // for report.md
}

// WriteReports writes report.txt, report.md, report.json, report.html
// and the two benchmark-format files per tree of the analysed run into
// dir, with the extra sections after the run's own in the text and
// Markdown reports.
func WriteReports(dir string, a *verdict.Analysis, extra ...Section) error {
	run := a.Run
	var txt strings.Builder
	if err := Text(&txt, a, TextOptions{}); err != nil {
		return err
	}
	md := MarkdownRun(a)
	for _, sec := range extra {
		txt.WriteString(sec.Text)
		md += foldMarkdown(sec.Markdown, lines.Width)
	}
	if err := results.WriteAtomic(filepath.Join(dir, "report.txt"), []byte(txt.String())); err != nil {
		return err
	}
	if err := results.WriteAtomic(filepath.Join(dir, "report.md"), []byte(md)); err != nil {
		return err
	}
	js, err := JSON(a)
	if err != nil {
		return err
	}
	if err := results.WriteAtomic(filepath.Join(dir, "report.json"), js); err != nil {
		return err
	}
	if err := WriteHTML(dir, a); err != nil {
		return err
	}
	for _, tree := range run.TreeNames() {
		bp, pp := benchPaths(dir, tree)
		for role, path := range map[string]string{results.RoleBase: bp, results.RolePatched: pp} {
			var b strings.Builder
			if err := BenchFormat(&b, run, tree, role); err != nil {
				return err
			}
			if err := results.WriteAtomic(path, []byte(b.String())); err != nil {
				return err
			}
		}
	}
	return nil
}
