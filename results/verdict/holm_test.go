package verdict

import (
	"testing"

	"github.com/kci-dev/kci/results"
)

func TestHolmKeepsStrongAndDropsChanceFindings(t *testing.T) {
	row := func(name string, p float64) *Row {
		return &Row{Name: name, P: p, DeltaPct: 5, Base: Dist{Median: 1, N: 8}, Patched: Dist{Median: 1.05, N: 8},
			Shift: Shift{Est: 5, Lo: 2, Hi: 8}}
	}
	a, w, r, b, x, y := row("a", 0.002), row("w", 0.03), row("r", 0.5), row("b", 0.2), row("x", 0.04), row("y", 0.9)
	fam := []*Row{a, w, r, b, x, y}
	holm(fam)
	for _, rr := range fam {
		decideRow(rr, len(fam), results.DefaultMinEffectPct, true)
	}
	// m = 6: 0.002*6 = 0.012 stays significant; 0.03*5 and 0.04*4 do not.
	if a.Verdict != Slower || a.PAdj != 0.012 {
		t.Errorf("strong finding: %s padj=%v", a.Verdict, a.PAdj)
	}
	if w.Verdict != NoChange || len(w.Warnings) == 0 {
		t.Errorf("chance finding kept: %+v", w)
	}
	if x.Verdict != NoChange {
		t.Errorf("chance finding kept: %+v", x)
	}
	// Adjusted p never decreases along the sorted order and never exceeds 1.
	if y.PAdj != 1 {
		t.Errorf("largest p adjusted to %v, want capped at 1", y.PAdj)
	}
}
