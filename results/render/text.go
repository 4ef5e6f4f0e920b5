package render

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/results/verdict"
)

// ANSI colours for the terminal report.
const (
	ansiRed    = "\x1b[31m"
	ansiGreen  = "\x1b[32m"
	ansiYellow = "\x1b[33m"
	ansiBold   = "\x1b[1m"
	ansiReset  = "\x1b[0m"
)

// IsTerminal reports whether w is a terminal, the only place colour goes.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// TextOptions tune the terminal report.
type TextOptions struct {
	Color bool     // ANSI colour (only for a TTY)
	Trees []string // only these trees; empty = all
}

// Text writes the whole analysed run as an aligned plain-text report.
func Text(w io.Writer, a *verdict.Analysis, opt TextOptions) error {
	run := a.Run
	var b strings.Builder
	bold := func(s string) string {
		if opt.Color {
			return ansiBold + s + ansiReset
		}
		return s
	}
	b.WriteString(bold("kci run "+run.ID) + "  " + runTimes(run) + "\n")
	if run.Incomplete {
		b.WriteString(wrap(colorize(opt.Color, ansiYellow, "INCOMPLETE: "+run.IncompleteReason), TextWidth, "  "))
	}
	if len(run.MergedFrom) > 0 {
		b.WriteString("merged from shards: " + strings.Join(run.MergedFrom, ", ") + "\n")
	}
	b.WriteString("\n" + BriefText(a, opt.Trees, TextWidth) + "\n")
	b.WriteString(wrapParts("host: ", strings.Split(hostLine(run), " · "), TextWidth))
	for _, c := range run.Host.Checks {
		if c.Status == results.CheckOK {
			continue
		}
		col := ansiYellow
		if c.Status == results.CheckFail {
			col = ansiRed
		}
		line := fmt.Sprintf("  doctor %s: %s", colorize(opt.Color, col, c.Status), c.Name)
		if c.Detail != "" {
			line += ": " + c.Detail
		}
		if c.Fix != "" {
			line += " (fix: " + c.Fix + ")"
		}
		b.WriteString(wrap(line, TextWidth, "    "))
	}
	b.WriteString("boots: " + run.BootsLine("") + "\n")
	for _, tr := range a.Select(opt.Trees) {
		b.WriteString("\n" + bold("== tree "+tr.Tree+" ==") + "\n")
		writeTreeText(&b, run, tr, opt.Color)
	}
	if len(run.Phases) > 0 {
		b.WriteString("\nphases:\n")
		t := &table{header: []string{"phase", "tree", "kernel", "duration"}, right: []bool{false, false, false, true}}
		for _, p := range run.Phases {
			t.add(p.Name, p.Tree, p.Kernel, fmtDuration(p.Duration))
		}
		b.WriteString(t.text("  "))
	}
	b.WriteString(bootPhasesText(run))
	_, err := io.WriteString(w, b.String())
	return err
}

func writeTreeText(b *strings.Builder, run *results.Run, tr verdict.TreeReport, color bool) {
	if tr.Base != "" || tr.Patched != "" {
		fmt.Fprintf(b, "kernels: base %s → patched %s\n", orDash(tr.Base), orDash(tr.Patched))
	}
	for _, p := range tr.Patches {
		b.WriteString(wrap("  patch: "+p, TextWidth, "    "))
	}
	for _, l := range configLine(run, tr) {
		b.WriteString(wrap(l, TextWidth, "    "))
	}
	if len(tr.Perf.Variants) > 0 {
		b.WriteString("\nperformance:\n")
		t := abTable(tr.Perf)
		if color {
			t.paint = func(row, col int, s string) string {
				if col != len(t.header)-1 {
					return s
				}
				switch {
				case strings.HasPrefix(s, string(verdict.Slower)):
					return colorize(true, ansiRed, s)
				case strings.HasPrefix(s, string(verdict.Faster)):
					return colorize(true, ansiGreen, s)
				case strings.HasPrefix(s, string(verdict.TooFew)), strings.HasPrefix(s, string(verdict.NotComparable)):
					return colorize(true, ansiYellow, s)
				}
				return s
			}
		}
		b.WriteString(t.text("  "))
		b.WriteString(wrap("  "+strings.Join(abLegend(tr.Perf), "; ")+".", TextWidth, "  "))
	}
	writeWhereText(b, run, tr)
	writeCoverageText(b, tr)
	if len(tr.Loads) > 0 {
		t, notes := loadsTable(tr.Loads)
		b.WriteString("\nverifier and JIT (base → patched; insns and sizes are the kernel's counts, times guest medians):\n")
		b.WriteString(t.text("  "))
		for _, n := range notes {
			b.WriteString(wrap("  "+n, TextWidth, "    "))
		}
	}
	for _, w := range tr.Perf.Warnings {
		b.WriteString(wrap(colorize(color, ansiYellow, "warning: ")+w, TextWidth, "  "))
	}
	if ex := excludedLines(tr.Perf.Excluded); len(ex) > 0 {
		b.WriteString("\nnot in the statistics:\n")
		for _, e := range ex {
			b.WriteString(wrap("  "+e, TextWidth, "    "))
		}
	}
	switch {
	case len(tr.Changes) > 0:
		b.WriteString("\nsurvival changes (base → patched):\n")
		t := survivalTable(changedRows(tr.Survival))
		if color {
			t.paint = func(row, col int, s string) string {
				if col != len(t.header)-1 {
					return s
				}
				switch strings.TrimSpace(s) {
				case verdict.Regression:
					return colorize(true, ansiRed, s)
				case verdict.Fixed:
					return colorize(true, ansiGreen, s)
				}
				return s
			}
		}
		b.WriteString(t.text("  "))
		fmt.Fprintf(b, "  (%s unchanged)\n", results.Plural(len(tr.Survival)-len(tr.Changes), "other cell"))
	case len(tr.Survival) > 0:
		b.WriteString("\n" + wrap(survivalLine(tr), TextWidth, "  "))
	}
}

// TextWidth is the widest line of the text report.
const TextWidth = 100

// wrapParts joins parts with " · " after head, breaking lines between
// parts only: a part (a QEMU reason, a model) is never cut, so one
// longer than the line stays whole.
func wrapParts(head string, parts []string, width int) string {
	var b strings.Builder
	line := head
	for i, p := range parts {
		switch {
		case i == 0:
			line += p
		case utf8.RuneCountInString(line)+3+utf8.RuneCountInString(p) > width:
			b.WriteString(wrap(line, width, "    ")) // a part wider than a line wraps inside
			line = "  " + p
		default:
			line += " · " + p
		}
	}
	b.WriteString(wrap(line, width, "    "))
	return b.String()
}

func changedRows(rows []verdict.SurvivalRow) []verdict.SurvivalRow {
	var out []verdict.SurvivalRow
	for _, r := range rows {
		if r.Change != "" {
			out = append(out, r)
		}
	}
	return out
}

func colorize(on bool, code, s string) string {
	if !on {
		return s
	}
	return code + s + ansiReset
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func runTimes(run *results.Run) string {
	s := run.Start.UTC().Format("2006-01-02 15:04:05 UTC")
	if !run.End.IsZero() {
		s += "  (" + fmtDuration(run.End.Sub(run.Start)) + ")"
	}
	return s
}

func hostLine(run *results.Run) string {
	h := run.Host
	var parts []string
	for _, p := range []string{h.Hostname, h.Kernel, h.CPUModel} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	if h.NProc > 0 {
		parts = append(parts, fmt.Sprintf("%d CPUs", h.NProc))
	}
	if h.MemBytes > 0 {
		parts = append(parts, fmt.Sprintf("%.1f GiB", float64(h.MemBytes)/(1<<30)))
	}
	accel := "accel " + orDash(h.Accel)
	switch {
	case run.ClockMode("") == results.ClockICount:
		accel += ", icount: " + results.InstructionTimeLabel
	case run.Emulated(""):
		accel += " (" + results.EmulatedLabel + ")"
	}
	parts = append(parts, accel)
	parts = append(parts, guestCPU(h)...)
	if run.KCIVersion != "" {
		// Numbers compare within one kci version: say which made these.
		parts = append(parts, "kci "+run.KCIVersion)
	}
	return strings.Join(parts, " · ")
}

func fmtDuration(d time.Duration) string {
	switch {
	case d >= time.Minute:
		return d.Round(time.Second).String()
	case d >= time.Second:
		return d.Round(10 * time.Millisecond).String()
	}
	return d.Round(time.Millisecond).String()
}

func survivalTable(rows []verdict.SurvivalRow) *table {
	t := &table{
		header: []string{"carrier", "path", "expected", "base", "patched", "change"},
		right:  make([]bool, 6),
	}
	for _, r := range rows {
		exp := ""
		switch {
		case r.Base != nil && r.Patched != nil && r.Base.Expected != r.Patched.Expected:
			exp = r.Base.Expected + " → " + r.Patched.Expected
		case r.Patched != nil:
			exp = r.Patched.Expected
		case r.Base != nil:
			exp = r.Base.Expected
		}
		t.add(r.Carrier, r.Path, exp, cellText(r.Base), cellText(r.Patched), r.Change)
	}
	return t
}

func cellText(c *verdict.CellState) string {
	if c == nil {
		return "-"
	}
	s := c.Observed
	switch {
	case c.Pass():
		s += " ok"
	case c.Passes > 0:
		s += fmt.Sprintf(" FAIL %d/%d", c.Runs-c.Passes, c.Runs)
	default:
		s += " FAIL"
	}
	return s
}
