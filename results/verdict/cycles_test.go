package verdict

import (
	"math"
	"testing"

	"github.com/kci-dev/kci/results/internal/runtest"
)

func TestCyclesRowsDecidedByTheSameRule(t *testing.T) {
	ab := compareOf(runtest.CyclesRun(), "gtp")
	var hash *VariantAB
	for i := range ab.Variants {
		if ab.Variants[i].Variant == "hash" {
			hash = &ab.Variants[i]
		}
	}
	if hash == nil {
		t.Fatal("no hash variant")
	}
	rows := map[string]Row{}
	for _, r := range hash.Programs {
		rows[r.Name] = r
	}
	cyc, ok := rows[CyclesMarginalRow]
	if !ok {
		t.Fatalf("no %s row among %v", CyclesMarginalRow, hash.Programs)
	}
	if cyc.Verdict != Slower || math.Abs(cyc.w.Diff-241) > 1e-6 {
		t.Errorf("%s: %s, moved %+.1f; want slower by 241 cycles/pkt", CyclesMarginalRow, cyc.Verdict, cyc.w.Diff)
	}
	m := rows[MarginalRow]
	if d := m.w.Diff; math.Abs(d-1) > 1e-6 || cyc.w.Diff < 5*d {
		t.Errorf("marginal moved %+.2f, cycles %+.1f: want 1 instruction and at least 5× that in cycles", d, cyc.w.Diff)
	}
}
