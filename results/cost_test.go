package results

import (
	"math"
	"strings"
	"testing"
)

// costVariant is a valid variant whose window was busy for busy ns over
// pkts packets, with one program costing bpf ns in all.
func costVariant(name string, busy, bpf, pkts uint64) VariantResult {
	v := VariantResult{Variant: name, Valid: true,
		Cost: &Cost{IdleSource: "timer_list", ResolutionNs: 1, BusyNs: busy, BPFNs: bpf, SoftirqNs: 10_000_000, Packets: pkts}}
	if name != BaselineVariant {
		v.Programs = []ProgStat{{Name: name + "_egress", Type: "sched_cls", RunTimeNs: bpf, RunCnt: pkts}}
		v.Cost.PacketSource = "ref_cnt"
	}
	return v
}

func TestPathCostOf(t *testing.T) {
	b := Boot{Variants: []VariantResult{costVariant("none", 4_000_000, 0, 10_000), costVariant("ext", 5_500_000, 700_000, 10_000)}}
	pc, ok := PathCostOf(b, b.Variants[1])
	if !ok {
		t.Fatal("no path cost")
	}
	if pc.WholePath != 550 || pc.Marginal != 150 || pc.BPF != 70 || pc.Softirq != 1000 || pc.ResolutionNs != 0.0001 {
		t.Errorf("PathCostOf = %+v, want whole 550, marginal 150, bpf 70, softirq 1000", pc)
	}
	rows := pathRows(b, b.Variants[0])
	if len(rows) != 1 || rows[0].Name != WholePathRow || rows[0].NsPerPkt != 400 {
		t.Errorf("baseline rows = %+v, want only whole-path 400", rows)
	}
	// Without a valid baseline in the boot there is no marginal cost.
	b.Variants[0].Valid = false
	if pc, _ := PathCostOf(b, b.Variants[1]); !math.IsNaN(pc.Marginal) {
		t.Errorf("marginal without a baseline = %v, want NaN", pc.Marginal)
	}
	if _, ok := PathCostOf(b, VariantResult{Variant: "cnt"}); ok {
		t.Error("a variant without a cost record has a path cost")
	}
}

// TestCompareCostRows: the cost rows are decided like programs and stay
// out of the BPF total; a patch that only adds work outside the programs
// moves whole-path and marginal, never the total.
func TestCompareCostRows(t *testing.T) {
	run := &Run{}
	for rep := 1; rep <= 3; rep++ {
		for _, role := range []string{RoleBase, RolePatched} {
			extra := uint64(0)
			if role == RolePatched {
				extra = 300_000 // +30 ns/pkt outside the programs
			}
			run.Boots = append(run.Boots, Boot{Seq: len(run.Boots) + 1, Tree: "ext", Role: role, Rep: rep, Clock: ClockICount, Accel: AccelTCG,
				Variants: []VariantResult{costVariant("none", 4_000_000, 0, 10_000), costVariant("ext", 5_500_000+extra+uint64(rep), 700_000, 10_000)}})
		}
	}
	ab := Compare(run, "ext")
	var ext *VariantAB
	for i := range ab.Variants {
		if ab.Variants[i].Variant == "ext" {
			ext = &ab.Variants[i]
		}
	}
	if ext == nil {
		t.Fatalf("no ext variant: %+v", ab.Variants)
	}
	if ext.Total.Verdict != NoChange || ext.Total.Base.Median != 70 {
		t.Errorf("total = %+v, want 70 ns, no change", ext.Total)
	}
	got := map[string]Row{}
	for _, r := range ext.Programs {
		got[r.Name] = r
	}
	for _, name := range []string{WholePathRow, MarginalRow} {
		r, ok := got[name]
		if !ok {
			t.Fatalf("no %s row: %+v", name, ext.Programs)
		}
		if r.Verdict != Slower {
			t.Errorf("%s: verdict %v (%+v), want slower", name, r.Verdict, r)
		}
	}
	if d := got[MarginalRow].Patched.Median - got[MarginalRow].Base.Median; math.Abs(d-30) > 1e-9 {
		t.Errorf("marginal moved by %.3f ns/pkt, want 30", d)
	}
	// A boot whose agent measured no cost: the rows go, rather than read 0.
	run.Boots[0].Variants[1].Cost = nil
	for _, v := range Compare(run, "ext").Variants {
		for _, r := range v.Programs {
			if v.Variant == "ext" && (r.Name == WholePathRow || r.Name == MarginalRow) {
				t.Errorf("row %s kept although one boot has no cost", r.Name)
			}
		}
	}
}

func TestBuildBench(t *testing.T) {
	run := &Run{}
	for seed := uint64(1); seed <= 3; seed++ {
		// ext adds 100+seed ns/pkt over its baseline, gtp 400+2·seed.
		run.Boots = append(run.Boots,
			Boot{Seq: len(run.Boots) + 1, Tree: "ext", Role: RoleBase, Rep: int(seed), Seed: seed, Clock: ClockICount,
				Variants: []VariantResult{costVariant("none", 4_000_000, 0, 10_000), costVariant("ext", 5_000_000+seed*10_000, 500_000, 10_000)}},
			Boot{Seq: len(run.Boots) + 2, Tree: "gtp", Role: RoleBase, Rep: int(seed), Seed: seed, Clock: ClockICount,
				Variants: []VariantResult{costVariant("none", 4_000_000, 0, 10_000), costVariant("gtp", 8_000_000+seed*20_000, 900_000, 10_000)}})
	}
	// hash runs on both trees: no design of either, no ratio.
	for i := range run.Boots {
		run.Boots[i].Variants = append(run.Boots[i].Variants, costVariant("hash", 6_000_000, 1_000_000, 10_000))
	}
	bt := BuildBench(run)
	if len(bt.Agg.Sets) != 3 || bt.Agg.Sets[0] != "seed-1" {
		t.Fatalf("sets = %v, want seed-1..3", bt.Agg.Sets)
	}
	if len(bt.Ratios) != 2 {
		t.Fatalf("ratios = %+v, want ext vs gtp marginal and bpf", bt.Ratios)
	}
	r := bt.Ratios[0]
	if r.A != "ext-ext" || r.B != "gtp-gtp" || r.Metric != MarginalRow || math.Abs(r.Ratio-102.0/404) > 1e-9 {
		t.Errorf("ratio = %+v, want ext-ext/gtp-gtp marginal %.4f", r, 102.0/404)
	}
	if !(r.Lo < r.Ratio && r.Ratio < r.Hi) || r.Hi-r.Lo > 0.05 {
		t.Errorf("interval [%v, %v] around %v", r.Lo, r.Hi, r.Ratio)
	}
	if b := bt.Ratios[1]; b.Metric != "bpf" || math.Abs(b.Ratio-50.0/90) > 1e-9 || b.Lo != b.Ratio {
		t.Errorf("bpf ratio = %+v, want 50/90 with a zero-width interval (no spread)", b)
	}
	out := BenchString(bt)
	t.Log("\n" + out)
	for _, want := range []string{"ext-ext          ext_egress", "[marginal]", "102.0 ± 1.0", "ext-ext vs gtp-gtp marginal cost: 0.25× [", "gtp-none"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

// TestLaterLooksKeepTheBaseline: a variant booted again for undecided
// rows takes the baseline along, or its marginal row would lose its
// samples.
func TestLaterLooksKeepTheBaseline(t *testing.T) {
	ab := TreeAB{Variants: []VariantAB{{Variant: "none"}, {Variant: "ext"}, {Variant: "cnt"}}}
	if got := withBaselineOf(ab, []string{"ext"}); strings.Join(got, ",") != "none,ext" {
		t.Errorf("withBaselineOf(ext) = %v, want none,ext", got)
	}
	if got := withBaselineOf(ab, []string{"none", "cnt"}); strings.Join(got, ",") != "none,cnt" {
		t.Errorf("withBaselineOf(none,cnt) = %v", got)
	}
	if got := withBaselineOf(ab, nil); got != nil {
		t.Errorf("nothing undecided: %v, want nothing to boot", got)
	}
	if got := withBaselineOf(TreeAB{Variants: []VariantAB{{Variant: "ext"}}}, []string{"ext"}); strings.Join(got, ",") != "ext" {
		t.Errorf("a run without a baseline: %v", got)
	}
}

// TestBuildBenchSameSeed: kci test --seed boots one seed again and again;
// each boot keeps its own column, so identical boots show as identical.
func TestBuildBenchSameSeed(t *testing.T) {
	run := &Run{}
	for rep := 1; rep <= 3; rep++ {
		run.Boots = append(run.Boots, Boot{Seq: rep, Tree: "gtp", Role: RoleBase, Rep: rep, Seed: 1, Clock: ClockICount,
			Variants: []VariantResult{costVariant("none", 4_000_000, 0, 10_000), costVariant("gtp", 8_000_000, 900_000, 10_000)}})
	}
	bt := BuildBench(run)
	if strings.Join(bt.Agg.Sets, ",") != "seed-1,seed-1/rep-2,seed-1/rep-3" {
		t.Fatalf("sets = %v", bt.Agg.Sets)
	}
	if p := bt.Paths[1][0]; p.Name != WholePathRow || len(p.Values) != 3 || p.Spread != 0 || p.Mean != 800 {
		t.Errorf("gtp whole-path = %+v, want 800 in each of 3 columns", p)
	}
}
