package benchtab

import (
	"testing"

	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/results/internal/runtest"
	"github.com/kci-dev/kci/results/verdict"
)

func TestBenchRatiosOnBothMetrics(t *testing.T) {
	run := runtest.CyclesRun()
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
			cm := pathValues(bt.Paths[i], verdict.CyclesMarginalRow)
			if len(cm) == 0 {
				t.Fatalf("gtp-hash has no %s row", verdict.CyclesMarginalRow)
			}
			found = true
		}
	}
	if !found {
		t.Fatalf("no gtp-hash among %d variants", len(bt.Agg.Variants))
	}
}
