package verdict

import (
	"math"
	"reflect"
	"testing"

	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/results/internal/runtest"
)

// A program's call rows come from the plugin's call contexts, in their
// own units, beside the programs (not in the total), decided by the
// deterministic rule: hash_write's calls moved by one instruction and
// 241 modelled cycles a packet on every seed.
func TestCallRowsDecidedByTheSameRule(t *testing.T) {
	ab := compareOf(runtest.CallsRun(), "gtp")
	rows := map[string]Row{}
	var total Row
	for _, v := range ab.Variants {
		if v.Variant == "hash" {
			total = v.Total
			for _, r := range v.Programs {
				rows[r.Name] = r
			}
		}
	}
	for _, c := range []struct {
		name, unit string
		diff       float64
	}{
		{"call:hash_write/instructions", results.InstructionsLabel, 1},
		{"call:hash_write/modelled-cycles", results.ModelledCyclesLabel, 241},
	} {
		r, ok := rows[c.name]
		if !ok {
			t.Fatalf("no %s row among %v", c.name, rows)
		}
		if r.Verdict != Slower || math.Abs(r.w.Diff-c.diff) > 1e-6 || RowUnit(c.name) != c.unit {
			t.Errorf("%s: %s, moved %+.1f, unit %q; want slower by %g %s", c.name, r.Verdict, r.w.Diff, RowUnit(c.name), c.diff, c.unit)
		}
		if CallRowProg(c.name) != "hash_write" || !isCostRow(c.name) {
			t.Errorf("%s: program %q, cost row %v", c.name, CallRowProg(c.name), isCostRow(c.name))
		}
	}
	for name := range rows {
		if IsCallRow(name) && CallRowProg(name) != "hash_write" {
			t.Errorf("row %s: only a program's own calls have rows", name)
		}
	}
	// The total is the programs' bpf_stats sum alone: 100 ns/pkt.
	if total.Base.Median != 100 || total.Patched.Median != 100 {
		t.Errorf("total %v -> %v, want 100 both", total.Base.Median, total.Patched.Median)
	}
	if !ab.HasCallRows() {
		t.Error("HasCallRows is false")
	}
}

// A boot whose variant has no call contexts (an older plugin) leaves the
// variant without call rows: unknown is not 0.
func TestCallRowsAligned(t *testing.T) {
	run := runtest.CallsRun()
	for j := range run.Boots[0].Variants {
		if v := &run.Boots[0].Variants[j]; v.Variant == "hash" {
			v.Exact.Calls = nil
		}
	}
	for _, v := range compareOf(run, "gtp").Variants {
		for _, r := range v.Programs {
			if IsCallRow(r.Name) {
				t.Errorf("%s/%s kept though a boot has no contexts", v.Variant, r.Name)
			}
		}
	}
}

func TestCallRowNames(t *testing.T) {
	for _, c := range []struct {
		name       string
		call, cyc  bool
		prog, unit string
	}{
		{"call:hash_write/instructions", true, false, "hash_write", results.InstructionsLabel},
		{"call:hash_write/modelled-cycles", true, true, "hash_write", results.ModelledCyclesLabel},
		{"call:hash_write", false, false, "", NsUnit},
		{"hash_write", false, false, "", NsUnit},
		{CyclesRow, false, true, "", results.ModelledCyclesLabel},
	} {
		if IsCallRow(c.name) != c.call || IsCyclesRow(c.name) != c.cyc || CallRowProg(c.name) != c.prog || RowUnit(c.name) != c.unit {
			t.Errorf("%s: call %v cycles %v prog %q unit %q", c.name, IsCallRow(c.name), IsCyclesRow(c.name), CallRowProg(c.name), RowUnit(c.name))
		}
	}
}

// A guest of several vCPUs drops the programs' bpf_stats rows (their
// clock runs through the other vCPUs' turns); the call rows count each
// call's own vCPU only, so they stay and are decided.
func TestCallRowsInterleaved(t *testing.T) {
	run := runtest.CallsRun()
	for i := range run.Boots {
		for j := range run.Boots[i].Variants {
			if e := run.Boots[i].Variants[j].Exact; e != nil {
				e.VCPUs = []results.VCPUCount{{Insns: e.Insns / 2}, {Insns: e.Insns - e.Insns/2}}
			}
		}
	}
	ab := compareOf(run, "gtp")
	if !ab.Interleaved {
		t.Fatal("not interleaved")
	}
	rows := map[string]Row{}
	for _, v := range ab.Variants {
		if v.Variant == "hash" {
			for _, r := range v.Programs {
				rows[r.Name] = r
			}
		}
	}
	if _, ok := rows["hash_write"]; ok {
		t.Error("the program's bpf_stats row was kept")
	}
	for _, name := range []string{"call:hash_write/instructions", "call:hash_write/modelled-cycles"} {
		if r, ok := rows[name]; !ok || r.Verdict != Slower {
			t.Errorf("%s: %+v, want it kept and slower", name, r.Verdict)
		}
	}
}

// What kci's accountant ran inside a program's calls is taken out of
// them (a machine without kci runs none of it); what other contexts ran
// inside them stays, as bpf_stats keeps it.
func TestProgCallsTakeTheAccountantOut(t *testing.T) {
	e := &results.Exact{Calls: []results.CallCount{
		{Name: "call:bpf:gtp_write", Calls: 10, Insns: 5000, Mem: 900, Cycles: 17000, Inside: []results.CallCount{
			{Name: "call:observer:acct_irq_work_entry", Calls: 2, Insns: 300, Mem: 40, Cycles: 500},
			{Name: "call:observer:acct_irq_work_exit", Calls: 2, Insns: 200, Mem: 30, Cycles: 400},
			{Name: "call:bpf:other", Calls: 1, Insns: 100, Mem: 10, Cycles: 150},
		}},
		{Name: "call:observer:acct_irq_work_entry", Calls: 2, Insns: 300, Mem: 40, Cycles: 500},
	}}
	got := ProgCalls(e)
	if len(got) != 1 || got[0].Prog != "gtp_write" {
		t.Fatalf("ProgCalls = %+v, want gtp_write's alone", got)
	}
	c := got[0]
	if c.Insns != 4500 || c.Mem != 830 || c.Cycles != 16100 || c.Calls != 10 ||
		!reflect.DeepEqual(c.Accountant, results.CallCount{Calls: 4, Insns: 500, Mem: 70, Cycles: 900}) {
		t.Errorf("gtp_write %+v accountant %+v: want 4500 insns, 830 mem, 16100 cycles, 10 calls, the accountant's 4 calls 500 70 900",
			c.CallCount, c.Accountant)
	}
	rows := CallRows(results.VariantResult{Exact: &results.Exact{Packets: 10, Model: "m", Calls: e.Calls}})
	if len(rows) != 2 || rows[0].NsPerPkt != 450 || rows[1].NsPerPkt != 1610 {
		t.Errorf("call rows %+v, want 450 instructions and 1610 cycles a packet", rows)
	}
}
