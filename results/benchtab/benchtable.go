package benchtab

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/kci-dev/kci/internal/stats"
	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/results/verdict"
	"github.com/kci-dev/kci/wire"
)

// BenchTable is `kci bench`'s answer: the mail's table (one column per
// guest seed, the BPF total as mean ± spread) with the whole-path cost
// rows under each variant's programs, and the designs side by side.
type BenchTable struct {
	Agg      AggTable       `json:"agg"`      // the programs, in the mail's layout
	Paths    [][]BenchPath  `json:"paths"`    // per Agg.Variants entry: its cost rows
	Ratios   []DesignRatio  `json:"ratios"`   // design vs design, from different trees
	Unit     string         `json:"unit"`     // what every number counts
	Boots    map[string]int `json:"boots"`    // valid boots per variant
	Excluded []string       `json:"excluded"` // what is not in the numbers, and why
	// Model names the cache model behind the modelled-cycles rows ("" =
	// none ran); ModelCPUs are the guest CPU counts of the boots it ran in
	// (none recorded in older records).
	Model     string `json:"model,omitempty"`
	ModelCPUs []int  `json:"model_cpus,omitempty"`
	// Interleaved: a guest of several vCPUs ran some boots, whose
	// bpf_stats and time rows count the other vCPUs' turns
	// (verdict.InterleavedNote).
	Interleaved bool `json:"interleaved,omitempty"`
	// Splits are each program's calls split by function, where the
	// plugin split them.
	Splits []CallSplit `json:"splits,omitempty"`
	// CallInsns, per Agg.Variants entry, are its programs' calls in
	// instructions a packet (call:<prog>/instructions, exact): not rows
	// of the table, the hardware's comparison divides by them.
	CallInsns [][]BenchPath `json:"call_insns,omitempty"`
}

// BenchPath is one cost row of a variant: per set, then mean ± spread
// (spread = (max − min) / 2, as the mail's totals).
type BenchPath struct {
	Name   string    `json:"name"`
	Values []float64 `json:"values"`
	Mean   float64   `json:"mean"`
	Spread float64   `json:"spread"`
}

// DesignRatio is design A's cost over design B's with its 95 % interval
// by the delta method over the per-seed values (Student t, n−1 degrees of
// freedom, n the smaller count; seeds not paired: the two designs ran on
// different kernels).
type DesignRatio struct {
	A      string  `json:"a"`
	B      string  `json:"b"`
	Metric string  `json:"metric"` // marginal | cycles-marginal (the cache model's) | bpf
	Ratio  float64 `json:"ratio"`
	Lo     float64 `json:"lo"`
	Hi     float64 `json:"hi"`
	N      int     `json:"n"`
}

// OutsideBPFRow is the bench table's whole-path − bpf_stats row. There is
// no softirq row: /proc/stat's softirq column is sampled at the tick, and
// the traffic wakes on the tick (the 1 ms grid), so the tick always finds
// the CPU idle and the column read 0.0 on every seed; the production
// config has no IRQ_TIME_ACCOUNTING to count it exactly.
const OutsideBPFRow = "outside-bpf"

// The bench table's breakdown of whole-path by the guest's accountant
// (besides rx-softirq): where the rest of a packet's time went.
const (
	SyscallsRow = "syscalls" // the traffic threads' read and write, interrupts out
	HardirqRow  = "hardirq"
	UserRow     = "user+runtime" // the traffic threads outside read/write: Go code, its runtime, sleeps
	AgentRow    = "agent"        // the agent's other threads: not in whole-path
	RestRow     = "rest"         // other tasks and the other softirqs (deferred work: RCU, timers)
)

var benchPathRows = []string{verdict.WholePathRow, verdict.MarginalRow, OutsideBPFRow, verdict.RxSoftirqRow, verdict.RxMarginalRow,
	SyscallsRow, HardirqRow, UserRow, AgentRow, RestRow, verdict.CyclesRow, verdict.CyclesMarginalRow, verdict.CallsCyclesRow}

// breakdownOf sums v's accountant categories per packet into the bench
// table's breakdown rows; nil without the accountant.
func breakdownOf(v results.VariantResult) map[string]float64 {
	if v.Cost == nil || v.Cost.Packets == 0 || len(v.Cost.Contexts) == 0 {
		return nil
	}
	out := map[string]float64{}
	n := float64(v.Cost.Packets)
	for _, c := range v.Cost.Contexts {
		var row string
		switch {
		case c.Name == verdict.CtxSyscalls:
			row = SyscallsRow
		case c.Name == "hardirq":
			row = HardirqRow
		case c.Name == "traffic":
			row = UserRow
		case c.Name == verdict.CtxAgent:
			row = AgentRow
		case c.Name == verdict.CtxRxSoftirq || c.Name == "idle":
			continue
		default:
			row = RestRow
		}
		out[row] += float64(c.Ns) / n
	}
	return out
}

// PatchedTree names the patched kernel of a kci test run's tree in a
// bench table: "gtp+patched" is gtp with the run's patch, so
// `kci bench BENCHRUN TESTRUN` sets a patched design beside the trees'
// (the mail's gtp with rht-no-shrink beside ext).
const PatchedTree = "+patched"

// BuildBench tabulates the base-kernel boots of runs, and the patched
// kernel's of a kci test run as tree <tree>+patched: a set per guest seed
// (sets of every run and tree with the same seed share a column).
func BuildBench(runs ...*results.Run) BenchTable {
	bb := &benchBuilder{bt: BenchTable{Boots: map[string]int{}}, sets: map[string]*AggSet{},
		values: map[string]map[string]map[string]float64{}, insns: map[string]map[string]map[string]float64{}, seen: map[string]bool{}, icount: true}
	for _, r := range runs {
		bb.icount = bb.icount && r.ClockMode("") == results.ClockICount
		for _, b := range verdict.SortedBoots(r) {
			switch b.Role {
			case results.RoleBase:
				bb.addBoot(b)
			case results.RolePatched:
				b.Tree += PatchedTree
				bb.addBoot(b)
			}
		}
	}
	return bb.table()
}

// benchBuilder collects the sets (a column per seed, in order) and the
// path-cost rows of the base boots.
type benchBuilder struct {
	bt     BenchTable
	sets   map[string]*AggSet
	order  []string
	values map[string]map[string]map[string]float64 // variant → row → set → ns/pkt
	insns  map[string]map[string]map[string]float64 // the same, for CallInsns
	seen   map[string]bool                          // tree/label
	icount bool
	// excluded: what is left out ("ext-gtp: kernel lacks ..."), in order,
	// with the columns it is left out of: one line for every seed, not one
	// a seed.
	excluded     []string
	excludedFrom map[string][]string
	splits       splitBoots
}

// label names a boot's column: its seed, or its repetition.
func (bb *benchBuilder) label(b results.Boot) string {
	label := fmt.Sprintf("seed-%d", b.Seed)
	if b.Seed == 0 {
		label = fmt.Sprintf("rep-%d", b.Rep)
	}
	if bb.seen[b.Tree+"/"+label] {
		// The same seed again (kci test --seed): a column per boot.
		label = fmt.Sprintf("%s/rep-%d", label, b.Rep)
	}
	bb.seen[b.Tree+"/"+label] = true
	return label
}

func (bb *benchBuilder) addBoot(b results.Boot) {
	label := bb.label(b)
	if b.Error != "" {
		bb.exclude(label, fmt.Sprintf("%s: boot failed: %s", b.Tree, b.Error))
		return
	}
	if bb.sets[label] == nil {
		bb.sets[label] = &AggSet{Label: label}
		bb.order = append(bb.order, label)
	}
	for _, v := range b.Variants {
		name := results.VariantLabel(b.Tree, v.Variant)
		if v.Skipped != "" || !v.Valid {
			bb.exclude(label, fmt.Sprintf("%s: %s", name, firstNonEmpty(v.Skipped, v.Invalid, "not validated")))
			continue
		}
		costs, _ := results.PerPacket(v.Programs)
		bb.sets[label].Variants = append(bb.sets[label].Variants, AggEntry{Variant: name, Costs: costs})
		bb.bt.Boots[name]++
		if pc, ok := verdict.PathCostOf(b, v); ok {
			bb.put(name, verdict.WholePathRow, label, pc.WholePath)
			if !verdict.IsBaseline(v.Variant) {
				bb.put(name, verdict.MarginalRow, label, pc.Marginal)
			}
			bb.put(name, OutsideBPFRow, label, pc.WholePath-pc.BPF)
			if !math.IsNaN(pc.RxSoftirq) {
				bb.put(name, verdict.RxSoftirqRow, label, pc.RxSoftirq)
			}
			if !verdict.IsBaseline(v.Variant) && !math.IsNaN(pc.RxMarginal) {
				bb.put(name, verdict.RxMarginalRow, label, pc.RxMarginal)
			}
			if !math.IsNaN(pc.Cycles) {
				bb.put(name, verdict.CyclesRow, label, pc.Cycles)
			}
			if !verdict.IsBaseline(v.Variant) && !math.IsNaN(pc.CyclesMarginal) {
				bb.put(name, verdict.CyclesMarginalRow, label, pc.CyclesMarginal)
			}
		}
		if x, ok := verdict.CallsCycles(v); ok {
			bb.put(name, verdict.CallsCyclesRow, label, x)
		}
		for _, r := range verdict.CallRows(v) {
			if verdict.IsCyclesRow(r.Name) {
				bb.put(name, r.Name, label, r.NsPerPkt)
			} else {
				putRow(bb.insns, name, r.Name, label, r.NsPerPkt)
			}
		}
		for row, x := range breakdownOf(v) {
			bb.put(name, row, label, x)
		}
		bb.splits.add(name, v.Exact)
		if verdict.Interleaved(v) {
			bb.bt.Interleaved = true
		}
		if v.Exact != nil && v.Exact.Model != "" {
			bb.bt.Model = v.Exact.Model
			if b.Sanity != nil && b.Sanity.NumCPU > 0 {
				bb.bt.ModelCPUs = append(bb.bt.ModelCPUs, b.Sanity.NumCPU)
			}
		}
	}
}

func (bb *benchBuilder) put(variant, row, label string, x float64) {
	putRow(bb.values, variant, row, label, x)
}

func putRow(values map[string]map[string]map[string]float64, variant, row, label string, x float64) {
	if values[variant] == nil {
		values[variant] = map[string]map[string]float64{}
	}
	if values[variant][row] == nil {
		values[variant][row] = map[string]float64{}
	}
	values[variant][row][label] = x
}

func (bb *benchBuilder) exclude(label, what string) {
	if bb.excludedFrom == nil {
		bb.excludedFrom = map[string][]string{}
	}
	if _, ok := bb.excludedFrom[what]; !ok {
		bb.excluded = append(bb.excluded, what)
	}
	bb.excludedFrom[what] = append(bb.excludedFrom[what], label)
}

// excludedLines names, for each left-out measurement, its columns, or
// "every seed" when it is out of all of them.
func (bb *benchBuilder) excludedLines() []string {
	var out []string
	for _, what := range bb.excluded {
		from := bb.excludedFrom[what]
		where := strings.Join(from, ", ")
		if len(from) == len(bb.order) && len(from) > 1 {
			where = fmt.Sprintf("every seed (%d)", len(from))
		}
		out = append(out, where+" "+what)
	}
	return out
}

func (bb *benchBuilder) table() BenchTable {
	bt := bb.bt
	bt.Excluded = bb.excludedLines()
	bt.ModelCPUs = sortedInts(bt.ModelCPUs)
	sort.SliceStable(bb.order, func(i, j int) bool { return repOf(bb.order[i]) < repOf(bb.order[j]) })
	var aggSets []AggSet
	for _, l := range bb.order {
		aggSets = append(aggSets, *bb.sets[l])
	}
	bt.Unit = "ns/pkt"
	if bb.icount {
		bt.Unit = results.InstructionTimeLabel
	}
	bt.Agg = BuildAgg("kci bench: tree kernels, no patch ("+bt.Unit+")", aggSets)
	for _, v := range bt.Agg.Variants {
		bt.Paths = append(bt.Paths, bb.pathRows(v.Variant))
	}
	if len(bb.insns) > 0 {
		for _, v := range bt.Agg.Variants {
			bt.CallInsns = append(bt.CallInsns, bb.rows(bb.insns[v.Variant], slices.Sorted(maps.Keys(bb.insns[v.Variant]))))
		}
	}
	bt.Ratios = designRatios(bt)
	var variants []string
	for _, v := range bt.Agg.Variants {
		variants = append(variants, v.Variant)
	}
	bt.Splits = bb.splits.table(variants)
	return bt
}

// pathRows are a variant's cost rows, a value per column (NaN where a
// seed has none) and their mean ± spread: benchPathRows', then each
// program's call row in modelled cycles, by name.
func (bb *benchBuilder) pathRows(variant string) []BenchPath {
	names := slices.Clone(benchPathRows)
	var calls []string
	for row := range bb.values[variant] {
		if verdict.IsCallRow(row) && row != verdict.CallsCyclesRow {
			calls = append(calls, row)
		}
	}
	slices.Sort(calls)
	return bb.rows(bb.values[variant], append(names, calls...))
}

// rows are byRow's rows of names, in order, a value per column (NaN
// where a seed has none) and their mean ± spread.
func (bb *benchBuilder) rows(byRow map[string]map[string]float64, names []string) []BenchPath {
	var rows []BenchPath
	for _, row := range names {
		byLabel := byRow[row]
		if byLabel == nil {
			continue
		}
		p := BenchPath{Name: row}
		for _, l := range bb.order {
			x, ok := byLabel[l]
			if !ok {
				x = math.NaN()
			}
			p.Values = append(p.Values, x)
		}
		p.Mean, p.Spread = meanSpread(p.Values)
		rows = append(rows, p)
	}
	return rows
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// treeOf is the tree part of a <tree>-<variant> label.
func treeOf(label string) string {
	t, _, _ := strings.Cut(label, "-")
	return t
}

// designsOf are the variants that are a tree's own design: those that
// ran on one tree only (ext, gtp*; a tree's patched kernel counts as the
// tree), neither the baseline nor a stock variant every tree can run
// (wire.StockVariants: cnt, hash, lru), whose cross-tree ratio compares a
// kernel with itself, even when a run booted it on one tree only.
func designsOf(vs []AggVariant) map[string]bool {
	trees := map[string]map[string]bool{} // bare variant → trees
	for _, v := range vs {
		t, bare, _ := strings.Cut(v.Variant, "-")
		if trees[bare] == nil {
			trees[bare] = map[string]bool{}
		}
		trees[bare][strings.TrimSuffix(t, PatchedTree)] = true
	}
	out := map[string]bool{}
	for _, v := range vs {
		_, bare, _ := strings.Cut(v.Variant, "-")
		out[v.Variant] = bare != verdict.BaselineVariant && !slices.Contains(wire.StockVariants, bare) && len(trees[bare]) == 1
	}
	return out
}

// designRatios compares every design with every design of another tree,
// on the marginal cost and on the BPF total, in table order.
func designRatios(bt BenchTable) []DesignRatio {
	var out []DesignRatio
	vs := bt.Agg.Variants
	design := designsOf(vs)
	for i, a := range vs {
		for j := i + 1; j < len(vs); j++ {
			b := vs[j]
			if !design[a.Variant] || !design[b.Variant] || treeOf(a.Variant) == treeOf(b.Variant) {
				continue
			}
			// Not rx-marginal: a design's work outside the programs sits in
			// different contexts (ext frees in the receive softirq, gtp
			// dispatches in the reader's syscall), so only the whole
			// marginal compares designs.
			for _, m := range []string{verdict.MarginalRow, verdict.CyclesMarginalRow} {
				if ma, mb := pathValues(bt.Paths[i], m), pathValues(bt.Paths[j], m); ma != nil && mb != nil {
					out = append(out, ratioOf(a.Variant, b.Variant, m, ma, mb))
				}
			}
			out = append(out, ratioOf(a.Variant, b.Variant, "bpf", a.Totals, b.Totals))
		}
	}
	return out
}

func pathValues(rows []BenchPath, name string) []float64 {
	for _, r := range rows {
		if r.Name == name {
			return r.Values
		}
	}
	return nil
}

// ratioOf is mean(a)/mean(b) with the delta method's 95 % interval:
// var(R) ≈ R²·(s²a/(na·ā²) + s²b/(nb·b̄²)).
func ratioOf(a, b, metric string, xa, xb []float64) DesignRatio {
	pa, pb := stats.Present(xa), stats.Present(xb)
	ma, va := stats.MeanVar(pa)
	mb, vb := stats.MeanVar(pb)
	na, nb := len(pa), len(pb)
	r := DesignRatio{A: a, B: b, Metric: metric, N: min(na, nb), Ratio: math.NaN(), Lo: math.NaN(), Hi: math.NaN()}
	if na == 0 || nb == 0 || mb == 0 {
		return r
	}
	r.Ratio = ma / mb
	if r.N < 2 {
		return r
	}
	se := math.Abs(r.Ratio) * math.Sqrt(va/(float64(na)*ma*ma)+vb/(float64(nb)*mb*mb))
	if ma == 0 {
		se = math.Sqrt(va/float64(na)) / math.Abs(mb)
	}
	t := stats.TQuantile(0.975, float64(r.N-1))
	r.Lo, r.Hi = r.Ratio-t*se, r.Ratio+t*se
	return r
}
