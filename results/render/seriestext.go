package render

import (
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"
	"time"

	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/results/verdict"
)

func seriesTable(t results.SeriesTree, md bool) *table {
	tb := &table{
		header: []string{"#", "patch", "apply", "build", "new warnings", "checkpatch", "boot", "survival", "perf (vs previous)", "build time", "boot time"},
		right:  []bool{true, false, false, false, false, false, false, false, false, true, true},
	}
	for _, p := range t.Patches {
		subj := p.Subject
		if md {
			subj = mdInline(subj)
		} else if len([]rune(subj)) > 52 {
			subj = string([]rune(subj)[:51]) + "…"
		}
		build := p.Build
		if p.Build == results.StepOK && p.CacheHit {
			build = "ok (cached)"
		}
		warn := "-"
		if p.Build == results.StepOK || p.Build == results.StepFail {
			warn = fmt.Sprint(len(p.NewWarnings))
			if len(p.NewWarnings) > 0 {
				warn = fmt.Sprintf("%d NEW", len(p.NewWarnings))
			}
		}
		boot, surv := "-", "-"
		if p.Boot != nil {
			boot = p.Boot.Result
			if p.Boot.Result == results.StepFail && p.Boot.ErrorKind != "" {
				boot += " (" + p.Boot.ErrorKind + ")"
			}
			if p.Boot.Cells > 0 {
				surv = fmt.Sprintf("%d/%d", p.Boot.Passed, p.Boot.Cells)
				if len(p.Boot.Lost) > 0 {
					surv += fmt.Sprintf(" (%d LOST)", len(p.Boot.Lost))
				}
			}
		}
		tb.add(fmt.Sprintf("%d/%d", p.Index, p.Of), subj, p.Apply, build, warn, p.Checkpatch.Summary(),
			boot, surv, perfCell(p.Index, p.Perf, t.Culprits), fmtDur(p.BuildTime), bootTime(p.Boot))
	}
	measured := false
	for _, p := range t.Patches {
		measured = measured || len(p.Perf) > 0
	}
	if !measured { // no perf column when nothing was measured
		const col = 8
		tb.header = append(tb.header[:col:col], tb.header[col+1:]...)
		tb.right = append(tb.right[:col:col], tb.right[col+1:]...)
		for i, r := range tb.rows {
			tb.rows[i] = append(r[:col:col], r[col+1:]...)
		}
	}
	return tb
}

func bootTime(b *results.PatchBoot) string {
	if b == nil {
		return "-"
	}
	return fmtDur(b.Time)
}

func fmtDur(d time.Duration) string {
	if d <= 0 {
		return "-"
	}
	if d < time.Minute {
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

// perfCell is this prefix's perf cell: the change located at this
// patch (the largest, "+N more" when several), or "no change" when it was
// measured and nothing is located here. A step's raw move on one seed is
// in series.json; printed here, a sub-threshold one read as blame (−0.1 %
// beside a comment-only patch).
func perfCell(index int, ps []results.ProgDelta, culprits []results.Culprit) string {
	if len(ps) == 0 {
		return "-"
	}
	vs := ""
	if a := ps[0].Against; a != index-1 {
		vs = fmt.Sprintf(" (vs %d)", a)
		if a == 0 {
			vs = " (vs tree)"
		}
	}
	var here []results.Culprit
	for _, c := range culprits {
		if c.Patch == index {
			here = append(here, c)
		}
	}
	if len(here) == 0 {
		for _, p := range ps {
			if p.Before != 0 {
				return "no change" + vs
			}
		}
		return "measured"
	}
	best := here[0]
	for _, c := range here[1:] {
		if math.Abs(c.Pct) > math.Abs(best.Pct) {
			best = c
		}
	}
	cell := best.Key + " " + results.FmtSignedPct(best.Pct)
	if best.From > 0 {
		cell += fmt.Sprintf(" (over %d–%d)", best.From, best.Patch)
	}
	if len(here) > 1 {
		cell += fmt.Sprintf(" +%d more", len(here)-1)
	}
	return cell + vs
}

// SeriesText renders the per-patch table of every tree, then the
// findings: failing apply/build with its cause, bisectability, new
// warnings with file:line, checkpatch findings, lost survival cells, and
// the patches behind performance changes.
func SeriesText(w io.Writer, s *results.Series) error {
	var b strings.Builder
	b.WriteString(seriesMachine(s, false))
	for _, t := range s.Trees {
		fmt.Fprintf(&b, "Series on tree %s", t.Tree)
		if t.Base != "" {
			fmt.Fprintf(&b, " (base %s)", t.Base)
		}
		b.WriteString(":\n\n")
		b.WriteString(seriesTable(t, false).text("  "))
		b.WriteString("\n")
		for _, f := range verdict.Findings(t) {
			b.WriteString("  " + f + "\n")
		}
		if t.PerfNote != "" {
			b.WriteString("  perf: " + t.PerfNote + "\n")
		}
		b.WriteString("  " + costLine(t) + "\n\n")
	}
	if s.Incomplete {
		fmt.Fprintf(&b, "INCOMPLETE: %s\n", s.IncompleteReason)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// costLine is what the validation cost: per-prefix times are in the table.
func costLine(t results.SeriesTree) string {
	builds, boots := t.Cost()
	return fmt.Sprintf("cost: %d prefixes, builds %s, boots %s, tree kernel %s, total %s",
		len(t.Patches), fmtDur(builds), fmtDur(boots), fmtDur(t.BaseBuildTime), fmtDur(t.Time))
}

// SeriesMarkdown is the series report for a PR comment.
func SeriesMarkdown(s *results.Series) string {
	var b strings.Builder
	b.WriteString("## kci series: patch by patch\n\n")
	b.WriteString(seriesMachine(s, true))
	for _, t := range s.Trees {
		b.WriteString(seriesTreeMarkdown(t))
	}
	if s.Incomplete {
		b.WriteString("**incomplete**: " + mdText(s.IncompleteReason) + "\n")
	}
	return b.String()
}

// SeriesTreeMarkdown is one tree's part of the series report, complete
// on its own (one PR comment per tree).
func SeriesTreeMarkdown(s *results.Series, tree string) string {
	var b strings.Builder
	b.WriteString("## kci series: patch by patch\n\n")
	b.WriteString(seriesMachine(s, true))
	for _, t := range s.Trees {
		if t.Tree == tree {
			b.WriteString(seriesTreeMarkdown(t))
		}
	}
	if s.Incomplete {
		b.WriteString("**incomplete**: " + mdText(s.IncompleteReason) + "\n")
	}
	return b.String()
}

func seriesTreeMarkdown(t results.SeriesTree) string {
	var b strings.Builder
	fmt.Fprintf(&b, "### tree %s\n\n", mdInline(t.Tree))
	b.WriteString(seriesTable(t, true).markdownFit())
	b.WriteString("\n")
	if fs := verdict.Findings(t); len(fs) > 0 {
		for _, f := range fs {
			b.WriteString("- " + mdText(f) + "\n")
		}
		b.WriteString("\n")
	}
	if t.PerfNote != "" {
		b.WriteString("perf: " + mdText(t.PerfNote) + "\n\n")
	}
	b.WriteString(mdText(costLine(t)) + "\n\n")
	return b.String()
}

// WriteSeries stores s as series.json and its text and Markdown renderings
// (series.txt, series.md) in dir.
func WriteSeries(dir string, s *results.Series) error {
	if err := results.SaveSeries(dir, s); err != nil {
		return err
	}
	var b strings.Builder
	if err := SeriesText(&b, s); err != nil {
		return err
	}
	if err := results.WriteAtomic(filepath.Join(dir, "series.txt"), []byte(b.String())); err != nil {
		return err
	}
	return results.WriteAtomic(filepath.Join(dir, "series.md"), []byte(SeriesMarkdown(s)))
}
