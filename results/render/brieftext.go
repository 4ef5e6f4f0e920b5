package render

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/kci-dev/kci/internal/lines"
	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/results/verdict"
)

// maxHiding is how many "could hide" rows the answer names; the rest are
// counted, and the table has them all.
const maxHiding = 3

// hidingLine names the widest "no change" rows that could hide a change
// of the smallest effect (widest first), and counts the others.
func hidingLine(b verdict.Brief) string {
	hiding := slices.Clone(b.Hiding)
	slices.SortStableFunc(hiding, func(x, y verdict.Change) int { return cmp.Compare(y.WouldShowPct, x.WouldShowPct) })
	boots := ""
	for i, e := range hiding {
		if n := fmt.Sprintf("%d+%d", e.BaseN, e.PatchedN); i == 0 || n == boots {
			boots = n
		} else {
			boots = "varying"
		}
	}
	var parts []string
	for _, e := range hiding[:min(len(hiding), maxHiding)] {
		parts = append(parts, fmt.Sprintf("%s ±%.1f%%", e.Label(), e.WouldShowPct))
	}
	if rest := hiding[min(len(hiding), maxHiding):]; len(rest) > 0 {
		parts = append(parts, fmt.Sprintf("%d more (each ±%.1f%% or less)", len(rest), rest[0].WouldShowPct))
	}
	return fmt.Sprintf("no change, but ±%.1f%% not ruled out (%s boots); would show: %s",
		b.MinEffectPct, boots, strings.Join(parts, ", "))
}

// Details are the brief's other lines: what could hide a change, and the
// rest of the rows in one line with the change each would have shown.
func Details(b verdict.Brief) []string {
	var out []string
	if b.Covers != "" {
		out = append(out, b.Covers)
	}
	if b.PerfOutcome != b.Outcome && len(b.Changed) > 0 {
		c := b
		c.Outcome, c.Title = b.PerfOutcome, "" // the numbers' own headline, not the conclusion's title
		out = append(out, "numbers: "+strings.TrimPrefix(c.Headline(), b.Tree+": "))
	}
	if len(b.Hiding) > 0 {
		out = append(out, hidingLine(b))
	}
	if len(b.Untested) > 0 {
		names := make([]string, len(b.Untested))
		for i, e := range b.Untested {
			names[i] = e.Label()
		}
		out = append(out, fmt.Sprintf("not tested yet (seed spread; a row with spread is tested from %d seeds a side): %s",
			verdict.MinSpreadSeeds, strings.Join(names, ", ")))
	}
	if b.Unchanged > 0 {
		s := "no change in " + results.Plural(b.Unchanged, "other row")
		if b.UnchangedShowPct > 0 {
			s += fmt.Sprintf(" (each would show ±%.1f%% or less)", b.UnchangedShowPct)
		}
		out = append(out, s)
	}
	return out
}

// BriefText is the cover-letter block of an analysed run: per tree (the
// named ones, every one if none) its headline, then its details indented,
// every line wrapped at width columns.
func BriefText(a *verdict.Analysis, trees []string, width int) string {
	var sb strings.Builder
	for _, tr := range a.Select(trees) {
		b := *tr.Brief
		sb.WriteString(wrap(b.Headline(), width, "    "))
		for _, d := range Details(b) {
			sb.WriteString(wrap("  "+d, width, "    "))
		}
	}
	return sb.String()
}

// BriefMarkdown is the cover-letter block as Markdown: one bullet per
// tree, its details as a nested list.
func BriefMarkdown(b verdict.Brief) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "- %s **%s**\n", stateIcon(b.State, b.Outcome), mdInline(b.Headline()))
	for _, d := range Details(b) {
		fmt.Fprintf(&sb, "  - %s\n", mdInline(d))
	}
	return foldMarkdown(sb.String(), lines.Width)
}

// wrap breaks s at blanks so that no line is wider than width runes;
// continuation lines start with indent. A word wider than the line stays
// whole.
func wrap(s string, width int, indent string) string {
	return lines.Wrap(s, width, indent) + "\n"
}
