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

// Boots of a guest of several vCPUs mark the table interleaved, and the
// hardware comparison's time unit says its numbers count the other vCPUs'
// turns; a one-vCPU table says neither.
func TestBenchInterleaved(t *testing.T) {
	for _, vcpus := range []int{1, 2} {
		run := runtest.CyclesRun()
		for i := range run.Boots {
			b := &run.Boots[i]
			b.Role = results.RoleBase
			if b.Sanity == nil {
				b.Sanity = &results.Sanity{}
			}
			b.Sanity.NumCPU = vcpus
			for j := range b.Variants {
				if e := b.Variants[j].Exact; e != nil && vcpus > 1 {
					e.VCPUs = []results.VCPUCount{{Insns: e.Insns / 2}, {Insns: e.Insns - e.Insns/2}}
				}
			}
		}
		bt := BuildBench(run)
		if bt.Interleaved != (vcpus > 1) {
			t.Errorf("%d vCPUs: interleaved %v", vcpus, bt.Interleaved)
		}
		m := kciMetrics(bt)
		if got := len(m[0].unit) > len(bt.Unit); got != (vcpus > 1) {
			t.Errorf("%d vCPUs: bpf unit %q", vcpus, m[0].unit)
		}
	}
}
