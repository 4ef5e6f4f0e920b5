package benchtab

import (
	"math"
	"strings"
	"testing"

	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/results/internal/runtest"
)

// A program's split is per call, mean over the base boots with each
// boot's lowest and highest; a function under 1 % of the call goes into
// the other functions' row, what the splits leave of the call into the
// nested calls' row, and a function missing from a boot counts 0 there.
// Programs without splits (the subprogram's, the accountant's) have none.
func TestBenchSplits(t *testing.T) {
	run := runtest.CallsRun()
	seen := 0
	for i := range run.Boots {
		b := &run.Boots[i]
		b.Role = results.RoleBase
		for j := range b.Variants {
			v := &b.Variants[j]
			if v.Variant != "hash" {
				continue
			}
			// hash_write: 450 cycles a call, of which the update 200 +
			// 5 × seen, the program 150, a small one 2, one only in the
			// first boot 60, and the rest nested.
			// kci's accountant ran 10 a call inside them: taken out.
			v.Exact.Calls[0].Cycles = 460_000
			v.Exact.Calls[0].Inside = []results.CallCount{{Name: "call:observer:acct_irq_work_entry", Calls: 3, Insns: 1_000, Cycles: 10_000}}
			v.Exact.Calls[0].Funcs = []results.FuncCount{
				{Name: "htab_map_update_elem", Insns: 90_000, Cycles: uint64(200_000 + 5_000*seen), Fetch: 50_000},
				{Name: "bpf:hash_write", Insns: 50_000, Cycles: 150_000, Fetch: 30_000},
				{Name: "memcpy", Insns: 1_000, Cycles: 2_000},
			}
			if seen == 0 {
				v.Exact.Calls[0].Funcs = append(v.Exact.Calls[0].Funcs, results.FuncCount{Name: "rare", Insns: 1_000, Cycles: 60_000})
			}
			seen++
		}
	}
	if seen < 2 {
		t.Fatalf("CallsRun has %d boots of hash, want 2 or more", seen)
	}
	bt := BuildBench(run)
	var got []CallSplit
	for _, s := range bt.Splits {
		if strings.HasSuffix(s.Variant, "hash") {
			got = append(got, s)
		}
	}
	if len(got) != 1 || got[0].Prog != "hash_write" || got[0].Boots != seen || got[0].Unit != results.ModelledCyclesPerCallLabel {
		t.Fatalf("splits %+v: want hash_write's alone, %d boots, in %s", got, seen, results.ModelledCyclesPerCallLabel)
	}
	s := got[0]
	n := float64(seen)
	update := 200 + 5*(n-1)/2
	rare := 60 / n
	want := []SplitFunc{
		{Name: "htab_map_update_elem", Mean: update, Min: 200, Max: 200 + 5*(n-1)},
		{Name: "bpf:hash_write", Mean: 150, Min: 150, Max: 150},
		{Name: "rare", Mean: rare, Min: 0, Max: 60},
		{Name: SplitOther, Mean: 2, Min: 2, Max: 2},
		{Name: SplitNested, Mean: 450 - update - 150 - rare - 2, Min: 450 - 200 - 152 - 60, Max: 450 - 205 - 152}, // the second boot: no rare, the update at 205
	}
	if !same(s.Total, 450) || !same(s.Accountant, 10) || len(s.Funcs) != len(want) {
		t.Fatalf("total %v, funcs %+v; want 450 and %+v", s.Total, s.Funcs, want)
	}
	// The functions' instructions (141 a call, and rare's 1 in one boot),
	// their fetch stalls (80), and the rest of their cycles over both.
	funcs := update + 150 + rare + 2
	if ins := 141 + 1/n; !same(s.Insns, ins) || !same(s.FetchStall, 80) || !same(s.DataStall, funcs-ins-80) ||
		!same(s.Funcs[0].Fetch, 50) || !same(s.Funcs[1].Fetch, 30) {
		t.Errorf("insns %v fetch %v data %v, funcs' fetch %v %v: want %v, 80, %v, 50 and 30",
			s.Insns, s.FetchStall, s.DataStall, s.Funcs[0].Fetch, s.Funcs[1].Fetch, ins, funcs-ins-80)
	}
	for i, w := range want {
		f := s.Funcs[i]
		if f.Name != w.Name || !same(f.Mean, w.Mean) || !same(f.Min, w.Min) || !same(f.Max, w.Max) || !same(f.Share, w.Mean/450) {
			t.Errorf("func %d: %+v, want %+v (share %.4f)", i, f, w, w.Mean/450)
		}
	}
}

// same: equal but for floating-point rounding.
func same(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
