package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/kci-dev/kci/results/benchtab"
	"github.com/kci-dev/kci/results/render"
	"github.com/kci-dev/kci/results/verdict"

	"github.com/spf13/cobra"

	"github.com/kci-dev/kci/job"
	"github.com/kci-dev/kci/results"
)

func init() { commands = append(commands, newReportCmd) }

// reportOptions are the flags of kci report.
type reportOptions struct {
	agg        bool
	brief      bool
	merge      bool
	out        string
	format     string
	trees      []string
	failOnPerf float64
	minEffect  float64 // percent; 0: the run's own (or the default)
}

func newReportCmd() *cobra.Command {
	o := reportOptions{failOnPerf: -1}
	cmd := &cobra.Command{
		Use:   "report [--agg] [--merge --out DIR] [--format text|markdown|json|benchstat] DIR...",
		Short: "Re-render saved runs (or the user's bpfstats sets) without rerunning anything",
		Long: `Re-render saved kci runs without rerunning anything.

A kci series run directory (series.json) is shown as kci series RUNDIR
shows it, its culprits decided again from its boot records (--format
text|markdown|json).

--agg prints the cross-set table of the user's bpfstats workflow: DIRs are
directories of <variant>.bpfstats files (raw bpftool -j prog show output,
one directory per repetition set; totals as his mail prints them, mean ±
spread) and/or kci run directories (each repetition one set, base and
patched kernels as separate tables, totals as median ± spread like the main
report, unit in the title). It honours --format text|markdown|json and
--tree, and refuses the flags that decide something.

--merge --out DIR merges shard runs of one job (same trees and kernels,
different repetitions) into one run directory with its reports.

--format benchstat prints every kernel's samples in Go benchmark format
with a "role" key: compare with 'benchstat -col role FILE'. Each run
directory also holds bench-<tree>-base.txt and bench-<tree>-patched.txt
for 'benchstat base patched'.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runReport(cmd.OutOrStdout(), cmd.ErrOrStderr(), args, o)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.agg, "agg", false, "print the user's aggregate table (mean ± spread across sets)")
	f.BoolVar(&o.brief, "brief", false, "print only the answer: one line per tree (verdict, what changed with its interval and boots, what each \"no change\" would have shown)")
	f.BoolVar(&o.merge, "merge", false, "merge shard run directories into --out")
	f.StringVar(&o.out, "out", "", "output run directory for --merge")
	f.StringVar(&o.format, "format", "text", "text, markdown, json or benchstat")
	f.StringSliceVar(&o.trees, "tree", nil, "only these trees (text, markdown, json)")
	f.Float64Var(&o.failOnPerf, "fail-on-regression", -1, "exit 6 when the conclusion calls a variant total slower by more than PCT percent (default: off)")
	f.Float64Var(&o.minEffect, "min-effect", 0, "smallest effect of interest in percent (default: the run's, else 0.5): the deterministic threshold, the noisy-mode equivalence bound")
	return cmd
}

// checkReportFlags refuses flags no report could honour, before any
// directory is read.
func checkReportFlags(o reportOptions) error {
	switch o.format {
	case "text", "markdown", "json", "benchstat":
	default:
		return job.Usagef("report: unknown --format %q (text, markdown, json, benchstat)", o.format)
	}
	if o.minEffect < 0 {
		return job.Usagef("report: --min-effect %g: want a percentage >= 0", o.minEffect)
	}
	if o.failOnPerf < 0 && o.failOnPerf != -1 {
		return job.Usagef("report: --fail-on-regression %g: want a percentage >= 0", o.failOnPerf)
	}
	if o.brief && o.format != "text" && o.format != "markdown" && !o.agg {
		return job.Usagef("report: --brief is text or markdown, not --format %s", o.format)
	}
	return nil
}

func runReport(w, errOut io.Writer, dirs []string, o reportOptions) error {
	if err := checkReportFlags(o); err != nil {
		return err
	}
	if o.agg {
		return runAgg(w, dirs, o)
	}
	if len(dirs) == 1 && isSeriesDir(dirs[0]) {
		// A kci series run: its culprits decided again from its boot
		// records, as kci series RUNDIR shows it.
		s, err := loadSeries(dirs[0])
		if err != nil {
			return err
		}
		return renderSeries(w, s, o.format)
	}
	analyses, err := drawRuns(errOut, dirs, o)
	if err != nil {
		return err
	}
	if o.minEffect > 0 {
		// The report re-decides each run at --min-effect: another record
		// than the one its files were drawn from, analysed once in turn.
		for i, a := range analyses {
			r := *a.Run
			r.MinEffectPct = o.minEffect
			analyses[i] = verdict.AnalyzeRun(&r)
		}
	}
	for _, a := range analyses {
		if err := checkTrees(a.Run, o.trees); err != nil {
			return err
		}
	}
	if o.format == "json" && len(analyses) > 1 && !o.brief {
		// Several directories are one document: {"runs": [...]}.
		b, err := render.JSONRuns(analyses, o.trees...)
		if err != nil {
			return err
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
		return failOnPerf(analyses, o)
	}
	for i, a := range analyses {
		if i > 0 && o.format != "json" {
			fmt.Fprintln(w)
		}
		name := "" // one run needs no name; several are told apart by directory
		if len(analyses) > 1 {
			name = dirs[i]
		}
		if err := renderRun(w, a, o, name); err != nil {
			return err
		}
	}
	return failOnPerf(analyses, o)
}

// drawRuns loads the run directories (or merges them into --out with
// its reports) and analyses each run once; each directory's report.html
// is redrawn from its analysis.
func drawRuns(errOut io.Writer, dirs []string, o reportOptions) ([]*verdict.Analysis, error) {
	if o.merge {
		if o.out == "" {
			return nil, job.Usagef("report: --merge needs --out DIR")
		}
		m, err := results.MergeDirs(o.out, dirs...)
		if err != nil {
			return nil, job.Classify("report --merge", err) // bad inputs: exit 64
		}
		a := verdict.AnalyzeRun(m)
		// The shards' profiles stay in their own directories: a merged
		// report has no profile section.
		if err := render.WriteReports(o.out, a); err != nil {
			return nil, fmt.Errorf("report --merge: %w", err)
		}
		fmt.Fprintf(errOut, "merged %d shards into %s\n", len(dirs), o.out)
		return []*verdict.Analysis{a}, nil
	}
	if o.out != "" {
		return nil, job.Usagef("report: --out is for --merge")
	}
	var runs []*results.Run
	for _, d := range dirs {
		r, err := results.Load(d)
		if err != nil {
			return nil, notRunDir("report", d, err)
		}
		runs = append(runs, r)
	}
	var analyses []*verdict.Analysis
	for i, d := range dirs {
		a := verdict.AnalyzeRun(runs[i])
		analyses = append(analyses, a)
		// The picture is derived from run.json: (re)drawn on every
		// report, with this kci's renderer. A directory kci may not
		// write (a read-only artifact) keeps its own, said so.
		if err := render.WriteHTML(d, a); err != nil {
			fmt.Fprintf(errOut, "kci: report: %s not written: %v\n", filepath.Join(d, render.HTMLFile), err)
		}
	}
	return analyses, nil
}

func failOnPerf(analyses []*verdict.Analysis, o reportOptions) error {
	if o.failOnPerf >= 0 {
		for _, a := range analyses {
			if err := a.FailOnRegression(o.failOnPerf); err != nil {
				return &job.ExitError{Code: job.ExitPerformance, Cause: err.Error()}
			}
		}
	}
	return nil
}

func checkTrees(r *results.Run, trees []string) error {
	for _, t := range trees {
		if !hasTree(r, t) {
			return job.Usagef("report: --tree %s: run %s has no such tree (trees: %s)", t, r.ID, strings.Join(r.TreeNames(), ", "))
		}
	}
	return nil
}

// renderRun writes one run in o's format; name is its directory when
// there are several (the brief names each run).
func renderRun(w io.Writer, a *verdict.Analysis, o reportOptions, name string) error {
	if o.brief && o.format != "text" && o.format != "markdown" {
		return fmt.Errorf("report: --brief is text or markdown, not --format %s", o.format)
	}
	switch o.format {
	case "markdown":
		if o.brief {
			_, err := io.WriteString(w, render.BriefRunMarkdown(a, o.trees, name))
			return err
		}
		if len(o.trees) == 0 {
			_, err := io.WriteString(w, render.MarkdownRun(a))
			return err
		}
		for _, t := range o.trees {
			if _, err := io.WriteString(w, render.Markdown(a, t)); err != nil {
				return err
			}
		}
		return nil
	case "json":
		b, err := render.JSON(a, o.trees...)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	case "benchstat":
		return render.BenchStream(w, a.Run)
	}
	if o.brief {
		_, err := io.WriteString(w, render.BriefRunText(a, o.trees, render.TextWidth, name))
		return err
	}
	color := render.IsTerminal(w) && os.Getenv("NO_COLOR") == ""
	return render.Text(w, a, render.TextOptions{Color: color, Trees: o.trees})
}

func hasTree(r *results.Run, name string) bool {
	for _, t := range r.TreeNames() {
		if t == name {
			return true
		}
	}
	return false
}

// runAgg prints the cross-set table in --format text, markdown or json,
// for --tree's trees; flags it cannot honour are refused by name.
func runAgg(w io.Writer, dirs []string, o reportOptions) error {
	var bad []string
	for flag, set := range map[string]bool{
		"--merge": o.merge, "--out": o.out != "", "--brief": o.brief, "--format benchstat": o.format == "benchstat",
		"--min-effect (the table decides nothing)": o.minEffect != 0, "--fail-on-regression (the table decides nothing)": o.failOnPerf >= 0,
	} {
		if set {
			bad = append(bad, flag)
		}
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		return job.Usagef("report: --agg does not take %s", strings.Join(bad, ", "))
	}
	tables, err := benchtab.AggTrees(dirs, o.trees)
	if err != nil {
		// What the directories hold, or the trees asked of them: input.
		return job.Usagef("report --agg: %s", strings.TrimPrefix(err.Error(), "results: agg: "))
	}
	switch o.format {
	case "markdown":
		return render.RenderAggMarkdown(w, tables)
	case "json":
		b, err := render.AggJSON(tables)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	return render.RenderAgg(w, tables)
}

// isSeriesDir tells a kci series run directory (series.json, no run.json).
func isSeriesDir(dir string) bool {
	_, serr := os.Stat(filepath.Join(dir, results.SeriesFile))
	_, rerr := os.Stat(filepath.Join(dir, "run.json"))
	return serr == nil && errors.Is(rerr, os.ErrNotExist)
}
