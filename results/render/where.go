package render

import (
	"fmt"
	"math"
	"strings"

	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/results/verdict"
)

// whereHeading says what the Where rows count and how they were chosen.
func whereHeading(run *results.Run, tree string, w *verdict.Where) string {
	n, _ := run.BootCount(tree)
	metric := "exact instructions per packet"
	if w.Model != "" {
		metric += " and modelled cycles per packet (a model: " + w.Model + ", docs/cost.md)"
	}
	if whereCrossCore(w) {
		metric += "; cross-core: lines per packet the function's accesses brought from another core's cache or upgraded from shared"
	}
	minText := fmt.Sprintf("%.1f", verdict.WhereMin)
	if w.Model != "" {
		minText += fmt.Sprintf(" (%d cycles)", verdict.WhereCyclesMin)
	}
	return fmt.Sprintf("where it changed: %s, counted by kci's QEMU plugin over %s; functions that moved by %s or more, "+
		"exactly or by Welch's t with Holm over the %s with seed spread at %g", metric, results.Plural(n, "boot"), minText,
		results.Plural(w.Family, "function row"), verdict.DetAlpha)
}

// whereTable lays out the first verdict.WhereTop rows of each variant;
// the rest are counted in the returned note.
func whereTable(w *verdict.Where) (*table, string) {
	t := &table{header: []string{"variant", "function", "base", "patched", "change"}, right: []bool{false, false, true, true, true}}
	if w.Model != "" {
		t.header = append(t.header, "cycles base", "cycles patched", "cycles change")
		t.right = append(t.right, true, true, true)
	}
	cross := whereCrossCore(w)
	if cross {
		t.header = append(t.header, "cross-core base", "cross-core patched", "cross-core change")
		t.right = append(t.right, true, true, true)
	}
	per := map[string]int{}
	left := 0
	for _, r := range w.Rows {
		if per[r.Variant]++; per[r.Variant] > verdict.WhereTop {
			left++
			continue
		}
		cells := []string{r.Variant, r.Func}
		cells = append(cells, whereCells(r.Insns)...)
		if w.Model != "" && r.Cycles != nil {
			cells = append(cells, whereCells(*r.Cycles)...)
		}
		if cross && r.CrossCore != nil {
			cells = append(cells, whereCells(*r.CrossCore)...)
		}
		t.add(cells...)
	}
	note := ""
	if left > 0 {
		note = fmt.Sprintf("%s more in report.json", results.Plural(left, "function"))
	}
	return t, note
}

// whereCrossCore says w's rows count cross-core events (the coherent
// model).
func whereCrossCore(w *verdict.Where) bool {
	for _, r := range w.Rows {
		if r.CrossCore != nil {
			return true
		}
	}
	return false
}

// whereCells: base, patched, and the change, "exact" when every seed
// agrees, else with its 95 % interval; a change the test did not call
// is in brackets.
func whereCells(d verdict.WhereDelta) []string {
	ch := fmt.Sprintf("%+.1f", d.Delta)
	switch {
	case d.Exact:
		ch += " exact"
	case !math.IsNaN(d.Lo):
		ch += fmt.Sprintf(" [%+.1f, %+.1f]", d.Lo, d.Hi)
	}
	if !d.Changed {
		ch = "(" + ch + ")"
	}
	return []string{fmt.Sprintf("%.1f", d.Base), fmt.Sprintf("%.1f", d.Patched), ch}
}

// writeWhereText is the text report's Where section.
func writeWhereText(b *strings.Builder, run *results.Run, tr verdict.TreeReport) {
	w := tr.Where
	if w == nil || len(tr.Perf.Variants) == 0 {
		return
	}
	if w.Note != "" {
		b.WriteString("\n" + wrap("where it changed: "+w.Note+".", TextWidth, "  "))
		return
	}
	b.WriteString("\n" + wrap(whereHeading(run, tr.Tree, w)+":", TextWidth, "  "))
	if len(w.Rows) == 0 {
		b.WriteString("  no function moved\n")
		return
	}
	t, note := whereTable(w)
	b.WriteString(t.text("  "))
	if note != "" {
		b.WriteString("  " + note + "\n")
	}
}

// writeWhereMarkdown is the Markdown report's Where section, folded.
func writeWhereMarkdown(b *strings.Builder, run *results.Run, tr verdict.TreeReport) {
	w := tr.Where
	if w == nil || len(tr.Perf.Variants) == 0 {
		return
	}
	if w.Note != "" {
		b.WriteString("<sub>Where it changed: " + mdInline(w.Note) + ".</sub>\n\n")
		return
	}
	fmt.Fprintf(b, "<details><summary>Where it changed: %s</summary>\n\n", results.Plural(len(w.Rows), "function row"))
	b.WriteString(mdInline(whereHeading(run, tr.Tree, w)) + ".\n\n")
	if len(w.Rows) > 0 {
		t, note := whereTable(w)
		b.WriteString(escapeCells(t).markdownFit() + "\n")
		if note != "" {
			b.WriteString(mdInline(note) + "\n\n")
		}
	}
	b.WriteString("</details>\n\n")
}

// htmlWhereOf is the HTML report's Where section (nil: no variants).
func htmlWhereOf(run *results.Run, tr verdict.TreeReport) *htmlWhere {
	w := tr.Where
	if w == nil || len(tr.Perf.Variants) == 0 {
		return nil
	}
	if w.Note != "" {
		return &htmlWhere{Heading: w.Note + "."}
	}
	h := &htmlWhere{Heading: whereHeading(run, tr.Tree, w) + "."}
	if len(w.Rows) == 0 {
		h.Note = "No function moved."
		return h
	}
	t, note := whereTable(w)
	h.Header, h.Rows, h.Note = t.header, t.rows, note
	return h
}

// writeCoverageText is the text report's coverage section: each hunk of
// the patches and how often the windows ran its code.
func writeCoverageText(b *strings.Builder, tr verdict.TreeReport) {
	if tr.Coverage == nil {
		return
	}
	b.WriteString("\nthe patch's code in the measured windows (runs per packet, exact under icount):\n")
	for _, l := range tr.Coverage.Lines() {
		b.WriteString(wrap("  "+l, TextWidth, "    "))
	}
}

// writeCoverageMarkdown is the Markdown report's coverage section.
func writeCoverageMarkdown(b *strings.Builder, tr verdict.TreeReport) {
	if tr.Coverage == nil {
		return
	}
	b.WriteString("The patch's code in the measured windows (runs per packet, exact under icount):\n\n")
	for _, l := range tr.Coverage.Lines() {
		b.WriteString("- " + mdInline(l) + "\n")
	}
	b.WriteString("\n")
}

// htmlCoverageOf is the HTML report's coverage lines (nil: none).
func htmlCoverageOf(tr verdict.TreeReport) []string {
	if tr.Coverage == nil {
		return nil
	}
	return tr.Coverage.Lines()
}
