package benchtab

import (
	"math"

	"github.com/kci-dev/kci/internal/stats"
	"github.com/kci-dev/kci/results/verdict"
)

// ProgramClock is one program's modelled cycles a packet (its calls:
// bpf_stats' scope) per the hardware's ns a packet. A model that charged
// every program what the hardware spends would read one figure for all of
// them, the hardware's clock; a program off the programs' median is one
// the model charges more (above) or less (below) than the others for what
// the hardware spent on it. It places a design ratio's model error on its
// programs.
type ProgramClock struct {
	Variant string `json:"variant"` // kci's row
	Program string `json:"program"`
	// CyclesPerNs is kci's mean over its mean of the hardware's (0
	// without the cache model). It is InsnsPerNs times CyclesPerInsn, so
	// a program off the median is off by what the model charges an
	// instruction, by how fast the hardware ran them, or both.
	CyclesPerNs float64 `json:"cycles_per_ns,omitempty"`
	// ErrPct is CyclesPerNs against the programs' median, in percent.
	ErrPct float64 `json:"error_pct"`
	// InsnsPerNs is kci's exact instructions over the hardware's ns: what
	// the hardware retired a ns (at a clock of f GHz, its IPC is this / f);
	// 0 without kci's instruction counts.
	InsnsPerNs float64 `json:"insns_per_ns,omitempty"`
	// CyclesPerInsn is the model's cycles an instruction in the calls.
	CyclesPerInsn float64 `json:"cycles_per_insn,omitempty"`
}

// programClocks are the rows' programs with the hardware's number and
// kci's instructions or modelled cycles (unit) in their calls, and the
// median of their cycles per ns (NaN without the cache model's cycles).
// A program the hardware read at no more than MinHardwareNs a packet is
// left out: there the floor (--hardware-floor) and the sets' spread are
// most of the number.
func programClocks(rows []HardwareRow, unit string) ([]ProgramClock, float64) {
	var out []ProgramClock
	var all []float64
	for _, r := range rows {
		if r.Program == verdict.TotalRow || !(r.HW.Mean > MinHardwareNs) {
			continue
		}
		pc := ProgramClock{Variant: r.Variant, Program: r.Program}
		if r.Insns != nil && r.Insns.Mean > 0 {
			pc.InsnsPerNs = r.Insns.Mean / r.HW.Mean
		}
		for _, v := range r.KCI {
			if v.Unit == unit && v.Mean > 0 {
				pc.CyclesPerNs = v.Mean / r.HW.Mean
				if pc.InsnsPerNs > 0 {
					pc.CyclesPerInsn = v.Mean / r.Insns.Mean
				}
				all = append(all, pc.CyclesPerNs)
			}
		}
		if pc.CyclesPerNs > 0 || pc.InsnsPerNs > 0 {
			out = append(out, pc)
		}
	}
	if len(all) == 0 {
		return out, math.NaN()
	}
	med := stats.Median(all)
	for i := range out {
		if out[i].CyclesPerNs > 0 {
			out[i].ErrPct = 100 * (out[i].CyclesPerNs/med - 1)
		}
	}
	return out, med
}

// MinHardwareNs: below it a program's hardware number is mostly floor.
const MinHardwareNs = 10.0
