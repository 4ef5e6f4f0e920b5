package results

import "testing"

func TestHolmKeepsStrongAndDropsChanceFindings(t *testing.T) {
	row := func(name string, p float64, v Verdict) Row {
		return Row{Name: name, P: p, Verdict: v, DeltaPct: 5, Base: Dist{Median: 1}, Patched: Dist{Median: 1.05}}
	}
	ab := TreeAB{Variants: []VariantAB{
		{Variant: "a", Total: row("total", 0.002, Slower), Programs: []Row{row("w", 0.03, Slower), row("r", 0.5, NoChange)}},
		{Variant: "b", Total: row("total", 0.2, NoChange), Programs: []Row{row("x", 0.04, Faster), row("y", 0.9, NoChange)}},
	}}
	holm(&ab)
	a, b := ab.Variants[0], ab.Variants[1]
	// m = 6: 0.002*6 = 0.012 stays significant; 0.03*5 and 0.04*4 do not.
	if a.Total.Verdict != Slower || a.Total.PAdj != 0.012 {
		t.Errorf("strong finding: %s padj=%v", a.Total.Verdict, a.Total.PAdj)
	}
	if a.Programs[0].Verdict != NoChange || len(a.Programs[0].Warnings) == 0 {
		t.Errorf("chance finding kept: %+v", a.Programs[0])
	}
	if b.Programs[0].Verdict != NoChange {
		t.Errorf("chance finding kept: %+v", b.Programs[0])
	}
	// Adjusted p never decreases along the sorted order and never exceeds 1.
	if b.Programs[1].PAdj != 1 {
		t.Errorf("largest p adjusted to %v, want capped at 1", b.Programs[1].PAdj)
	}
}
