package render

import (
	"math"
	"testing"

	"github.com/kci-dev/kci/internal/golden"
	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/results/benchtab"
	"github.com/kci-dev/kci/results/verdict"
)

// withContexts gives v an accountant record: rx ns of NET_RX, sys ns of
// read/write syscalls, and the rest of its busy time in the other
// categories, so the categories add up to busy.
func withContexts(v results.VariantResult, rx, sys uint64) results.VariantResult {
	c := *v.Cost
	rest := c.BusyNs - rx - sys
	c.Contexts = []results.ContextTime{
		{Name: "unsynced"}, {Name: "idle", Ns: 20_000_000 - c.BusyNs},
		{Name: "path", Ns: sys, Entries: 4 * c.Packets}, {Name: "traffic", Ns: rest / 2},
		{Name: "agent", Ns: rest / 4}, {Name: "other", Ns: rest / 8}, {Name: "hardirq", Ns: rest - rest/2 - rest/4 - rest/8},
		{Name: "softirq:net_rx", Ns: rx, Entries: c.Packets},
	}
	c.AcctPackets = c.Packets
	v.Cost = &c
	return v
}

// TestRxSoftirqRows: a patch that adds 100 ns to every ext packet's
// receive softirq, while the scheduler's rearrangement moves every
// variant's whole-path by tens of ns a seed, moves ext's rx-softirq and
// rx-marginal rows by 100 exactly and no other variant's.
func TestRxSoftirqRows(t *testing.T) {
	run := &results.Run{}
	for rep := 1; rep <= 3; rep++ {
		for _, role := range []string{results.RoleBase, results.RolePatched} {
			work, chaos := uint64(0), uint64(rep*400_000) // chaos: 40·rep ns/pkt of whole-path
			if role == results.RolePatched {
				work, chaos = 1_000_000, uint64((4-rep)*400_000)
			}
			none := withContexts(costVariant("none", 4_000_000+chaos, 0, 10_000), 2_800_000, 900_000)
			cnt := withContexts(costVariant("cnt", 4_200_000+chaos, 150_000, 10_000), 3_000_000, 920_000)
			ext := withContexts(costVariant("ext", 5_500_000+chaos+work, 700_000, 10_000), 3_265_000+work, 950_000)
			run.Boots = append(run.Boots, results.Boot{Seq: len(run.Boots) + 1, Tree: "ext", Role: role, Rep: rep, Seed: uint64(rep),
				Clock: results.ClockICount, Accel: results.AccelTCG, Variants: []results.VariantResult{none, cnt, ext}})
		}
	}
	rows := map[string]verdict.Row{}
	for _, v := range reportOf(run, "ext").Perf.Variants {
		for _, r := range v.Programs {
			rows[v.Variant+"/"+r.Name] = r
		}
	}
	for name, want := range map[string]float64{"ext/rx-softirq": 100, "ext/rx-marginal": 100, "cnt/rx-softirq": 0, "cnt/rx-marginal": 0, "none/rx-softirq": 0} {
		r, ok := rows[name]
		if !ok {
			t.Fatalf("no row %s among %v", name, rows)
		}
		d := r.Patched.Median - r.Base.Median
		wantVerdict := verdict.NoChange
		if want != 0 {
			wantVerdict = verdict.Slower
		}
		if math.Abs(d-want) > 1e-9 || r.Verdict != wantVerdict {
			t.Errorf("%s moved %.3f (%v), want %.0f (%v)", name, d, r.Verdict, want, wantVerdict)
		}
	}
	if _, ok := rows["none/rx-marginal"]; ok {
		t.Error("the baseline has an rx-marginal row")
	}
	// The bench table's breakdown adds up to whole-path, the agent's own
	// threads left out.
	bt := benchtab.BuildBench(run)
	for i, v := range bt.Agg.Variants {
		byName := map[string]float64{}
		for _, p := range bt.Paths[i] {
			byName[p.Name] = p.Mean
		}
		sum := byName[benchtab.SyscallsRow] + byName[verdict.RxSoftirqRow] + byName[benchtab.HardirqRow] +
			byName[benchtab.UserRow] + byName[benchtab.RestRow]
		if math.Abs(sum-byName[verdict.WholePathRow]) > 1e-6 {
			t.Errorf("%s: breakdown sums to %.3f, whole-path %.3f (%v)", v.Variant, sum, byName[verdict.WholePathRow], byName)
		}
	}
	// The table, with its rx-softirq, rx-marginal and syscalls rows and
	// the breakdown's legend, is the golden testdata/TestRxSoftirqRows/bench.txt.
	golden.Own(t, "bench.txt", BenchString(bt))
}

// TestDeterminismChecksContexts: boots of one seed must agree in every
// accountant count too.
func TestDeterminismChecksContexts(t *testing.T) {
	run := &results.Run{Trees: []results.Tree{{Name: "ext", Base: &results.Kernel{}}}}
	for rep := 1; rep <= 2; rep++ {
		run.Boots = append(run.Boots, results.Boot{Seq: rep, Tree: "ext", Role: results.RoleBase, Rep: rep, Seed: 1, Clock: results.ClockICount,
			Variants: []results.VariantResult{withContexts(costVariant("none", 4_000_000, 0, 10_000), 2_800_000, 900_000)}})
	}
	// The titles are the golden testdata/TestDeterminismChecksContexts/titles.txt.
	titles := reportOf(run, "ext").Conclusion.Title + "\n"
	run.Boots[1].Variants[0].Cost.Contexts[7].Ns++
	titles += reportOf(run, "ext").Conclusion.Title + "\n"
	golden.Own(t, "titles.txt", titles)
}
