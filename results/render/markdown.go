package render

import (
	"fmt"
	"strings"

	"github.com/kci-dev/kci/internal/lines"
	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/results/verdict"
)

// Markdown is the PR comment body for one tree, without a link to its
// picture: see MarkdownComment.
func Markdown(a *verdict.Analysis, tree string) string { return MarkdownComment(a, tree, "") }

// MarkdownComment is the PR comment body for one tree of an analysed run
// ("" if the run has no such tree): its one-line answer with a link to
// the picture (reportURL, report.html; none if empty), then the table
// and the rest folded.
func MarkdownComment(a *verdict.Analysis, tree, reportURL string) string {
	tr, ok := a.Tree(tree)
	if !ok {
		return ""
	}
	var b strings.Builder
	b.WriteString(BriefMarkdown(*tr.Brief))
	if reportURL != "" {
		fmt.Fprintf(&b, "\n[report.html: every boot, the survival grid, timings](%s)\n", mdURL(reportURL))
	}
	b.WriteString("\n<details><summary>Details: table, survival, kernels</summary>\n\n")
	writeTreeMarkdown(&b, a.Run, tr, "####")
	b.WriteString("</details>\n")
	return foldMarkdown(b.String(), lines.Width)
}

// MarkdownRun renders every tree of the analysed run, for report.md and
// $GITHUB_STEP_SUMMARY: the answer first, then each tree.
func MarkdownRun(a *verdict.Analysis) string {
	run := a.Run
	var b strings.Builder
	// Every string from the record is escaped (mdescape.go): the pull
	// request's job wrote it, and the bot posts it.
	fmt.Fprintf(&b, "## kci run %s\n\n", mdCode(run.ID))
	if run.Incomplete {
		fmt.Fprintf(&b, "> **Incomplete:** %s\n\n", mdInline(run.IncompleteReason))
	}
	for _, tr := range a.Trees {
		b.WriteString(BriefMarkdown(*tr.Brief))
	}
	fmt.Fprintf(&b, "\nHost: %s\n\n", mdInline(hostLine(run)))
	fmt.Fprintf(&b, "Boots: %s\n\n", mdInline(run.BootsLine("")))
	var checks []string
	for _, c := range run.Host.Checks {
		if c.Status != results.CheckOK {
			s := fmt.Sprintf("- **%s** %s", mdInline(c.Status), mdInline(c.Name))
			if c.Detail != "" {
				s += ": " + mdInline(c.Detail)
			}
			if c.Fix != "" {
				s += " (fix: " + mdCode(c.Fix) + ")"
			}
			checks = append(checks, s)
		}
	}
	if len(checks) > 0 {
		b.WriteString("Host checks:\n" + strings.Join(checks, "\n") + "\n\n")
	}
	for _, tr := range a.Trees {
		fmt.Fprintf(&b, "### %s\n\n", mdInline(tr.Tree))
		writeTreeMarkdown(&b, run, tr, "####")
	}
	return foldMarkdown(b.String(), lines.Width)
}

// stateIcon marks a tree's outcome; a speedup is never a warning, and an
// undecided tree is not one either.
func stateIcon(state, v string) string {
	switch {
	case state == verdict.Failure:
		return "❌"
	case state == verdict.Success, v == string(verdict.Faster):
		return "✅"
	}
	return "⚪"
}

func writeTreeMarkdown(b *strings.Builder, run *results.Run, tr verdict.TreeReport, h string) {
	if tr.Perf.Deterministic() {
		fmt.Fprintf(b, "> **%s**: measured under TCG with -icount: one guest instruction is one ns of guest time, so the numbers count instructions, repeat from boot to boot, and are not real time.\n\n", results.InstructionTimeLabel)
	} else if tr.Perf.Emulated {
		fmt.Fprintf(b, "> **%s**: measured under TCG emulation; only the base-vs-patched ratios of this run mean anything.\n\n", results.EmulatedLabel)
	} else {
		fmt.Fprintf(b, "Accelerator: %s\n\n", mdInline(orDash(treeAccel(run, tr.Tree))))
	}
	if tr.Base != "" || tr.Patched != "" {
		fmt.Fprintf(b, "Kernels: base %s → patched %s\n\n", mdCode(orDash(tr.Base)), mdCode(orDash(tr.Patched)))
	}
	if len(tr.Patches) > 0 {
		b.WriteString("Series:\n")
		for _, p := range tr.Patches {
			fmt.Fprintf(b, "- %s\n", mdText(p))
		}
		b.WriteString("\n")
	}
	for _, l := range configLine(run, tr) {
		b.WriteString(mdInline(strings.TrimSpace(l)) + "\n\n")
	}
	if len(tr.Perf.Variants) > 0 {
		fmt.Fprintf(b, "%s Performance\n\n", h)
		t := escapeCells(abTable(tr.Perf))
		for _, r := range t.rows {
			if strings.HasSuffix(r[0], " total") {
				r[0] = "**" + r[0] + "**" // a variant's programs follow it, plain
			}
		}
		b.WriteString(t.markdownFit() + "\n")
		legend := escapeAll(abLegend(tr.Perf))
		b.WriteString("<sub>" + strings.Join(legend, "; ") + ".</sub>\n\n")
	}
	writeWhereMarkdown(b, run, tr)
	writeCoverageMarkdown(b, tr)
	for _, w := range tr.Perf.Warnings {
		b.WriteString("> **warning:** " + mdInline(w) + "\n\n")
	}
	if len(tr.Changes) > 0 {
		b.WriteString("Survival changes (base → patched):\n\n")
		for _, c := range tr.Changes {
			fmt.Fprintf(b, "- **%s**: %s × %s: base %s → patched %s (expected %s)", mdInline(string(c.Kind)), mdInline(c.Base.Carrier), mdInline(c.Base.Path),
				mdInline(cellText(&c.Base)), mdInline(cellText(&c.Patched)), mdInline(c.Patched.Expected))
			if c.Patched.Detail != "" && c.Kind == verdict.Regression {
				fmt.Fprintf(b, " — %s", mdInline(c.Patched.Detail))
			}
			b.WriteString("\n")
		}
		b.WriteString("\n")
	} else if len(tr.Survival) > 0 {
		b.WriteString(mdInline(survivalLine(tr)) + ".\n\n")
	}
	if len(tr.Survival) > 0 {
		b.WriteString("<details><summary>Survival matrix</summary>\n\n")
		b.WriteString(escapeCells(survivalTable(tr.Survival)).markdownFit())
		b.WriteString("\n</details>\n\n")
	}
	if ex := excludedLines(tr.Perf.Excluded); len(ex) > 0 {
		b.WriteString("Not in the statistics:\n\n")
		for _, e := range ex {
			b.WriteString("- " + mdText(e) + "\n")
		}
		b.WriteString("\n")
	}
	if run.Incomplete {
		fmt.Fprintf(b, "> Run incomplete: %s\n\n", mdInline(run.IncompleteReason))
	}
}

func treeAccel(run *results.Run, tree string) string {
	for _, bt := range run.Boots {
		if bt.Tree == tree && bt.Accel != "" {
			return bt.Accel
		}
	}
	return run.Host.Accel
}

// mdURL keeps a link target one Markdown token: blanks, parentheses and
// angle brackets percent-encoded.
func mdURL(u string) string {
	return strings.NewReplacer(" ", "%20", "(", "%28", ")", "%29", "<", "%3C", ">", "%3E", "\n", "", "\r", "").Replace(u)
}
