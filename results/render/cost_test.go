package render

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/kci-dev/kci/internal/golden"
	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/results/benchtab"
	"github.com/kci-dev/kci/results/verdict"
)

// costVariant is a valid variant whose window was busy for busy ns over
// pkts packets, with one program costing bpf ns in all.
func costVariant(name string, busy, bpf, pkts uint64) results.VariantResult {
	v := results.VariantResult{Variant: name, Valid: true,
		Cost: &results.Cost{IdleSource: "timer_list", ResolutionNs: 1, BusyNs: busy, BPFNs: bpf, SoftirqNs: 10_000_000, Packets: pkts}}
	if name != verdict.BaselineVariant {
		v.Programs = []results.ProgStat{{Name: name + "_egress", Type: "sched_cls", RunTimeNs: bpf, RunCnt: pkts}}
		v.Cost.PacketSource = "ref_cnt"
	}
	return v
}

func TestPathCostOf(t *testing.T) {
	b := results.Boot{Variants: []results.VariantResult{costVariant("none", 4_000_000, 0, 10_000), costVariant("ext", 5_500_000, 700_000, 10_000)}}
	pc, ok := verdict.PathCostOf(b, b.Variants[1])
	if !ok {
		t.Fatal("no path cost")
	}
	if pc.WholePath != 550 || pc.Marginal != 150 || pc.BPF != 70 || pc.ResolutionNs != 0.0001 {
		t.Errorf("PathCostOf = %+v, want whole 550, marginal 150, bpf 70", pc)
	}
	rows := verdict.PathRows(b, b.Variants[0])
	if len(rows) != 1 || rows[0].Name != verdict.WholePathRow || rows[0].NsPerPkt != 400 {
		t.Errorf("baseline rows = %+v, want only whole-path 400", rows)
	}
	// Without a valid baseline in the boot there is no marginal cost.
	b.Variants[0].Valid = false
	if pc, _ := verdict.PathCostOf(b, b.Variants[1]); !math.IsNaN(pc.Marginal) {
		t.Errorf("marginal without a baseline = %v, want NaN", pc.Marginal)
	}
	if _, ok := verdict.PathCostOf(b, results.VariantResult{Variant: "cnt"}); ok {
		t.Error("a variant without a cost record has a path cost")
	}
}

// TestCompareCostRows: the cost rows are decided like programs and stay
// out of the BPF total; a patch that only adds work outside the programs
// moves whole-path and marginal, never the total.
func TestCompareCostRows(t *testing.T) {
	run := &results.Run{}
	for rep := 1; rep <= 3; rep++ {
		for _, role := range []string{results.RoleBase, results.RolePatched} {
			extra := uint64(0)
			if role == results.RolePatched {
				extra = 300_000 // +30 ns/pkt outside the programs
			}
			run.Boots = append(run.Boots, results.Boot{Seq: len(run.Boots) + 1, Tree: "ext", Role: role, Rep: rep, Clock: results.ClockICount, Accel: results.AccelTCG,
				Variants: []results.VariantResult{costVariant("none", 4_000_000, 0, 10_000), costVariant("ext", 5_500_000+extra+uint64(rep), 700_000, 10_000)}})
		}
	}
	ab := reportOf(run, "ext").Perf
	var ext *verdict.VariantAB
	for i := range ab.Variants {
		if ab.Variants[i].Variant == "ext" {
			ext = &ab.Variants[i]
		}
	}
	if ext == nil {
		t.Fatalf("no ext variant: %+v", ab.Variants)
	}
	if ext.Total.Verdict != verdict.NoChange || ext.Total.Base.Median != 70 {
		t.Errorf("total = %+v, want 70 ns, no change", ext.Total)
	}
	got := map[string]verdict.Row{}
	for _, r := range ext.Programs {
		got[r.Name] = r
	}
	for _, name := range []string{verdict.WholePathRow, verdict.MarginalRow} {
		r, ok := got[name]
		if !ok {
			t.Fatalf("no %s row: %+v", name, ext.Programs)
		}
		if r.Verdict != verdict.Slower {
			t.Errorf("%s: verdict %v (%+v), want slower", name, r.Verdict, r)
		}
	}
	if d := got[verdict.MarginalRow].Patched.Median - got[verdict.MarginalRow].Base.Median; math.Abs(d-30) > 1e-9 {
		t.Errorf("marginal moved by %.3f ns/pkt, want 30", d)
	}
	// A boot whose agent measured no cost: the rows go, rather than read 0.
	run.Boots[0].Variants[1].Cost = nil
	for _, v := range reportOf(run, "ext").Perf.Variants {
		for _, r := range v.Programs {
			if v.Variant == "ext" && (r.Name == verdict.WholePathRow || r.Name == verdict.MarginalRow) {
				t.Errorf("row %s kept although one boot has no cost", r.Name)
			}
		}
	}
}

func TestBuildBench(t *testing.T) {
	run := &results.Run{}
	for seed := uint64(1); seed <= 3; seed++ {
		// ext adds 100+seed ns/pkt over its baseline, gtp 400+2·seed.
		run.Boots = append(run.Boots,
			results.Boot{Seq: len(run.Boots) + 1, Tree: "ext", Role: results.RoleBase, Rep: int(seed), Seed: seed, Clock: results.ClockICount,
				Variants: []results.VariantResult{costVariant("none", 4_000_000, 0, 10_000), costVariant("ext", 5_000_000+seed*10_000, 500_000, 10_000)}},
			results.Boot{Seq: len(run.Boots) + 2, Tree: "gtp", Role: results.RoleBase, Rep: int(seed), Seed: seed, Clock: results.ClockICount,
				Variants: []results.VariantResult{costVariant("none", 4_000_000, 0, 10_000), costVariant("gtp", 8_000_000+seed*20_000, 900_000, 10_000)}})
	}
	// hash runs on both trees: no design of either, no ratio.
	for i := range run.Boots {
		run.Boots[i].Variants = append(run.Boots[i].Variants, costVariant("hash", 6_000_000, 1_000_000, 10_000))
	}
	// gtp's programs cannot load on ext's kernel, on any seed: one line.
	for i := range run.Boots {
		if run.Boots[i].Tree == "ext" {
			run.Boots[i].Variants = append(run.Boots[i].Variants, results.VariantResult{Variant: "gtp", Skipped: "kernel lacks map type BPF_MAP_TYPE_RHASH"})
		}
	}
	run.Boots[1].Variants = append(run.Boots[1].Variants, results.VariantResult{Variant: "lru", Invalid: "bpf_stats run_cnt is 0"})
	bt := benchtab.BuildBench(run)
	if want := []string{"every seed (3) ext-gtp: kernel lacks map type BPF_MAP_TYPE_RHASH", "seed-1 gtp-lru: bpf_stats run_cnt is 0"}; !slices.Equal(bt.Excluded, want) {
		t.Errorf("excluded = %q, want %q", bt.Excluded, want)
	}
	if len(bt.Agg.Sets) != 3 || bt.Agg.Sets[0] != "seed-1" {
		t.Fatalf("sets = %v, want seed-1..3", bt.Agg.Sets)
	}
	if len(bt.Ratios) != 2 {
		t.Fatalf("ratios = %+v, want ext vs gtp marginal and bpf", bt.Ratios)
	}
	r := bt.Ratios[0]
	if r.A != "ext-ext" || r.B != "gtp-gtp" || r.Metric != verdict.MarginalRow || math.Abs(r.Ratio-102.0/404) > 1e-9 {
		t.Errorf("ratio = %+v, want ext-ext/gtp-gtp marginal %.4f", r, 102.0/404)
	}
	if !(r.Lo < r.Ratio && r.Ratio < r.Hi) || r.Hi-r.Lo > 0.05 {
		t.Errorf("interval [%v, %v] around %v", r.Lo, r.Hi, r.Ratio)
	}
	if b := bt.Ratios[1]; b.Metric != "bpf" || math.Abs(b.Ratio-50.0/90) > 1e-9 || b.Lo != b.Ratio {
		t.Errorf("bpf ratio = %+v, want 50/90 with a zero-width interval (no spread)", b)
	}
	// The table is the golden testdata/TestBuildBench/bench.txt: ext's
	// designs with their marginal rows, the ratio with its interval, and
	// no tick-sampled softirq column (1000 ns/pkt here): the traffic wakes
	// on the tick, which then always finds idle.
	golden.Own(t, "bench.txt", BenchString(bt))
}

// TestBuildBenchPatched: a kci test run's patched boots are a tree of
// their own (gtp+patched), so its design has ratios against the other
// trees' designs, as the mail's gtp with rht-no-shrink against ext.
func TestBuildBenchPatched(t *testing.T) {
	run := &results.Run{}
	for seed := uint64(1); seed <= 3; seed++ {
		boot := func(tree, role string, total, bpf uint64) results.Boot {
			return results.Boot{Seq: len(run.Boots) + 1, Tree: tree, Role: role, Rep: int(seed), Seed: seed, Clock: results.ClockICount,
				Variants: []results.VariantResult{costVariant("none", 4_000_000, 0, 10_000), costVariant(tree[:3], total, bpf, 10_000)}}
		}
		ext := boot("ext", results.RoleBase, 5_000_000+seed*10_000, 500_000)
		// hash ran on ext only here: still a stock variant, no design.
		ext.Variants = append(ext.Variants, costVariant("hash", 6_000_000, 1_000_000, 10_000))
		run.Boots = append(run.Boots, ext)
		run.Boots = append(run.Boots, boot("gtp", results.RoleBase, 8_000_000+seed*20_000, 900_000))
		p := boot("gtp", results.RolePatched, 7_000_000+seed*20_000, 800_000)
		run.Boots = append(run.Boots, p)
	}
	bt := benchtab.BuildBench(run)
	if bt.Boots["gtp+patched-gtp"] != 3 || bt.Boots["gtp-gtp"] != 3 {
		t.Fatalf("boots = %v, want 3 of gtp-gtp and of gtp+patched-gtp", bt.Boots)
	}
	var got []string
	for _, r := range bt.Ratios {
		got = append(got, fmt.Sprintf("%s/%s %s %.4f", r.A, r.B, r.Metric, r.Ratio))
	}
	want := []string{
		"ext-ext/gtp-gtp marginal 0.2525", "ext-ext/gtp-gtp bpf 0.5556",
		"ext-ext/gtp+patched-gtp marginal 0.3355", "ext-ext/gtp+patched-gtp bpf 0.6250",
		"gtp-gtp/gtp+patched-gtp marginal 1.3289", "gtp-gtp/gtp+patched-gtp bpf 1.1250",
	}
	if !slices.Equal(got, want) {
		t.Errorf("ratios:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestLaterLooksKeepTheBaseline: a variant booted again for undecided
// rows takes the baseline along, or its marginal row would lose its
// samples.
func TestLaterLooksKeepTheBaseline(t *testing.T) {
	ab := verdict.TreeAB{Variants: []verdict.VariantAB{{Variant: "none"}, {Variant: "ext"}, {Variant: "cnt"}}}
	if got := verdict.WithBaselineOf(ab, []string{"ext"}); strings.Join(got, ",") != "none,ext" {
		t.Errorf("withBaselineOf(ext) = %v, want none,ext", got)
	}
	if got := verdict.WithBaselineOf(ab, []string{"none", "cnt"}); strings.Join(got, ",") != "none,cnt" {
		t.Errorf("withBaselineOf(none,cnt) = %v", got)
	}
	if got := verdict.WithBaselineOf(ab, nil); got != nil {
		t.Errorf("nothing undecided: %v, want nothing to boot", got)
	}
	if got := verdict.WithBaselineOf(verdict.TreeAB{Variants: []verdict.VariantAB{{Variant: "ext"}}}, []string{"ext"}); strings.Join(got, ",") != "ext" {
		t.Errorf("a run without a baseline: %v", got)
	}
}

// TestBuildBenchSameSeed: kci test --seed boots one seed again and again;
// each boot keeps its own column, so identical boots show as identical.
func TestBuildBenchSameSeed(t *testing.T) {
	run := &results.Run{}
	for rep := 1; rep <= 3; rep++ {
		run.Boots = append(run.Boots, results.Boot{Seq: rep, Tree: "gtp", Role: results.RoleBase, Rep: rep, Seed: 1, Clock: results.ClockICount,
			Variants: []results.VariantResult{costVariant("none", 4_000_000, 0, 10_000), costVariant("gtp", 8_000_000, 900_000, 10_000)}})
	}
	bt := benchtab.BuildBench(run)
	if strings.Join(bt.Agg.Sets, ",") != "seed-1,seed-1/rep-2,seed-1/rep-3" {
		t.Fatalf("sets = %v", bt.Agg.Sets)
	}
	if p := bt.Paths[1][0]; p.Name != verdict.WholePathRow || len(p.Values) != 3 || p.Spread != 0 || p.Mean != 800 {
		t.Errorf("gtp whole-path = %+v, want 800 in each of 3 columns", p)
	}
}

// TestConcludeMeasuredOnly: a run of one kernel without a patch (kci bench,
// kci test --tree T) says it measured, not that a comparison failed.
func TestConcludeMeasuredOnly(t *testing.T) {
	run := &results.Run{Trees: []results.Tree{{Name: "stock", Base: &results.Kernel{}}}}
	for seed := uint64(1); seed <= 3; seed++ {
		run.Boots = append(run.Boots, results.Boot{Seq: int(seed), Tree: "stock", Role: results.RoleBase, Rep: int(seed), Seed: seed, Clock: results.ClockICount,
			Variants: []results.VariantResult{costVariant("none", 4_000_000, 0, 10_000), costVariant("cnt", 5_000_000, 700_000, 10_000)}})
	}
	// The titles are the golden testdata/TestConcludeMeasuredOnly/titles.txt.
	var titles strings.Builder
	check := func(name string) {
		t.Helper()
		c := reportOf(run, "stock").Conclusion
		if c.State != verdict.Neutral {
			t.Errorf("%s: concluded %+v, want neutral", name, c)
		}
		fmt.Fprintf(&titles, "%s: %s\n", name, c.Title)
	}
	check("3 seeds")
	// One seed each (kci test --seed 1 --tree T): the determinism check,
	// whole-path counts included.
	for i := range run.Boots {
		run.Boots[i].Seed = 1
	}
	check("seed 1 thrice")
	run.Boots[2].Variants[1].Cost.BusyNs++
	check("seed 1 thrice, one whole-path ns off")
	golden.Own(t, "titles.txt", titles.String())
}
