package results

import (
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"time"
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

// Text writes the whole run as an aligned plain-text report.
func Text(w io.Writer, run *Run, opt TextOptions) error {
	var b strings.Builder
	bold := func(s string) string {
		if opt.Color {
			return ansiBold + s + ansiReset
		}
		return s
	}
	b.WriteString(bold("kci run "+run.ID) + "  " + runTimes(run) + "\n")
	if run.Incomplete {
		b.WriteString(colorize(opt.Color, ansiYellow, "INCOMPLETE: "+run.IncompleteReason) + "\n")
	}
	if len(run.MergedFrom) > 0 {
		b.WriteString("merged from shards: " + strings.Join(run.MergedFrom, ", ") + "\n")
	}
	b.WriteString("host: " + hostLine(run) + "\n")
	b.WriteString("boots: " + run.BootsLine("") + "\n")
	for _, c := range run.Host.Checks {
		if c.Status == CheckOK {
			continue
		}
		col := ansiYellow
		if c.Status == CheckFail {
			col = ansiRed
		}
		line := fmt.Sprintf("  doctor %s: %s", colorize(opt.Color, col, c.Status), c.Name)
		if c.Detail != "" {
			line += ": " + c.Detail
		}
		if c.Fix != "" {
			line += " (fix: " + c.Fix + ")"
		}
		b.WriteString(line + "\n")
	}
	for _, tree := range selectTrees(run, opt.Trees) {
		tr := Analyze(run, tree)
		b.WriteString("\n" + bold("== tree "+tree+" ==") + "\n")
		writeTreeText(&b, tr, opt.Color)
	}
	if len(run.Phases) > 0 {
		b.WriteString("\nphases:\n")
		t := &table{header: []string{"phase", "tree", "kernel", "duration"}, right: []bool{false, false, false, true}}
		for _, p := range run.Phases {
			t.add(p.Name, p.Tree, p.Kernel, fmtDuration(p.Duration))
		}
		b.WriteString(t.text("  "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func selectTrees(run *Run, want []string) []string {
	if len(want) == 0 {
		return run.TreeNames()
	}
	return want
}

func writeTreeText(b *strings.Builder, tr TreeReport, color bool) {
	if tr.Base != "" || tr.Patched != "" {
		fmt.Fprintf(b, "kernels: base %s → patched %s\n", orDash(tr.Base), orDash(tr.Patched))
	}
	for _, p := range tr.Patches {
		fmt.Fprintf(b, "  patch: %s\n", p)
	}
	if tr.ConfigVerdict != "" {
		fmt.Fprintf(b, "config: %s\n", tr.ConfigVerdict)
	}
	for _, d := range tr.Drift {
		fmt.Fprintf(b, "  drift: %s\n", d)
	}
	col := ansiGreen
	switch tr.Conclusion.State {
	case Failure:
		col = ansiRed
	case Neutral:
		col = ansiYellow
	}
	fmt.Fprintf(b, "verdict: %s — %s\n", colorize(color, col, tr.Conclusion.State), tr.Conclusion.Title)
	if len(tr.Perf.Variants) > 0 {
		b.WriteString("\nperformance, " + perfHeading(tr.Perf) + ":\n")
		t := abTable(tr.Perf)
		if color {
			t.paint = func(row, col int, s string) string {
				if col != len(t.header)-1 {
					return s
				}
				switch {
				case strings.HasPrefix(s, string(Slower)):
					return colorize(true, ansiRed, s)
				case strings.HasPrefix(s, string(Faster)):
					return colorize(true, ansiGreen, s)
				case strings.HasPrefix(s, string(TooFew)), strings.HasPrefix(s, string(NotComparable)):
					return colorize(true, ansiYellow, s)
				}
				return s
			}
		}
		b.WriteString(t.text("  "))
	}
	if len(tr.Loads) > 0 {
		t, notes := loadsTable(tr.Loads)
		b.WriteString("\nverifier and JIT (base → patched; insns and sizes are the kernel's counts, times guest medians):\n")
		b.WriteString(t.text("  "))
		for _, n := range notes {
			b.WriteString("  " + n + "\n")
		}
	}
	for _, w := range tr.Perf.Warnings {
		b.WriteString(colorize(color, ansiYellow, "warning: ") + w + "\n")
	}
	if len(tr.Perf.Excluded) > 0 {
		b.WriteString("\nnot in the statistics:\n")
		for _, e := range tr.Perf.Excluded {
			b.WriteString("  " + excludedLine(e) + "\n")
		}
	}
	if len(tr.Survival) > 0 {
		b.WriteString("\nsurvival (base → patched):\n")
		t := survivalTable(tr.Survival)
		if color {
			t.paint = func(row, col int, s string) string {
				if col != len(t.header)-1 {
					return s
				}
				switch strings.TrimSpace(s) {
				case Regression:
					return colorize(true, ansiRed, s)
				case Fixed:
					return colorize(true, ansiGreen, s)
				}
				return s
			}
		}
		b.WriteString(t.text("  "))
	}
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

func runTimes(run *Run) string {
	s := run.Start.UTC().Format("2006-01-02 15:04:05 UTC")
	if !run.End.IsZero() {
		s += "  (" + fmtDuration(run.End.Sub(run.Start)) + ")"
	}
	return s
}

func hostLine(run *Run) string {
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
	case run.ClockMode("") == ClockICount:
		accel += ", icount (" + InstructionTimeLabel + ")"
	case run.Emulated(""):
		accel += " (" + EmulatedLabel + ")"
	}
	parts = append(parts, accel)
	parts = append(parts, guestCPU(h)...)
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

// perfHeading says what the A/B table's numbers are and how they were
// decided.
func perfHeading(ab TreeAB) string {
	if ab.Deterministic() {
		return InstructionTimeLabel + " " + ab.DetRule()
	}
	s := fmt.Sprintf("ns/pkt (median of boots; CI at 95%%; CV = boot-to-boot variation; shift = Hodges–Lehmann estimate of patched vs base "+
		"with its 95%% interval; p = Mann–Whitney U, p adj = Holm over %s, and over a variant's programs only when its total moved; "+
		"smallest effect of interest ±%.1f%%)", plural(ab.Family, "variant total"), ab.MinEffectPct)
	if ab.Emulated {
		s += " [" + EmulatedLabel + "]"
	}
	return s
}

// abTable lays out a tree's comparison: each variant's total first, then
// its programs. Deterministic mode shows the observed ranges and spreads
// instead of intervals and p-values.
func abTable(ab TreeAB) *table {
	if ab.Deterministic() {
		t := &table{
			header: []string{"variant", "prog", "base", "range", "spread", "patched", "range", "spread", "delta", "n", "verdict"},
			right:  []bool{false, false, true, true, true, true, true, true, true, true, false},
		}
		for _, v := range ab.Variants {
			for i, r := range append([]Row{v.Total}, v.Programs...) {
				name := ""
				if i == 0 {
					name = v.Variant
				}
				t.add(name, r.Name,
					fmtNs(r.Base.Median), fmtRange(r.Base), fmtSpread(r.Base.Spread),
					fmtNs(r.Patched.Median), fmtRange(r.Patched), fmtSpread(r.Patched.Spread),
					fmtDelta(r), fmt.Sprintf("%d+%d", r.Base.N, r.Patched.N), detVerdictText(r, ab.MinEffectPct))
			}
		}
		return t
	}
	t := &table{
		header: []string{"variant", "prog", "base", "±CI", "CV", "patched", "±CI", "CV", "delta", "shift (95% CI)", "p", "p adj", "n", "verdict"},
		right:  []bool{false, false, true, true, true, true, true, true, true, true, true, true, true, false},
	}
	for _, v := range ab.Variants {
		rows := append([]Row{v.Total}, v.Programs...)
		for i, r := range rows {
			name := ""
			if i == 0 {
				name = v.Variant
			}
			t.add(name, r.Name,
				fmtNs(r.Base.Median), r.Base.CI, fmtPct(r.Base.CV),
				fmtNs(r.Patched.Median), r.Patched.CI, fmtPct(r.Patched.CV),
				fmtDelta(r), fmtShift(r.Shift), fmtP(r.P), fmtP(r.PAdj), fmt.Sprintf("%d+%d", r.Base.N, r.Patched.N), verdictText(r, ab.MinEffectPct))
		}
	}
	return t
}

func fmtRange(d Dist) string {
	if d.N == 0 {
		return "-"
	}
	return fmtNs(d.Min) + ".." + fmtNs(d.Max)
}

// fmtSpread shows small spreads with the digits they need: identical
// boots read 0%, a few hundredths of a percent stay visible.
func fmtSpread(x float64) string {
	switch {
	case math.IsNaN(x):
		return "-"
	case x == 0:
		return "0%"
	case x < 0.1:
		return fmt.Sprintf("%.3f%%", x)
	}
	return fmt.Sprintf("%.2f%%", x)
}

func fmtShift(s Shift) string {
	if math.IsNaN(s.Est) {
		return "-"
	}
	end := func(x float64) string {
		switch {
		case math.IsInf(x, -1):
			return "-∞"
		case math.IsInf(x, 1):
			return "+∞"
		}
		return fmt.Sprintf("%+.1f", x)
	}
	return fmt.Sprintf("%+.1f%% (%s..%s)", s.Est, end(s.Lo), end(s.Hi))
}

func fmtPct(x float64) string {
	if math.IsNaN(x) {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", x)
}

func fmtDelta(r Row) string {
	if math.IsNaN(r.DeltaPct) {
		return "-"
	}
	return fmt.Sprintf("%+.1f%%", r.DeltaPct)
}

func fmtP(p float64) string {
	if math.IsNaN(p) {
		return "-"
	}
	return fmt.Sprintf("%.3f", p)
}

// detVerdictText is a deterministic-mode verdict, in the row's words
// (Row.DetText).
func detVerdictText(r Row, _ float64) string { return r.DetText() }

func verdictText(r Row, minEffect float64) string {
	s := string(r.Verdict)
	if (r.Verdict == Slower || r.Verdict == Faster) && r.Adjusted != nil {
		s = r.ChangeText()
	}
	switch {
	case r.Note == NoteNotExamined:
		return "not examined"
	case r.InNoise:
		s += fmt.Sprintf(" (within ±%.1f%%)", minEffect)
	case r.Verdict == TooFew && r.Need > 0:
		s += fmt.Sprintf(" (needs >= %d boots)", r.Need)
	case r.Note != "":
		s += " (" + r.Note + ")"
	}
	return s
}

func excludedLine(e Excluded) string {
	what := fmt.Sprintf("boot %d (%s rep %d)", e.Seq, e.Role, e.Rep)
	if e.Variant != "" {
		what += " " + e.Variant
	}
	return fmt.Sprintf("%s: %s: %s", what, e.Kind, e.Reason)
}

func survivalTable(rows []SurvivalRow) *table {
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

func cellText(c *CellState) string {
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
