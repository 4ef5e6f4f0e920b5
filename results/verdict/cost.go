package verdict

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/kci-dev/kci/results"
)

// Whole-path and marginal cost rows. bpf_stats time only what runs inside
// the programs; a design also costs outside them (the skb extension's
// free, the tracepoints' dispatch, the map's deferred frees). The guest
// measures every non-idle ns of its window (Cost); divided by the packets
// the programs saw it is the whole path, and minus the same boot's
// baseline variant (no program attached) it is what the design adds.

// Row names of the cost rows beside a variant's programs. A '-' cannot
// occur in a BPF program's name (a C identifier), so they never collide.
const (
	WholePathRow = "whole-path"
	MarginalRow  = "marginal"
	// RxSoftirqRow is the receive softirq (NET_RX, hardirqs taken out)
	// per packet, from the guest's context accountant; RxMarginalRow is
	// it minus the same boot's baseline. With the traffic's fixed order
	// (real-time threads) a code change leaves it alone unless the
	// packet's own receive work changed, which whole-path cannot say.
	RxSoftirqRow  = "rx-softirq"
	RxMarginalRow = "rx-marginal"
	// CyclesRow is the window's modelled cycles per packet (the QEMU
	// plugin's cache model, kci --cache-model: a model, not a
	// measurement), CyclesMarginalRow it minus the same boot's baseline.
	// Unlike instruction-time they charge a cache miss its latency.
	CyclesRow         = "modelled-cycles"
	CyclesMarginalRow = "cycles-marginal"
	// InsnsRow is every instruction the vCPUs ran in the window per
	// packet (the QEMU plugin's exact count), InsnsMarginalRow it minus
	// the same boot's baseline: the rows of a guest of several vCPUs,
	// whose time-based rows are interleaved (Interleaved).
	InsnsRow         = "instructions"
	InsnsMarginalRow = "insns-marginal"
)

// costRows are every cost row's names: not programs, not in the total.
var costRows = []string{WholePathRow, MarginalRow, RxSoftirqRow, RxMarginalRow, CyclesRow, CyclesMarginalRow, InsnsRow, InsnsMarginalRow}

// Interleaved says whether v was measured by a guest of several vCPUs
// under icount. Their vCPUs take turns on one instruction clock, so a
// CPU's clock also runs through the other vCPUs' turns: bpf_stats' run
// times and the accountant's busy time count them (whole-path read 2.1×
// the one-vCPU figure on the gtp tree). Only the plugin's counts, kept
// per vCPU, are the guest's own: such a variant is decided on its
// instruction and modelled-cycle rows.
func Interleaved(v results.VariantResult) bool {
	return v.Exact != nil && len(v.Exact.VCPUs) > 1
}

// InterleavedNote says why an interleaved variant has no program or
// time rows.
const InterleavedNote = "several vCPUs under icount take turns on one instruction clock, so bpf_stats and the " +
	"context accountant's times also count the other vCPUs' turns: their rows are left out, and the variant is " +
	"decided on the plugin's exact instructions (and modelled cycles) per packet"

// IsInsnsRow reports whether a row counts the plugin's instructions.
func IsInsnsRow(name string) bool {
	return name == InsnsRow || name == InsnsMarginalRow || IsVCPURow(name) && strings.HasSuffix(name, CallInsnsSuffix)
}

// VCPURowPrefix starts an interleaved variant's per-vCPU rows:
// vcpu<i>/instructions and, with the cache model,
// vcpu<i>/modelled-cycles, what vCPU i ran in the window per packet (the
// plugin's count of its own turns: exact, and its own core's cycles).
const VCPURowPrefix = "vcpu"

// VCPURow is vCPU i's row of a metric (CallInsnsSuffix,
// CallCyclesSuffix).
func VCPURow(i int, suffix string) string { return fmt.Sprintf("%s%d%s", VCPURowPrefix, i, suffix) }

// IsVCPURow reports whether a row is a per-vCPU row.
func IsVCPURow(name string) bool {
	rest, ok := strings.CutPrefix(name, VCPURowPrefix)
	if !ok {
		return false
	}
	i, suffix, ok := strings.Cut(rest, "/")
	if !ok || i == "" || strings.Trim(i, "0123456789") != "" {
		return false
	}
	return "/"+suffix == CallInsnsSuffix || "/"+suffix == CallCyclesSuffix
}

// isCostRow reports whether name is a cost row (a program's call rows
// included) rather than a program.
func isCostRow(name string) bool {
	for _, c := range costRows {
		if c == name {
			return true
		}
	}
	return IsCallRow(name) || IsVCPURow(name)
}

// IsCyclesRow reports whether a row counts the cache model's cycles
// (CyclesRow, CyclesMarginalRow, a program's or a vCPU's row in cycles)
// rather than ns.
func IsCyclesRow(name string) bool {
	return name == CyclesRow || name == CyclesMarginalRow ||
		(IsCallRow(name) || IsVCPURow(name)) && strings.HasSuffix(name, CallCyclesSuffix)
}

// IsCallInsnsRow reports whether a row is a program's call row in
// instructions.
func IsCallInsnsRow(name string) bool {
	return IsCallRow(name) && strings.HasSuffix(name, CallInsnsSuffix)
}

// NsUnit is the unit of every row but the cache model's: ns per packet
// (instruction-time ns under icount: the tree's Metric says which).
const NsUnit = "ns/pkt"

// RowUnit is the unit a row's numbers are in: modelled cycles per packet
// for the cache model's rows, instructions per packet for the plugin's
// instruction rows and the call rows in instructions, ns per packet for
// every other.
func RowUnit(name string) string {
	switch {
	case IsCyclesRow(name):
		return results.ModelledCyclesLabel
	case IsInsnsRow(name), IsCallInsnsRow(name):
		return results.InstructionsLabel
	}
	return NsUnit
}

// CacheModelMetric is the Metric of the cache model's rows: a model, not
// a measurement of time.
const CacheModelMetric = "cache model"

// ExactCountMetric is the Metric of the call rows in instructions: the
// QEMU plugin's count, not a time.
const ExactCountMetric = "exact count"

// RowMetric is what a row of ab measures: the tree's Metric, the cache
// model for its rows, the plugin's count for the call rows in
// instructions.
func (ab TreeAB) RowMetric(name string) string {
	switch {
	case IsCyclesRow(name):
		return CacheModelMetric
	case IsCallInsnsRow(name):
		return ExactCountMetric
	}
	return ab.Metric()
}

// HasCyclesRows reports whether any variant of ab has a cache model row.
func (ab TreeAB) HasCyclesRows() bool {
	for _, v := range ab.Variants {
		for _, p := range v.Programs {
			if IsCyclesRow(p.Name) {
				return true
			}
		}
	}
	return false
}

// Accountant categories (bpf.AcctCategories) the rows read.
const (
	CtxRxSoftirq = "softirq:net_rx"
	CtxSyscalls  = "path"
)

// contextPerPkt is the named accountant category of v's window over the
// datagrams written in that window; ok false when the guest ran no
// accountant.
func contextPerPkt(v results.VariantResult, name string) (float64, bool) {
	if v.Cost == nil || v.Cost.AcctPackets == 0 {
		return 0, false
	}
	for _, c := range v.Cost.Contexts {
		if c.Name == name {
			return float64(c.Ns) / float64(v.Cost.AcctPackets), true
		}
	}
	return 0, false
}

// CtxAgent is the agent's own threads besides the traffic: its sampler
// and the Go runtime's threads (sysmon, idle Ms). Their work is not the
// same for every variant (sysmon's wake-ups follow the timing: ±40
// ns/pkt between kernels that differ only in code the packets never run),
// so whole-path leaves them out; the traffic threads, Go code and
// runtime included, are the workload and stay in.
const CtxAgent = "agent"

// acctBusy is every non-idle ns of the accountant's window per packet,
// but the agent's own.
func acctBusy(c *results.Cost) (float64, bool) {
	if c.AcctPackets == 0 || len(c.Contexts) == 0 {
		return 0, false
	}
	var busy uint64
	for _, x := range c.Contexts {
		if x.Name != "idle" && x.Name != "unsynced" && x.Name != CtxAgent {
			busy += x.Ns
		}
	}
	return float64(busy) / float64(c.AcctPackets), true
}

// BaselineVariant is the guest's variant without programs (wire.NoneVariant).
const BaselineVariant = "none"

// PathCost is one variant's whole-path cost in one boot, per packet.
type PathCost struct {
	WholePath float64 // every non-idle ns of the window / packets
	Marginal  float64 // WholePath − the boot's baseline; NaN without one
	BPF       float64 // bpf_stats sum / packets
	// RxSoftirq and RxMarginal are the receive softirq's share and its
	// difference from the baseline's; NaN without the accountant.
	RxSoftirq, RxMarginal float64
	// ResolutionNs is the granularity of one packet's share: the idle
	// clock's resolution over the packets.
	ResolutionNs float64
	// Cycles and CyclesMarginal are the modelled cycles per packet and
	// their difference from the baseline's; NaN without the cache model.
	Cycles, CyclesMarginal float64
}

// cyclesPerPkt is v's window in modelled cycles per packet; ok false
// without the plugin's cache model.
func cyclesPerPkt(v results.VariantResult) (float64, bool) {
	if v.Exact == nil || v.Exact.Model == "" || v.Exact.Packets == 0 {
		return 0, false
	}
	return float64(v.Exact.Cycles) / float64(v.Exact.Packets), true
}

// wholePath is v's whole-path cost per packet; ok false when the guest
// did not measure it (an older agent) or saw no packet. With the guest's
// accountant it is the non-idle ns of the accountant's own window, the
// agent's own threads left out, over the datagrams written in it, so every cost row shares one window (the
// idle clock's edges and the packet counters are read a few syscalls
// away, and a stalled agent once put 0.95 s of busy time between them);
// a record without one gives the idle clock's busy ns over the
// programs' packets.
func wholePath(v results.VariantResult) (float64, bool) {
	if v.Cost == nil {
		return 0, false
	}
	if w, ok := acctBusy(v.Cost); ok {
		return w, true
	}
	if v.Cost.Packets == 0 {
		return 0, false
	}
	return float64(v.Cost.BusyNs) / float64(v.Cost.Packets), true
}

// baselineVariant is b's valid baseline variant, nil without one.
func baselineVariant(b results.Boot) *results.VariantResult {
	for i := range b.Variants {
		v := &b.Variants[i]
		if IsBaseline(v.Variant) && v.Valid {
			return v
		}
	}
	return nil
}

// IsBaseline reports whether a variant name (bare or <tree>-none) is the
// baseline.
func IsBaseline(name string) bool {
	return name == BaselineVariant || len(name) > len(BaselineVariant) &&
		name[len(name)-len(BaselineVariant)-1:] == "-"+BaselineVariant
}

// PathCostOf is v's cost in boot b; ok false when the guest did not
// measure it.
func PathCostOf(b results.Boot, v results.VariantResult) (PathCost, bool) {
	w, ok := wholePath(v)
	if !ok {
		return PathCost{}, false
	}
	n := float64(v.Cost.Packets)
	pc := PathCost{WholePath: w, Marginal: math.NaN(), BPF: float64(v.Cost.BPFNs) / n,
		ResolutionNs: float64(v.Cost.ResolutionNs) / n, RxSoftirq: math.NaN(), RxMarginal: math.NaN(),
		Cycles: math.NaN(), CyclesMarginal: math.NaN()}
	cyc, haveCyc := cyclesPerPkt(v)
	if haveCyc {
		pc.Cycles = cyc
	}
	rx, haveRx := contextPerPkt(v, CtxRxSoftirq)
	if haveRx {
		pc.RxSoftirq = rx
	}
	if base := baselineVariant(b); base != nil {
		if bw, ok := wholePath(*base); ok {
			pc.Marginal = w - bw
		}
		if brx, ok := contextPerPkt(*base, CtxRxSoftirq); ok && haveRx {
			pc.RxMarginal = rx - brx
		}
		if bc, ok := cyclesPerPkt(*base); ok && haveCyc {
			pc.CyclesMarginal = cyc - bc
		}
	}
	return pc, true
}

// PathRows are the cost rows of v in boot b, as program-like costs so
// they go through the same decision rule as the programs; the baseline
// has no marginal rows (they are 0 by definition).
func PathRows(b results.Boot, v results.VariantResult) []results.ProgCost {
	if Interleaved(v) {
		return interleavedRows(b, v)
	}
	pc, ok := PathCostOf(b, v)
	if !ok {
		return nil
	}
	out := []results.ProgCost{{Name: WholePathRow, Type: "cost", NsPerPkt: pc.WholePath}}
	if !IsBaseline(v.Variant) && !math.IsNaN(pc.Marginal) {
		out = append(out, results.ProgCost{Name: MarginalRow, Type: "cost", NsPerPkt: pc.Marginal})
	}
	if !math.IsNaN(pc.RxSoftirq) {
		out = append(out, results.ProgCost{Name: RxSoftirqRow, Type: "cost", NsPerPkt: pc.RxSoftirq})
	}
	if !IsBaseline(v.Variant) && !math.IsNaN(pc.RxMarginal) {
		out = append(out, results.ProgCost{Name: RxMarginalRow, Type: "cost", NsPerPkt: pc.RxMarginal})
	}
	if !math.IsNaN(pc.Cycles) {
		out = append(out, results.ProgCost{Name: CyclesRow, Type: "cost", NsPerPkt: pc.Cycles})
	}
	if !IsBaseline(v.Variant) && !math.IsNaN(pc.CyclesMarginal) {
		out = append(out, results.ProgCost{Name: CyclesMarginalRow, Type: "cost", NsPerPkt: pc.CyclesMarginal})
	}
	return out
}

// interleavedRows are an interleaved variant's rows: the plugin's exact
// instructions per packet and, with the cache model, modelled cycles,
// each with its marginal over the same boot's baseline, and each vCPU's
// share (VCPURow).
func interleavedRows(b results.Boot, v results.VariantResult) []results.ProgCost {
	e := v.Exact
	if e.Packets == 0 {
		return nil
	}
	per := func(n uint64) float64 { return float64(n) / float64(e.Packets) }
	out := []results.ProgCost{{Name: InsnsRow, Type: "cost", NsPerPkt: per(e.Insns)}}
	if e.Model != "" {
		out = append(out, results.ProgCost{Name: CyclesRow, Type: "cost", NsPerPkt: per(e.Cycles)})
	}
	for i, c := range e.VCPUs {
		out = append(out, results.ProgCost{Name: VCPURow(i, CallInsnsSuffix), Type: "cost", NsPerPkt: per(c.Insns)})
		if e.Model != "" {
			out = append(out, results.ProgCost{Name: VCPURow(i, CallCyclesSuffix), Type: "cost", NsPerPkt: per(c.Cycles)})
		}
	}
	if IsBaseline(v.Variant) {
		return out
	}
	for _, bv := range b.Variants {
		if !IsBaseline(bv.Variant) || bv.Exact == nil || bv.Exact.Packets == 0 {
			continue
		}
		be := bv.Exact
		bper := func(n uint64) float64 { return float64(n) / float64(be.Packets) }
		out = append(out, results.ProgCost{Name: InsnsMarginalRow, Type: "cost", NsPerPkt: per(e.Insns) - bper(be.Insns)})
		if e.Model != "" && be.Model != "" {
			out = append(out, results.ProgCost{Name: CyclesMarginalRow, Type: "cost", NsPerPkt: per(e.Cycles) - bper(be.Cycles)})
		}
	}
	return out
}

// alignPathRows drops a cost row (a program's call rows too) from every
// sample of a variant when any sample of either kernel lacks it: a
// missing program costs 0, a missing measurement is unknown, and 0 would
// read as a change.
func alignPathRows(byRole map[string][]sample) {
	names := append([]string(nil), costRows...)
	seen := map[string]bool{}
	for _, role := range sortedRoles(byRole) {
		for _, s := range byRole[role] {
			for _, c := range s.costs {
				if IsCallRow(c.Name) && !seen[c.Name] {
					seen[c.Name] = true
					names = append(names, c.Name)
				}
			}
		}
	}
	for _, name := range names {
		all := true
		for _, ss := range byRole {
			for _, s := range ss {
				all = all && hasCost(s.costs, name)
			}
		}
		if all {
			continue
		}
		for role, ss := range byRole {
			for i := range ss {
				ss[i].costs = dropCost(ss[i].costs, name)
			}
			byRole[role] = ss
		}
	}
}

func hasCost(cs []results.ProgCost, name string) bool {
	for _, c := range cs {
		if c.Name == name {
			return true
		}
	}
	return false
}

func dropCost(cs []results.ProgCost, name string) []results.ProgCost {
	out := cs[:0:0]
	for _, c := range cs {
		if c.Name != name {
			out = append(out, c)
		}
	}
	return out
}

// WithBaselineOf adds the tree's baseline variant to the variants a later
// look boots again: their marginal rows need it in every boot.
func WithBaselineOf(ab TreeAB, variants []string) []string {
	if len(variants) == 0 {
		return variants
	}
	for _, v := range variants {
		if IsBaseline(v) {
			return variants
		}
	}
	for _, v := range ab.Variants {
		if IsBaseline(v.Variant) {
			return append([]string{v.Variant}, variants...)
		}
	}
	return variants
}

// sortedRoles is byRole's roles in order: what iterates them does not
// depend on the map's order.
func sortedRoles(byRole map[string][]sample) []string {
	roles := make([]string, 0, len(byRole))
	for r := range byRole {
		roles = append(roles, r)
	}
	sort.Strings(roles)
	return roles
}
