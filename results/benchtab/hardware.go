package benchtab

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/kci-dev/kci/internal/stats"
	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/results/verdict"
)

// HardwareTable sets the user's hardware numbers (bpf_stats on his
// machine) beside kci's bench table: each BPF row of a variant both have,
// with kci's numbers in every unit kci has for it, and the ratios of
// variants with the model error of each of kci's units. Absolute numbers
// of different units do not compare: only the ratios get an error.
type HardwareTable struct {
	Sets []string `json:"sets"` // the hardware sets, in order
	Unit string   `json:"unit"` // the hardware's numbers: HardwareUnit, or HardwareFloorUnit
	// FloorNs is bpf_stats' floor a call taken off the hardware's rows
	// (kci bench --hardware-floor), 0 for none.
	FloorNs float64 `json:"floor_ns,omitempty"`
	// Trees maps a tree of the hardware's variant names to kci's
	// (--hardware-tree gtp=gtp+patched); unmapped trees keep their name.
	Trees  map[string]string `json:"trees,omitempty"`
	Rows   []HardwareRow     `json:"rows"`
	Ratios []HardwareRatio   `json:"ratios"`
	// Clocks are the programs' instructions and modelled cycles per the
	// hardware's ns (ProgramClock), the cycles in ClockUnit ("" without
	// the cache model); ClockMedian their median.
	Clocks      []ProgramClock `json:"clocks,omitempty"`
	ClockUnit   string         `json:"clock_unit,omitempty"`
	ClockMedian float64        `json:"clock_median,omitempty"`
	// OnlyHardware are the hardware's variants no kci row matched;
	// OnlyKCI kci's rows no hardware variant matched.
	OnlyHardware []string `json:"only_hardware,omitempty"`
	OnlyKCI      []string `json:"only_kci,omitempty"`
}

// Spread is a mean with its spread ((max − min) / 2) over the N sets or
// seeds that have the number; NaN with none.
type Spread struct {
	Mean   float64 `json:"mean"`
	Spread float64 `json:"spread"`
	N      int     `json:"n"`
}

func spreadOf(xs []float64) Spread {
	m, s := meanSpread(xs)
	return Spread{Mean: m, Spread: s, N: len(stats.Present(xs))}
}

// UnitValue is kci's number for a row in one unit.
type UnitValue struct {
	Unit string `json:"unit"`
	Spread
}

// HardwareRow is one BPF row of a variant: a program, or the variant's
// total (Program = verdict.TotalRow).
type HardwareRow struct {
	Variant  string      `json:"variant"`  // kci's row
	Hardware string      `json:"hardware"` // the variant's name in the hardware sets
	Program  string      `json:"program"`
	HW       Spread      `json:"hw"`
	KCI      []UnitValue `json:"kci"` // per unit kci has for the row
	// Insns is a program's instructions a packet in its calls (exact,
	// the plugin's call:<prog>/instructions), nil without them.
	Insns *Spread `json:"insns,omitempty"`
}

// HardwareRatio is variant A's cost over B's: the hardware's ratio of
// the BPF totals' means (and the range of the sets' own ratios), beside
// kci's in each of its units. A over B is the way the hardware's ratio is
// at least 1.
type HardwareRatio struct {
	A string `json:"a"` // kci's rows
	B string `json:"b"`
	// HWA and HWB are their names in the hardware sets.
	HWA string  `json:"hw_a"`
	HWB string  `json:"hw_b"`
	HW  float64 `json:"hw"`
	// HWLo and HWHi are the lowest and highest of the sets' own ratios.
	HWLo float64     `json:"hw_lo"`
	HWHi float64     `json:"hw_hi"`
	KCI  []UnitRatio `json:"kci"`
}

// UnitRatio is kci's ratio on one metric in one unit, and its model
// error against the hardware's ratio: kci / hardware − 1, in percent.
type UnitRatio struct {
	Metric string  `json:"metric"` // bpf | marginal | cycles-marginal | call:*/modelled-cycles
	Unit   string  `json:"unit"`
	Ratio  float64 `json:"ratio"`
	Lo     float64 `json:"lo"`
	Hi     float64 `json:"hi"`
	N      int     `json:"n"`
	ErrPct float64 `json:"error_pct"`
}

// HardwareName is kci's row name for a hardware variant: its tree part
// mapped by trees (hardware tree → kci tree), the rest as it is.
func HardwareName(variant string, trees map[string]string) string {
	t, rest, ok := strings.Cut(variant, "-")
	if kt, mapped := trees[t]; ok && mapped {
		return kt + "-" + rest
	}
	return variant
}

// MatchHardware pairs the hardware's variants with kci's rows (in kci's
// order) and lists what either side has alone.
func MatchHardware(hw []string, kci []string, trees map[string]string) (pairs [][2]string, onlyHW, onlyKCI []string) {
	byKCI := map[string]string{}
	for _, h := range hw {
		byKCI[HardwareName(h, trees)] = h
	}
	matched := map[string]bool{}
	for _, k := range kci {
		if h, ok := byKCI[k]; ok {
			pairs = append(pairs, [2]string{k, h})
			matched[h] = true
			continue
		}
		onlyKCI = append(onlyKCI, k)
	}
	for _, h := range hw {
		if !matched[h] {
			onlyHW = append(onlyHW, h)
		}
	}
	return pairs, onlyHW, onlyKCI
}

// HardwareTrees are the tree parts of the hardware's variant names, in
// order of first appearance.
func HardwareTrees(hw AggTable) []string {
	var out []string
	for _, v := range hw.Variants {
		t, _, _ := strings.Cut(v.Variant, "-")
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

// VariantNames are a table's variants, in order.
func VariantNames(t AggTable) []string {
	out := make([]string, len(t.Variants))
	for i, v := range t.Variants {
		out[i] = v.Variant
	}
	return out
}

// BuildHardware sets the hardware sets hw beside bench table bt; floorNs
// is what ReadHardware took off their calls.
func BuildHardware(bt BenchTable, hw AggTable, trees map[string]string, floorNs float64) HardwareTable {
	ht := HardwareTable{Sets: hw.Sets, Unit: hw.Unit, Trees: trees, FloorNs: floorNs}
	if ht.Unit == "" {
		ht.Unit = HardwareUnit
	}
	pairs, onlyHW, onlyKCI := MatchHardware(VariantNames(hw), VariantNames(bt.Agg), trees)
	ht.OnlyHardware, ht.OnlyKCI = onlyHW, onlyKCI
	for _, p := range pairs {
		ht.Rows = append(ht.Rows, hardwareRows(bt, hw, p[0], p[1])...)
	}
	ht.Ratios = hardwareRatios(bt, hw, pairs)
	unit := callsUnit(bt)
	if cs, med := programClocks(ht.Rows, unit); len(cs) > 0 {
		ht.Clocks = cs
		if !math.IsNaN(med) {
			ht.ClockUnit, ht.ClockMedian = unit, med
		}
	}
	return ht
}

func aggIndex(t AggTable, variant string) int {
	for i, v := range t.Variants {
		if v.Variant == variant {
			return i
		}
	}
	return -1
}

func progValues(v AggVariant, name string) []float64 {
	for _, p := range v.Programs {
		if p.Name == name {
			return p.Values
		}
	}
	return nil
}

// hardwareRows are a matched variant's total and programs: those that ran
// on the hardware in its order, then those only kci's ran.
func hardwareRows(bt BenchTable, hw AggTable, kciName, hwName string) []HardwareRow {
	kv, hv := bt.Agg.Variants[aggIndex(bt.Agg, kciName)], hw.Variants[aggIndex(hw, hwName)]
	i := aggIndex(bt.Agg, kciName)
	calls := callsUnit(bt)
	row := func(prog string, h, k []float64) HardwareRow {
		r := HardwareRow{Variant: kciName, Hardware: hwName, Program: prog, HW: spreadOf(h)}
		if k != nil {
			r.KCI = []UnitValue{{Unit: bpfUnit(bt), Spread: spreadOf(k)}}
		}
		// The program's calls in modelled cycles: bpf_stats' scope.
		callRow := verdict.CallsCyclesRow
		if prog != verdict.TotalRow {
			callRow = verdict.CallRowPrefix + prog + verdict.CallCyclesSuffix
		}
		if c := pathValues(bt.Paths[i], callRow); c != nil {
			r.KCI = append(r.KCI, UnitValue{Unit: calls, Spread: spreadOf(c)})
		}
		if prog != verdict.TotalRow && i < len(bt.CallInsns) {
			if n := pathValues(bt.CallInsns[i], verdict.CallRowPrefix+prog+verdict.CallInsnsSuffix); n != nil {
				sp := spreadOf(n)
				r.Insns = &sp
			}
		}
		return r
	}
	rows := []HardwareRow{row(verdict.TotalRow, hv.Totals, kv.Totals)}
	for _, p := range hv.Programs {
		rows = append(rows, row(p.Name, p.Values, progValues(kv, p.Name)))
	}
	for _, p := range kv.Programs {
		if progValues(hv, p.Name) == nil && !neverRan(p) {
			rows = append(rows, row(p.Name, nil, p.Values))
		}
	}
	return rows
}

// ratioPairs are the matched rows compared: every two of one kci tree
// (a design over its tree's floor, designs of a tree against each other,
// as the user's mail does), and every two designs of different trees
// (designsOf), among the rows matched: a run that also booted other trees
// with the same designs (the ext tree with and without a patch) still
// compares the trees --hardware-tree matched.
func ratioPairs(bt BenchTable, pairs [][2]string) [][2]int {
	var idx []int
	var matched []AggVariant
	for _, p := range pairs {
		if i := aggIndex(bt.Agg, p[0]); !verdict.IsBaseline(p[0]) {
			idx = append(idx, i)
			matched = append(matched, bt.Agg.Variants[i])
		}
	}
	design := designsOf(matched)
	var out [][2]int
	for x, i := range idx {
		for _, j := range idx[x+1:] {
			a, b := bt.Agg.Variants[i].Variant, bt.Agg.Variants[j].Variant
			if treeOf(a) == treeOf(b) || design[a] && design[b] {
				out = append(out, [2]int{i, j})
			}
		}
	}
	return out
}

// hardwareRatios are the ratios of ratioPairs, each turned so that the
// hardware's is at least 1, with kci's on every metric it has for both.
func hardwareRatios(bt BenchTable, hw AggTable, pairs [][2]string) []HardwareRatio {
	hwOf := map[string]AggVariant{}
	for _, p := range pairs {
		hwOf[p[0]] = hw.Variants[aggIndex(hw, p[1])]
	}
	var out []HardwareRatio
	for _, ij := range ratioPairs(bt, pairs) {
		i, j := ij[0], ij[1]
		a, b := bt.Agg.Variants[i], bt.Agg.Variants[j]
		ha, hb := hwOf[a.Variant], hwOf[b.Variant]
		if ha.Mean < hb.Mean {
			i, j, a, b, ha, hb = j, i, b, a, hb, ha
		}
		r := HardwareRatio{A: a.Variant, B: b.Variant, HWA: ha.Variant, HWB: hb.Variant, HW: ha.Mean / hb.Mean}
		r.HWLo, r.HWHi = setRatioRange(ha.Totals, hb.Totals)
		for _, m := range kciMetrics(bt) {
			xa, xb := m.values(bt, i), m.values(bt, j)
			if xa == nil || xb == nil {
				continue
			}
			d := ratioOf(a.Variant, b.Variant, m.metric, xa, xb)
			r.KCI = append(r.KCI, UnitRatio{Metric: m.metric, Unit: m.unit, Ratio: d.Ratio, Lo: d.Lo, Hi: d.Hi, N: d.N,
				ErrPct: (d.Ratio/r.HW - 1) * 100})
		}
		out = append(out, r)
	}
	return out
}

// setRatioRange is the lowest and highest of the sets' own ratios a/b
// (a set is one session: both variants ran in it).
func setRatioRange(a, b []float64) (lo, hi float64) {
	lo, hi = math.NaN(), math.NaN()
	for k := range min(len(a), len(b)) {
		if math.IsNaN(a[k]) || math.IsNaN(b[k]) || b[k] == 0 {
			continue
		}
		x := a[k] / b[k]
		if math.IsNaN(lo) || x < lo {
			lo = x
		}
		if math.IsNaN(hi) || x > hi {
			hi = x
		}
	}
	return lo, hi
}

// kciMetric is one of kci's numbers a ratio can be taken on, and its unit.
type kciMetric struct {
	metric, unit string
	row          string // the bench table's path row; "" = the BPF total
}

func (m kciMetric) values(bt BenchTable, i int) []float64 {
	if m.row == "" {
		return bt.Agg.Variants[i].Totals
	}
	return pathValues(bt.Paths[i], m.row)
}

// kciMetrics are the metrics kci's design ratios are taken on: the BPF
// total (bpf_stats, as the hardware's), the marginal cost, the cache
// model's cycles-marginal, and its BPF total in bpf_stats' scope (the
// programs' calls), each in its unit (CyclesUnit: its cores).
//
// A guest of several vCPUs shares one instruction clock between them, so
// its bpf_stats and accountant times count the other vCPUs' turns
// (verdict.InterleavedNote): their unit says so, and no one should quote
// them; the cycles come from the plugin, per vCPU, and stand.
func kciMetrics(bt BenchTable) []kciMetric {
	unit := bpfUnit(bt)
	return []kciMetric{
		{metric: "bpf", unit: unit},
		{metric: verdict.MarginalRow, unit: unit, row: verdict.MarginalRow},
		{metric: verdict.CyclesMarginalRow, unit: CyclesUnit(bt.ModelCPUs), row: verdict.CyclesMarginalRow},
		{metric: verdict.CallsCyclesRow, unit: callsUnit(bt), row: verdict.CallsCyclesRow},
	}
}

// bpfUnit is the unit of kci's bpf_stats (and accountant) numbers: its
// table's, said to count the other vCPUs' turns in a guest of several.
func bpfUnit(bt BenchTable) string {
	if slices.ContainsFunc(bt.ModelCPUs, func(n int) bool { return n > 1 }) {
		return bt.Unit + ", interleaved over several vCPUs: counts the other vCPUs' turns, not a cost"
	}
	return bt.Unit
}

// callsUnitSuffix marks the cache model's unit on bpf_stats' scope (the
// programs' call rows).
const callsUnitSuffix = ", the programs' calls"

// callsUnit is the cache model's unit on bpf_stats' scope for bt's cores.
func callsUnit(bt BenchTable) string { return CyclesUnit(bt.ModelCPUs) + callsUnitSuffix }

// CyclesUnit names the cache model's unit with the guest's cores: a
// model of another core count is another unit, never averaged with this
// one (0: unknown, older records).
func CyclesUnit(cpus []int) string {
	switch {
	case len(cpus) == 0:
		return results.ModelledCyclesLabel
	case len(cpus) == 1 && cpus[0] == 1:
		return results.ModelledCyclesLabel + ", one core"
	case len(cpus) == 1:
		return fmt.Sprintf("%s, %d cores", results.ModelledCyclesLabel, cpus[0])
	}
	s := make([]string, len(cpus))
	for i, n := range cpus {
		s[i] = fmt.Sprint(n)
	}
	return results.ModelledCyclesLabel + ", mixed " + strings.Join(s, "/") + " cores"
}

// sortedInts is xs sorted, without repeats.
func sortedInts(xs []int) []int {
	out := slices.Clone(xs)
	slices.Sort(out)
	return slices.Compact(out)
}
