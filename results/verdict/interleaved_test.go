package verdict

import (
	"math"
	"testing"

	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/results/internal/runtest"
)

// A variant measured by a guest of several vCPUs is decided on the
// plugin's rows only: its bpf_stats rows (here 30 % slower, an artefact of
// the turns) are left out, and its instructions row moves exactly when
// the window's instructions do.
func TestInterleavedRows(t *testing.T) {
	for _, c := range []struct {
		name   string
		insns  uint64 // added per packet on the patched kernel
		want   Verdict
		vcpus  int
		progs  bool // the program rows are decided
		insRow bool // the instructions row exists
	}{
		{"two vCPUs, same code", 0, NoChange, 2, false, true},
		{"two vCPUs, +300 insns/pkt", 300, Slower, 2, false, true},
		{"one vCPU", 0, Slower, 1, true, false},
	} {
		run := runtest.MkRun(results.AccelTCG, results.ClockICount, 3, 3, []runtest.VarSpec{{Name: "cnt", Progs: []string{"cnt_egress"}}},
			func(role string, rep int, v, p string) float64 {
				if role == results.RolePatched {
					return 100 // bpf_stats reads the other vCPU's turns
				}
				return 70
			})
		for i := range run.Boots {
			b := &run.Boots[i]
			for j := range b.Variants {
				const pkts = 1000
				per := uint64(20000)
				if b.Role == results.RolePatched {
					per += c.insns
				}
				e := &results.Exact{Insns: per * pkts, Packets: pkts}
				for k := 0; k < c.vcpus && c.vcpus > 1; k++ {
					e.VCPUs = append(e.VCPUs, results.VCPUCount{Insns: per * pkts / uint64(c.vcpus)})
				}
				b.Variants[j].Exact = e
			}
		}
		ab := compareOf(run, "gtp")
		if ab.Interleaved != (c.vcpus > 1) {
			t.Errorf("%s: interleaved %v", c.name, ab.Interleaved)
		}
		rows := rowsOf(ab)
		if _, ok := rows["cnt/cnt_egress"]; ok != c.progs {
			t.Errorf("%s: program row present %v, want %v", c.name, ok, c.progs)
		}
		ins, ok := rows["cnt/"+InsnsRow]
		if ok != c.insRow {
			t.Fatalf("%s: instructions row present %v, want %v (rows %v)", c.name, ok, c.insRow, rows)
		}
		got := ins.Verdict
		if !c.insRow {
			got = rows["cnt/cnt_egress"].Verdict
		}
		if got != c.want {
			t.Errorf("%s: verdict %v, want %v", c.name, got, c.want)
		}
		// Each vCPU's share is a row of its own, decided alike.
		for i := 0; i < 2; i++ {
			name := VCPURow(i, CallInsnsSuffix)
			r, ok := rows["cnt/"+name]
			if ok != c.insRow {
				t.Errorf("%s: %s present %v, want %v", c.name, name, ok, c.insRow)
				continue
			}
			if ok && (r.Verdict != c.want || RowUnit(name) != results.InstructionsLabel || math.Abs(r.Patched.Median-r.Base.Median-float64(c.insns)/2) > 1e-9) {
				t.Errorf("%s: %s %v (%v → %v, %s), want %v by %d", c.name, name, r.Verdict, r.Base.Median, r.Patched.Median, RowUnit(name), c.want, c.insns/2)
			}
		}
	}
}

func TestIsVCPURow(t *testing.T) {
	for name, want := range map[string]bool{
		"vcpu0/instructions":     true,
		"vcpu12/modelled-cycles": true,
		"vcpu/instructions":      false,
		"vcpux/instructions":     false,
		"vcpu1/total":            false,
		"vcpu1":                  false,
		"cnt_egress":             false,
	} {
		if got := IsVCPURow(name); got != want {
			t.Errorf("IsVCPURow(%q) = %v, want %v", name, got, want)
		}
	}
	if !IsCyclesRow("vcpu3/modelled-cycles") || !IsInsnsRow("vcpu3/instructions") || IsCyclesRow("vcpu3/instructions") {
		t.Error("per-vCPU rows' units")
	}
}
