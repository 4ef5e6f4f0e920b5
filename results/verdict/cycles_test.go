package verdict

import (
	"math"
	"testing"

	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/results/internal/runtest"
)

// cyclesRun: a patch adds one instruction and one DRAM miss (240
// modelled cycles) per packet to hash; the none baseline is unchanged.
// Whole-path moves by one instruction-time ns, modelled cycles by 241.
func cyclesRun() *results.Run {
	run := runtest.MkRun(results.AccelTCG, results.ClockICount, 3, 3,
		[]runtest.VarSpec{{Name: "none"}, {Name: "hash", Progs: []string{"hash_write"}}},
		func(string, int, string, string) float64 { return 100 })
	for i := range run.Boots {
		b := &run.Boots[i]
		b.Seed = uint64(b.Rep)
		for j := range b.Variants {
			v := &b.Variants[j]
			insns, cycles := 3000.0, 5000.0
			if v.Variant == "hash" {
				insns, cycles = 3200, 5900
				if b.Role == results.RolePatched {
					insns, cycles = insns+1, cycles+241
				}
			}
			v.Valid = true
			v.Cost = &results.Cost{Packets: 1000, BusyNs: uint64(insns * 1000), ResolutionNs: 1}
			v.Exact = &results.Exact{Packets: 1000, Insns: uint64(insns * 1000), Cycles: uint64(cycles * 1000), Model: "test model"}
		}
	}
	return run
}

func TestCyclesRowsDecidedByTheSameRule(t *testing.T) {
	ab := compareOf(cyclesRun(), "gtp")
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

func TestBenchRatiosOnBothMetrics(t *testing.T) {
	run := cyclesRun()
	for i := range run.Boots {
		run.Boots[i].Role = results.RoleBase
	}
	bt := BuildBench(run)
	if bt.Model != "test model" {
		t.Errorf("bench model %q", bt.Model)
	}
	var found bool
	for i, v := range bt.Agg.Variants {
		if v.Variant == "gtp-hash" {
			cm := pathValues(bt.Paths[i], CyclesMarginalRow)
			if len(cm) == 0 {
				t.Fatalf("gtp-hash has no %s row", CyclesMarginalRow)
			}
			found = true
		}
	}
	if !found {
		t.Fatalf("no gtp-hash among %d variants", len(bt.Agg.Variants))
	}
}
