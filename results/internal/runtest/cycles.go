package runtest

import "github.com/kci-dev/kci/results"

// CyclesRun: a patch adds one instruction and one DRAM miss (240
// modelled cycles) per packet to hash; the none baseline is unchanged.
// Whole-path moves by one instruction-time ns, modelled cycles by 241.
func CyclesRun() *results.Run {
	run := MkRun(results.AccelTCG, results.ClockICount, 3, 3,
		[]VarSpec{{Name: "none"}, {Name: "hash", Progs: []string{"hash_write"}}},
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

// CallsRun is CyclesRun with the plugin's call contexts: hash_write's
// calls (its code and what it calls) run 150 instructions and 400
// modelled cycles a packet on the base kernel, and one instruction and
// 241 cycles more on the patched one (a miss in a helper it calls); a
// subprogram's and the accountant's calls come along, and have no rows.
func CallsRun() *results.Run {
	run := CyclesRun()
	for i := range run.Boots {
		b := &run.Boots[i]
		for j := range b.Variants {
			v := &b.Variants[j]
			if v.Variant != "hash" {
				continue
			}
			insns, cycles := uint64(150), uint64(400)
			if b.Role == results.RolePatched {
				insns, cycles = insns+1, cycles+241
			}
			v.Exact.Calls = []results.CallCount{
				{Name: "call:bpf:hash_write", Calls: 1000, Insns: insns * 1000, Mem: 40000, Cycles: cycles * 1000},
				{Name: "call:observer:acct_enter", Calls: 2000, Insns: 60000, Mem: 8000, Cycles: 70000},
				{Name: "call:bpf:hash_write/1", Calls: 1000, Insns: 20000, Mem: 1000, Cycles: 21000},
			}
		}
	}
	return run
}
