package results

import (
	"fmt"
	"strings"
)

// Markdown is the PR comment body for one tree: verdict, accelerator,
// the A/B table, survival changes and what was left out of the numbers.
func Markdown(run *Run, tree string) string {
	var b strings.Builder
	writeTreeMarkdown(&b, run, Analyze(run, tree), "###")
	return b.String()
}

// MarkdownRun renders every tree of the run, for report.md and
// $GITHUB_STEP_SUMMARY.
func MarkdownRun(run *Run) string {
	var b strings.Builder
	// Every string from the record is escaped (mdescape.go): the pull
	// request's job wrote it, and the bot posts it.
	fmt.Fprintf(&b, "## kci run %s\n\n", mdCode(run.ID))
	if run.Incomplete {
		fmt.Fprintf(&b, "> **Incomplete:** %s\n\n", mdInline(run.IncompleteReason))
	}
	fmt.Fprintf(&b, "Host: %s\n\n", mdInline(hostLine(run)))
	fmt.Fprintf(&b, "Boots: %s\n\n", mdInline(run.BootsLine("")))
	var checks []string
	for _, c := range run.Host.Checks {
		if c.Status != CheckOK {
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
	for _, tree := range run.TreeNames() {
		writeTreeMarkdown(&b, run, Analyze(run, tree), "###")
		b.WriteString("\n")
	}
	return b.String()
}

func stateIcon(state string) string {
	switch state {
	case Success:
		return "✅"
	case Failure:
		return "❌"
	}
	return "⚠️"
}

func writeTreeMarkdown(b *strings.Builder, run *Run, tr TreeReport, h string) {
	fmt.Fprintf(b, "%s %s %s\n\n", h, stateIcon(tr.Conclusion.State), mdInline(tr.Conclusion.Title))
	accel := run.Host.Accel
	for _, bt := range run.Boots {
		if bt.Tree == tr.Tree && bt.Accel != "" {
			accel = bt.Accel
			break
		}
	}
	if tr.Perf.Deterministic() {
		fmt.Fprintf(b, "> **%s**: measured under TCG with -icount: one guest instruction is one ns of guest time, so the numbers count instructions, repeat from boot to boot, and are not real time.\n\n", InstructionTimeLabel)
	} else if tr.Perf.Emulated {
		fmt.Fprintf(b, "> **%s**: measured under TCG emulation; only the base-vs-patched ratios of this run mean anything.\n\n", EmulatedLabel)
	} else {
		fmt.Fprintf(b, "Accelerator: %s\n\n", mdInline(orDash(accel)))
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
	if tr.ConfigVerdict != "" {
		fmt.Fprintf(b, "Config: %s\n\n", mdInline(tr.ConfigVerdict))
	}
	if len(tr.Perf.Variants) > 0 {
		b.WriteString("Performance, " + perfHeading(tr.Perf) + ":\n\n")
		t := escapeCells(abTable(tr.Perf))
		for _, r := range t.rows {
			if r[0] != "" {
				r[0] = "**" + r[0] + "**"
			}
		}
		b.WriteString(t.markdown() + "\n")
	}
	for _, w := range tr.Perf.Warnings {
		b.WriteString("> ⚠️ " + mdInline(w) + "\n\n")
	}
	if len(tr.Changes) > 0 {
		b.WriteString("Survival changes (base → patched):\n\n")
		for _, c := range tr.Changes {
			fmt.Fprintf(b, "- **%s**: %s × %s: base %s → patched %s (expected %s)", mdInline(string(c.Kind)), mdInline(c.Base.Carrier), mdInline(c.Base.Path),
				mdInline(cellText(&c.Base)), mdInline(cellText(&c.Patched)), mdInline(c.Patched.Expected))
			if c.Patched.Detail != "" && c.Kind == Regression {
				fmt.Fprintf(b, " — %s", mdInline(c.Patched.Detail))
			}
			b.WriteString("\n")
		}
		b.WriteString("\n")
	} else if len(tr.Survival) > 0 {
		fmt.Fprintf(b, "Survival: %d cells, no change between base and patched.\n\n", len(tr.Survival))
	}
	if len(tr.Survival) > 0 {
		b.WriteString("<details><summary>Survival matrix</summary>\n\n")
		b.WriteString(escapeCells(survivalTable(tr.Survival)).markdown())
		b.WriteString("\n</details>\n\n")
	}
	if len(tr.Perf.Excluded) > 0 {
		b.WriteString("Not in the statistics:\n\n")
		for _, e := range tr.Perf.Excluded {
			b.WriteString("- " + mdText(excludedLine(e)) + "\n")
		}
		b.WriteString("\n")
	}
	if run.Incomplete {
		fmt.Fprintf(b, "> Run incomplete: %s\n\n", mdInline(run.IncompleteReason))
	}
}
