package render

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/results/verdict"
)

// abTable lays out a tree's comparison in at most 100 columns: per
// variant its total, then its programs that ran; medians of both kernels,
// one change with its interval (see RowChange), boots and the verdict. A
// "no change" carries the change it would have shown.
func abTable(ab verdict.TreeAB) *table {
	t := &table{
		header: []string{"row", "base", "patched", "change [interval]", "boots", "verdict"},
		right:  []bool{false, true, true, false, true, false},
	}
	noisy := !ab.Deterministic()
	if noisy {
		t.header = append(t.header[:5:5], "p adj", "verdict")
		t.right = append(t.right[:5:5], true, false)
	}
	for _, v := range ab.Variants {
		for i, r := range append([]verdict.Row{v.Total}, v.Programs...) {
			if i > 0 && !r.Ran() {
				continue // a program that never ran is no result
			}
			if i == 0 && !r.Ran() {
				// No program ran (the baseline variant 'none'): its rows
				// are the cost outside BPF, not a 0 ns/pkt total.
				what := " (no BPF programs)"
				if ab.Interleaved && !verdict.IsBaseline(v.Variant) {
					what = " (programs' rows left out: several vCPUs)"
				}
				t.add(append([]string{v.Variant + what}, make([]string, len(t.header)-1)...)...)
				continue
			}
			name := v.Variant + " total"
			if i > 0 {
				name = "  " + r.Name
			}
			e := verdict.RowChange(ab, v.Variant, r)
			cells := []string{name, fmtMedian(r.Base, noisy), fmtMedian(r.Patched, noisy), fmtChange(e),
				fmt.Sprintf("%d+%d", r.Base.N, r.Patched.N)}
			if noisy {
				cells = append(cells, fmtP(r.PAdj))
			}
			t.add(append(cells, rowVerdict(r, e, ab.MinEffectPct))...)
		}
	}
	return t
}

// abLegend says, once, what the table's numbers are and how they were
// decided, in parts (each short enough for one Markdown field).
func abLegend(ab verdict.TreeAB) []string {
	if ab.Deterministic() {
		floor := fmt.Sprintf("%g ns (one instruction)", verdict.ResolutionNs)
		if ab.HasCyclesRows() {
			floor = fmt.Sprintf("%g ns (one instruction; on the cache model's rows %g modelled cycle)", verdict.ResolutionNs, verdict.ResolutionNs)
		}
		if ab.HasCallRows() {
			floor += fmt.Sprintf(" (on %s rows %g instruction or modelled cycle)", verdict.CallRowPrefix, verdict.ResolutionNs)
		}
		parts := []string{
			unitsLegend(ab) + ", median of boots",
			"change = difference of per-seed means with its 95% interval (Welch t)",
			fmt.Sprintf("a change must be significant (Holm over %s of the run at %.0f%% family-wise over %s) and reach ±%.1f%% and %s",
				results.Plural(ab.Family, "row"), ab.Alpha*100, results.Plural(max(ab.Looks, 1), "look"), ab.MinEffectPct, floor),
			fmt.Sprintf("\"no change ±X%%\": the change that row would have shown with %.0f%% power", verdict.PowerLevel*100),
		}
		if sq := ab.Sequential; sq != nil && sq.Stop != "" {
			parts = append(parts, fmt.Sprintf("adaptive seeds: %d of %d looks, %s: %s", sq.Done, sq.Looks, sq.BudgetLine(), sq.Stop))
		}
		return parts
	}
	parts := []string{
		unitsLegend(ab) + ", median of boots ± its 95% CI",
		"change = Hodges–Lehmann shift, [95% interval; a decided row's at the family's level, 1 − 0.05/m]",
		fmt.Sprintf("p adj = Mann–Whitney U, Holm over %s, and over a variant's programs only when its total moved",
			results.Plural(ab.Family, "variant total")),
		fmt.Sprintf("smallest effect of interest ±%.1f%%", ab.MinEffectPct),
		"\"no change ±X%\": the farther end of the interval",
	}
	if ab.Emulated {
		parts = append(parts, results.EmulatedLabel)
	}
	return parts
}

// unitsLegend names the table's units: the tree's ns, and the cache
// model's rows in their own.
func unitsLegend(ab verdict.TreeAB) string {
	s := ab.Metric() + " " + verdict.NsUnit
	if ab.HasCyclesRows() {
		s += fmt.Sprintf(" (%s and %s rows: %s, kci's cache model: a model, not ns)",
			verdict.CyclesRow, verdict.CyclesMarginalRow, results.ModelledCyclesLabel)
	}
	if ab.HasCallRows() {
		s += fmt.Sprintf(" (%s<prog> rows: a program's calls in bpf_stats' scope, %s or %s, kci's QEMU plugin)",
			verdict.CallRowPrefix, results.InstructionsLabel, results.ModelledCyclesLabel)
	}
	if ab.Interleaved {
		s += fmt.Sprintf("; %s and %s rows: %s, the plugin's exact count over every vCPU; %s",
			verdict.InsnsRow, verdict.InsnsMarginalRow, results.InstructionsLabel, verdict.InterleavedNote)
	}
	return s
}

// fmtMedian is a median, with its CI in noisy mode.
func fmtMedian(d verdict.Dist, noisy bool) string {
	if d.N == 0 || math.IsNaN(d.Median) {
		return "-"
	}
	if !noisy || math.IsNaN(d.Lo) || d.Median == 0 {
		return fmtNs(d.Median)
	}
	half := math.Max(d.Median-d.Lo, d.Hi-d.Median) / d.Median * 100
	if math.IsInf(half, 0) || math.IsNaN(half) {
		return fmtNs(d.Median) + " ±∞"
	}
	return fmt.Sprintf("%s ±%.0f%%", fmtNs(d.Median), half)
}

// fmtChange is a change and its interval: "-41.6% [-41.9, -41.3]".
func fmtChange(e verdict.Change) string {
	if math.IsNaN(e.Pct) {
		return "-"
	}
	s := verdict.FmtSigned(e.Pct) + "%"
	if !math.IsNaN(e.LowPct) && !math.IsNaN(e.HighPct) {
		s += " [" + verdict.FmtSigned(e.LowPct) + ", " + verdict.FmtSigned(e.HighPct) + "]"
	}
	return s
}

// rowVerdict is a row's verdict in the report's one vocabulary.
func rowVerdict(r verdict.Row, e verdict.Change, minEffect float64) string {
	switch {
	case r.Note == verdict.NoteNotExamined:
		return "not examined"
	case r.InNoise:
		return fmt.Sprintf("%s, within ±%.1f%%", r.Verdict, minEffect)
	case r.Verdict == verdict.TooFew && r.Need > 0:
		return fmt.Sprintf("%s: needs %d boots", verdict.TooFew, r.Need)
	case r.Untested():
		return fmt.Sprintf("not tested (%d of %d seeds)", r.Seeds, verdict.MinSpreadSeeds)
	case r.Verdict == verdict.NoChange:
		s := "no change"
		if e.WouldShowPct > 0 {
			s += fmt.Sprintf(" ±%.1f%%", e.WouldShowPct)
		}
		if r.Note == verdict.NoteBelowResolution {
			s += " (< 1 insn)"
		}
		return s
	case r.Verdict == verdict.TooFew && r.Note == verdict.NoteOneSeed:
		return "determinism check only"
	}
	return string(r.Verdict)
}

// excludedLines collapse what is not in the statistics: variants left out
// for the same reason are one line ("skipped: cnt, hash in 6 boots: not
// in this tree"); a failed boot keeps its own line.
func excludedLines(ex []verdict.Excluded) []string {
	type group struct {
		kind, reason string
		variants     []string
		boots        map[int]bool
		first        verdict.Excluded
	}
	var groups []*group
	idx := map[[2]string]*group{}
	var out []string
	for _, e := range ex {
		if e.Variant == "" {
			out = append(out, excludedLine(e))
			continue
		}
		k := [2]string{e.Kind, e.Reason}
		g := idx[k]
		if g == nil {
			g = &group{kind: e.Kind, reason: e.Reason, boots: map[int]bool{}, first: e}
			idx[k] = g
			groups = append(groups, g)
		}
		if !slices.Contains(g.variants, e.Variant) {
			g.variants = append(g.variants, e.Variant)
		}
		g.boots[e.Seq] = true
	}
	for _, g := range groups {
		if len(g.variants) == 1 && len(g.boots) == 1 {
			out = append(out, excludedLine(g.first))
			continue
		}
		out = append(out, fmt.Sprintf("%s %s (%s) in %s: %s", g.kind, results.Plural(len(g.variants), "variant"),
			strings.Join(g.variants, ", "), results.Plural(len(g.boots), "boot"), g.reason))
	}
	return out
}

func excludedLine(e verdict.Excluded) string {
	what := fmt.Sprintf("boot %d (%s rep %d)", e.Seq, e.Role, e.Rep)
	if e.Variant != "" {
		what += " " + e.Variant
	}
	return fmt.Sprintf("%s: %s: %s", what, e.Kind, e.Reason)
}

// configLine collapses the production-config drift: one line when base
// and patched differ from production alike, each option the patch
// changed otherwise.
func configLine(run *results.Run, tr verdict.TreeReport) []string {
	if tr.ConfigCheck == "" && len(tr.Drift) == 0 {
		return nil
	}
	head := "config: " + orDash(tr.ConfigCheck)
	if len(tr.Drift) == 0 {
		return []string{head}
	}
	notDeliberate := 0
	for _, d := range tr.Drift {
		if strings.Contains(d, "NOT deliberate") {
			notDeliberate++
		}
	}
	head += fmt.Sprintf("; %s differ from production", results.Plural(len(tr.Drift), "option"))
	if notDeliberate > 0 {
		head += fmt.Sprintf(" (%d not deliberate: numbers may not transfer)", notDeliberate)
	} else {
		head += " (all deliberate)"
	}
	out := []string{head + "; listed in report.json"}
	if t := run.Tree(tr.Tree); t != nil && t.Base != nil && t.Patched != nil {
		for _, d := range driftChanges(t.Base.Drift, t.Patched.Drift) {
			out = append(out, "  patch changes config: "+d)
		}
	}
	return out
}

// driftChanges lists the options whose drift differs between the
// kernels: what the patch did to the config.
func driftChanges(base, patched []results.Drift) []string {
	key := func(ds []results.Drift) map[string]string {
		m := map[string]string{}
		for _, d := range ds {
			m[d.Option] = d.Here
		}
		return m
	}
	b, p := key(base), key(patched)
	var out []string
	for opt, here := range p {
		if bh, ok := b[opt]; !ok || bh != here {
			out = append(out, fmt.Sprintf("%s %s → %s", opt, orDash(b[opt]), here))
		}
	}
	for opt, here := range b {
		if _, ok := p[opt]; !ok {
			out = append(out, fmt.Sprintf("%s %s → as production", opt, here))
		}
	}
	sort.Strings(out)
	return out
}

// survivalLine is the survival result in one line when nothing changed.
func survivalLine(tr verdict.TreeReport) string {
	fails := 0
	for _, r := range tr.Survival {
		if r.Patched != nil && !r.Patched.Pass() {
			fails++
		}
	}
	s := fmt.Sprintf("survival: %d cells, no change between base and patched", len(tr.Survival))
	if fails > 0 {
		s += fmt.Sprintf(" (%d fail on both, as expected or not: see the matrix)", fails)
	}
	return s
}

func fmtP(p float64) string {
	if math.IsNaN(p) {
		return "-"
	}
	return fmt.Sprintf("%.3f", p)
}
