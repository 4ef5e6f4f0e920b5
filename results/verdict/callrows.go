package verdict

import (
	"strings"

	"github.com/kci-dev/kci/results"
)

// A program's call rows: bpf_stats' scope for a BPF program, a call of it
// with everything it calls until it returns (helpers such as
// htab_map_update_elem, interrupts landing meanwhile), from the QEMU
// plugin's call contexts (results.Exact.Calls, call:bpf:<prog>), per
// packet. Named call:<prog>/instructions (exact instructions) and, under
// the cache model, call:<prog>/modelled-cycles; each in its own unit, and
// decided by the same rule as the other exact rows, one instruction or
// cycle a packet being the floor. They are cost rows: beside the
// programs, not in the total. A context counts its own vCPU's work only,
// so an interleaved variant (several vCPUs, whose bpf_stats rows are left
// out) keeps them. What kci's accountant ran inside a call is not in
// them (ProgCall). ':' and '/' cannot occur in a program's name (a C
// identifier), so they never collide with one.
const (
	CallRowPrefix    = "call:"
	CallInsnsSuffix  = "/instructions"
	CallCyclesSuffix = "/modelled-cycles"
)

// CallsCyclesRow is every program's call rows in modelled cycles summed
// (kci bench): a variant's BPF total in bpf_stats' scope, the cache
// model's counterpart of the hardware's bpf_stats sum. '*' is no
// program's name.
const CallsCyclesRow = CallRowPrefix + "*" + CallCyclesSuffix

// CallsCycles is v's CallsCyclesRow per packet; false without the cache
// model's counts of contexts.
func CallsCycles(v results.VariantResult) (float64, bool) {
	if v.Exact == nil || v.Exact.Model == "" {
		return 0, false
	}
	var sum float64
	any := false
	for _, r := range CallRows(v) {
		if strings.HasSuffix(r.Name, CallCyclesSuffix) {
			sum += r.NsPerPkt
			any = true
		}
	}
	return sum, any
}

// IsCallRow reports whether a row is a program's call row.
func IsCallRow(name string) bool {
	return strings.HasPrefix(name, CallRowPrefix) &&
		(strings.HasSuffix(name, CallInsnsSuffix) || strings.HasSuffix(name, CallCyclesSuffix))
}

// CallRowProg is the program of a call row, "" for another row.
func CallRowProg(name string) string {
	if !IsCallRow(name) {
		return ""
	}
	p := strings.TrimPrefix(name, CallRowPrefix)
	return p[:strings.LastIndexByte(p, '/')]
}

// callBPF starts the Exact.Calls name of a BPF program's calls.
const callBPF = results.CallPrefix + "bpf:"

// callObserver starts the Exact.Calls name of the accountant's programs.
const callObserver = results.CallPrefix + "observer:"

// ProgCall is one BPF program's calls in a window, kci's own programs
// taken out: Accountant is what the context accountant's programs ran
// inside them (run by interrupts that landed in a call), which the
// CallCount's counts no longer hold. A machine without kci runs none of
// it, so bpf_stats there holds none.
type ProgCall struct {
	Prog string
	results.CallCount
	Accountant results.CallCount
}

// ProgCalls are the BPF programs' calls in e, in e.Calls' order; a
// subprogram's calls (call:bpf:<prog>/<n>) are inside its program's and
// are left out, as are other contexts.
func ProgCalls(e *results.Exact) []ProgCall {
	if e == nil {
		return nil
	}
	var out []ProgCall
	for _, c := range e.Calls {
		prog, ok := strings.CutPrefix(c.Name, callBPF)
		if !ok || prog == "" || strings.Contains(prog, "/") {
			continue
		}
		pc := ProgCall{Prog: prog, CallCount: c}
		for _, in := range c.Inside {
			if strings.HasPrefix(in.Name, callObserver) {
				pc.Accountant.Calls += in.Calls
				pc.Accountant.Insns += in.Insns
				pc.Accountant.Mem += in.Mem
				pc.Accountant.Cycles += in.Cycles
			}
		}
		pc.Insns -= min(pc.Insns, pc.Accountant.Insns)
		pc.Mem -= min(pc.Mem, pc.Accountant.Mem)
		pc.Cycles -= min(pc.Cycles, pc.Accountant.Cycles)
		out = append(out, pc)
	}
	return out
}

// CallRows are v's call rows, one pair per BPF program with calls in its
// window (ProgCalls). Nil without exact counts of contexts.
func CallRows(v results.VariantResult) []results.ProgCost {
	e := v.Exact
	if e == nil || e.Packets == 0 {
		return nil
	}
	n := float64(e.Packets)
	var out []results.ProgCost
	for _, c := range ProgCalls(e) {
		out = append(out, results.ProgCost{Name: CallRowPrefix + c.Prog + CallInsnsSuffix, Type: "cost", NsPerPkt: float64(c.Insns) / n})
		if e.Model != "" {
			out = append(out, results.ProgCost{Name: CallRowPrefix + c.Prog + CallCyclesSuffix, Type: "cost", NsPerPkt: float64(c.Cycles) / n})
		}
	}
	return out
}

// HasCallRows reports whether any variant of ab has a program's call row.
func (ab TreeAB) HasCallRows() bool {
	for _, v := range ab.Variants {
		for _, p := range v.Programs {
			if IsCallRow(p.Name) {
				return true
			}
		}
	}
	return false
}
