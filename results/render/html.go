package render

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"path/filepath"
	"sort"
	"strings"

	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/results/verdict"
)

// HTMLFile is the picture of a run, written into every run directory.
const HTMLFile = "report.html"

// htmlRun is what the page template sees. Every string in it came from
// run.json, which the pull request's job wrote: html/template escapes it.
type htmlRun struct {
	ID, Times, Host string
	// CauseLabel and Cause say why the run stopped (runCause).
	CauseLabel, Cause string
	Briefs            []htmlBrief
	// Key names the kernels that have a dot in some chart, for the
	// legend above the charts (none: no legend).
	Key       []htmlKey
	Trees     []htmlTree
	Boots     []htmlBoot
	BootChart template.HTML
	Phases    []htmlPhase
	Flames    []string // paths relative to the run directory
}

type htmlTree struct {
	Name, Kernels, Config, Legend string
	Patches                       []string
	// Rows are the changed rows, shown first; Folded the others, folded
	// below them (FoldedN of them); each a block of charts per unit.
	Rows, Folded []htmlCharts
	FoldedN      int
	Survival     []verdict.SurvivalRow
	Excluded     []string
	Where        *htmlWhere
	Coverage     []string // the patch's code in the windows, a line a hunk
}

// htmlWhere is the Where section: a heading (or why there is none) and
// the table's cells, escaped by the template.
type htmlWhere struct {
	Heading, Note string
	Header        []string
	Rows          [][]string
}

// htmlCharts are charts of one unit: rows of different units (ns, the
// cache model's cycles) never share an axis, nor a block of charts.
type htmlCharts struct {
	Unit, Note string
	Rows       []htmlRow
}

// addChart files row under its unit's block, in order of first use.
func addChart(groups []htmlCharts, unit string, row htmlRow) []htmlCharts {
	for i := range groups {
		if groups[i].Unit == unit {
			groups[i].Rows = append(groups[i].Rows, row)
			return groups
		}
	}
	g := htmlCharts{Unit: unit, Rows: []htmlRow{row}}
	switch unit {
	case results.ModelledCyclesLabel:
		g.Note = "kci's cache model: a model, not a measurement, and not ns"
	case results.InstructionsLabel:
		g.Note = "exact guest instructions (kci's QEMU plugin), not ns"
	}
	return append(groups, g)
}

// chartUnit is the unit of a row's chart axis: the tree's ns, the cache
// model's cycles, or a call row's instructions.
func chartUnit(ab verdict.TreeAB, name string) string {
	if u := verdict.RowUnit(name); u != verdict.NsUnit {
		return u
	}
	return ab.Metric() + " " + verdict.NsUnit
}

type htmlRow struct {
	Label, Change, Verdict, Class string
	BaseN, PatchedN               int
	Chart                         template.HTML
}

type htmlBoot struct {
	Seq, Rep                 int
	Tree, Role, Clock, Error string
	Seed                     uint64
	Ready                    string
}

type htmlPhase struct{ Name, Tree, Kernel, Duration string }

// htmlKey is one kernel in the dots' legend: its CSS class and name.
type htmlKey struct{ Class, Name string }

// dotsKey lists the kernels with at least one dot in the trees' charts.
func dotsKey(trees []htmlTree) []htmlKey {
	var base, patched bool
	for _, t := range trees {
		for _, g := range append(append([]htmlCharts(nil), t.Rows...), t.Folded...) {
			for _, r := range g.Rows {
				base = base || r.BaseN > 0
				patched = patched || r.PatchedN > 0
			}
		}
	}
	var k []htmlKey
	if base {
		k = append(k, htmlKey{"b", results.RoleBase})
	}
	if patched {
		k = append(k, htmlKey{"p", results.RolePatched})
	}
	return k
}

// HTML writes the analysed run's picture: a self-contained page (no
// script, no network) with, per tree and program, every boot's value for
// base and patched with the interval (gonum/plot SVG inline), the
// survival grid, per-boot timings and links to the flame graphs found
// under dir.
func HTML(w io.Writer, a *verdict.Analysis, dir string) error {
	run := a.Run
	v := htmlRun{ID: run.ID, Times: runTimes(run), Host: hostLine(run)}
	for _, tr := range a.Trees {
		v.Briefs = append(v.Briefs, badgeOf(*tr.Brief))
		ht, err := htmlTreeOf(run, tr)
		if err != nil {
			return err
		}
		v.Trees = append(v.Trees, ht)
	}
	changedFirst(v.Trees, v.Briefs)
	v.Key = dotsKey(v.Trees)
	v.CauseLabel, v.Cause = runCause(run, len(v.Briefs) > 0)
	boots := verdict.SortedBoots(run)
	for _, b := range boots {
		v.Boots = append(v.Boots, htmlBoot{Seq: b.Seq, Rep: b.Rep, Tree: b.Tree, Role: b.Role, Clock: b.Clock,
			Error: b.Error, Seed: b.Seed, Ready: fmtDuration(b.BootToReady)})
	}
	if len(boots) > 0 {
		c, err := bootChart(boots)
		if err != nil {
			return err
		}
		v.BootChart = c
	}
	for _, p := range run.Phases {
		v.Phases = append(v.Phases, htmlPhase{p.Name, p.Tree, p.Kernel, fmtDuration(p.Duration)})
	}
	v.Flames = flameGraphs(dir)
	var buf bytes.Buffer
	if err := pageTemplate.Execute(&buf, v); err != nil {
		return fmt.Errorf("results: render %s: %w", HTMLFile, err)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// WriteHTML writes the analysed run's report.html into its directory.
func WriteHTML(dir string, a *verdict.Analysis) error {
	var buf bytes.Buffer
	if err := HTML(&buf, a, dir); err != nil {
		return err
	}
	return results.WriteAtomic(filepath.Join(dir, HTMLFile), buf.Bytes())
}

func htmlTreeOf(run *results.Run, tr verdict.TreeReport) (htmlTree, error) {
	ab := tr.Perf
	ht := htmlTree{Name: tr.Tree, Patches: tr.Patches, Survival: tr.Survival, Excluded: excludedLines(ab.Excluded),
		Legend: strings.Join(abLegend(ab), "; ") + "."}
	if tr.Base != "" || tr.Patched != "" {
		ht.Kernels = "base " + orDash(tr.Base) + " → patched " + orDash(tr.Patched)
	}
	ht.Config = strings.Join(configLine(run, tr), " ")
	ht.Where, ht.Coverage = htmlWhereOf(run, tr), htmlCoverageOf(tr)
	for _, va := range ab.Variants {
		for i, r := range append([]verdict.Row{va.Total}, va.Programs...) {
			if !r.Ran() {
				continue
			}
			e := verdict.RowChange(ab, va.Variant, r)
			label := e.Label()
			if i == 0 {
				label += " total"
			}
			unit := chartUnit(ab, r.Name)
			chart, err := rowChart(ab, label, unit, r)
			if err != nil {
				return ht, err
			}
			row := htmlRow{Label: label, Change: fmtChange(e), Verdict: rowVerdict(r, e, ab.MinEffectPct),
				Class: "same", BaseN: r.Base.N, PatchedN: r.Patched.N, Chart: chart}
			if !verdict.Changed(r) {
				ht.Folded, ht.FoldedN = addChart(ht.Folded, unit, row), ht.FoldedN+1
				continue
			}
			row.Class = "faster"
			if r.Verdict == verdict.Slower {
				row.Class = "slower"
			}
			ht.Rows = addChart(ht.Rows, unit, row)
		}
	}
	return ht, nil
}

// flameGraphs lists the flame graph SVGs kci test --profile left under
// dir/profiles, as links relative to report.html.
func flameGraphs(dir string) []string {
	if dir == "" {
		return nil
	}
	matches, _ := filepath.Glob(filepath.Join(dir, "profiles", "*.svg")) // only a malformed pattern errs
	var out []string
	for _, m := range matches {
		if rel, err := filepath.Rel(dir, m); err == nil {
			out = append(out, filepath.ToSlash(rel))
		}
	}
	sort.Strings(out)
	return out
}

func cellClass(c *verdict.CellState) string {
	switch {
	case c == nil:
		return "none"
	case c.Pass():
		return "ok"
	}
	return "fail"
}

var pageTemplate = template.Must(template.New("page").Funcs(template.FuncMap{
	"cell":      cellText,
	"cellClass": cellClass,
	"details":   func(b htmlBrief) []string { return Details(b.Brief) },
}).Parse(pageHTML))
