package verdict

import (
	"math"
	"sort"

	"github.com/kci-dev/kci/internal/stats"
	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/wire"
)

// WhereMin is the smallest change in instructions per packet a function
// is named from, and the seed-to-seed range below which a function's
// count (instructions or modelled cycles) is exact: half an instruction,
// below which a per-packet mean moves when one interrupt lands in a
// window.
const WhereMin = 0.5

// WhereCyclesMin is the smallest change in modelled cycles per packet a
// function is named from: one L2 hit's penalty. Moving code and data
// moves the model's set conflicts: a patch that grew the kernel's BSS by
// 64 MiB moved functions it did not touch by up to ±8 cycles/pkt, the
// same on every seed.
const WhereCyclesMin = 13

// WhereCrossMin is the smallest change in cross-core events per packet
// (the coherent model's transfers and upgrades) a function is named from:
// half of one, as for instructions.
const WhereCrossMin = 0.5

// WhereTop is how many functions a report names per variant at most;
// run.json's report keeps them all.
const WhereTop = 12

// Where is where a tree's change went, function by function, from the
// QEMU plugin's exact counts: what kci test names beside the rows. A
// function whose seeds agree on both kernels (exact) is named when it
// moved by the minimum; the others are a family of their own (every such
// function of every variant of every icount tree of the run), tested
// like the deterministic rows with Welch's t over seeds and Holm at
// DetAlpha over the planned looks. Exact rows are not in the family:
// nothing random decides them. The rows locate; they decide no row's
// verdict and no conclusion.
type Where struct {
	Rows   []WhereRow `json:"rows,omitempty"`
	Family int        `json:"family"` // rows with seed spread tested over the run (exact ones are not)
	Model  string     `json:"model,omitempty"`
	// Note says why there are no rows to read: no exact counts (no
	// plugin, KVM, the host clock) or too few seeds.
	Note string `json:"note,omitempty"`
}

// WhereRow is one function of one variant whose instructions per packet
// (or modelled cycles per packet) changed.
type WhereRow struct {
	Variant string `json:"variant"`
	Func    string `json:"func"`
	// Insns, Cycles and CrossCore are per packet: the per-seed means of
	// each side and their difference, with the change's 95 % interval.
	// CrossCore (under the coherent model: several vCPUs) is the lines
	// the function's accesses brought from another core or upgraded from
	// shared.
	Insns     WhereDelta  `json:"insns"`
	Cycles    *WhereDelta `json:"cycles,omitempty"`
	CrossCore *WhereDelta `json:"cross_core,omitempty"`
	Seeds     int         `json:"seeds"`
}

// WhereDelta is one metric of a WhereRow.
type WhereDelta struct {
	Base    float64 `json:"base"`
	Patched float64 `json:"patched"`
	Delta   float64 `json:"delta"`
	Lo      float64 `json:"lo"`
	Hi      float64 `json:"hi"`
	Exact   bool    `json:"exact"`   // every seed agrees to < WhereMin: the change is exact
	Changed bool    `json:"changed"` // called a change by the family's test
	p, padj float64
}

// Where notes.
const (
	whereNeedsICount = "needs TCG's instruction clock: exact counts come from a QEMU plugin under icount"
	whereNoCounts    = "no exact counts in this run (the QEMU plugin was not loaded: see the run's log)"
	whereFewSeeds    = "needs two guest seeds a side: every function is tested over seeds, and this run's exact counts come from fewer (--seed boots one seed)"
	whereOneSide     = "nothing to compare: this run's exact counts are of one kernel (run.json has them per boot)"
)

// whereTrees is every tree's Where (names, the run's trees): the
// functions of every icount tree are tested as one Holm family, each
// tree's called rows kept for it.
func whereTrees(run *results.Run, names []string) map[string]*Where {
	out := make(map[string]*Where, len(names))
	cands := map[string][]*whereCand{}
	models := map[string]string{}
	counted := map[string]countedSides{}
	var fam []*WhereDelta
	for _, t := range names {
		if run.ClockMode(t) != results.ClockICount {
			out[t] = &Where{Note: whereNeedsICount}
			continue
		}
		cands[t], models[t], counted[t] = whereCands(run, t)
		for _, c := range cands[t] {
			for _, d := range c.deltas() {
				if !d.Exact {
					fam = append(fam, d)
				}
			}
		}
	}
	holmDeltas(fam)
	level := DetAlpha / float64(looks(run))
	for t, own := range cands {
		out[t] = whereOf(own, models[t], counted[t], len(fam), level)
	}
	return out
}

// countedSides says whether a tree's boots had exact counts at all
// (any), and on both kernels of some variant (both).
type countedSides struct{ any, both bool }

// whereOf is one tree's Where from its tested functions (own), once
// Holm has corrected the run's family (of family deltas): the rows called
// a change at level, largest first within each variant; counted says
// which of the tree's boots had exact counts.
func whereOf(own []*whereCand, model string, counted countedSides, family int, level float64) *Where {
	switch {
	case len(own) > 0:
	case counted.both:
		return &Where{Note: whereFewSeeds}
	case counted.any:
		return &Where{Note: whereOneSide}
	default:
		return &Where{Note: whereNoCounts}
	}
	w := &Where{Family: family, Model: model}
	for _, c := range own {
		c.row.Insns.Changed = c.row.Insns.called(level, WhereMin)
		if c.row.Cycles != nil {
			c.row.Cycles.Changed = c.row.Cycles.called(level, WhereCyclesMin)
		}
		if c.row.CrossCore != nil {
			c.row.CrossCore.Changed = c.row.CrossCore.called(level, WhereCrossMin)
		}
		if c.row.changed() {
			w.Rows = append(w.Rows, c.row)
		}
	}
	sort.SliceStable(w.Rows, func(i, j int) bool {
		a, b := w.Rows[i], w.Rows[j]
		if a.Variant != b.Variant {
			return false // variants keep the run's order
		}
		return math.Abs(a.Insns.Delta) > math.Abs(b.Insns.Delta)
	})
	return w
}

// changed says one of the row's metrics was called a change.
func (r *WhereRow) changed() bool {
	for _, d := range r.deltas() {
		if d.Changed {
			return true
		}
	}
	return false
}

func (r *WhereRow) deltas() []*WhereDelta {
	ds := []*WhereDelta{&r.Insns}
	for _, d := range []*WhereDelta{r.Cycles, r.CrossCore} {
		if d != nil {
			ds = append(ds, d)
		}
	}
	return ds
}

// whereCand is one function of one variant, tested.
type whereCand struct{ row WhereRow }

func (c *whereCand) deltas() []*WhereDelta { return c.row.deltas() }

// The per-function counts a WhereRow compares.
func funcInsns(f results.FuncCount) uint64     { return f.Insns }
func funcCycles(f results.FuncCount) uint64    { return f.Cycles }
func funcCrossCore(f results.FuncCount) uint64 { return f.CrossCore }

// exactSample is one boot's exact counts of one variant.
type exactSample struct {
	seed uint64
	e    *results.Exact
}

// whereCands tests every function of every variant of tree; counted
// says whether some variant had exact counts on both kernels.
func whereCands(run *results.Run, tree string) (cands []*whereCand, model string, counted countedSides) {
	var order []string
	by := map[string]map[string][]exactSample{} // variant → role → boots
	for _, b := range SortedBoots(run) {
		if b.Tree != tree || b.Error != "" {
			continue
		}
		for _, v := range b.Variants {
			if !v.Valid || v.Exact == nil || v.Exact.Packets == 0 {
				continue
			}
			if by[v.Variant] == nil {
				by[v.Variant] = map[string][]exactSample{}
				order = append(order, v.Variant)
			}
			by[v.Variant][b.Role] = append(by[v.Variant][b.Role], exactSample{bootSeed(b), v.Exact})
			model = v.Exact.Model
			counted.any = true
		}
	}
	var out []*whereCand
	for _, name := range order {
		base, patched := by[name][results.RoleBase], by[name][results.RolePatched]
		if len(base) == 0 || len(patched) == 0 {
			continue
		}
		counted.both = true
		spread := wire.SeedSpread(name)
		for _, fn := range funcNames(base, patched) {
			c := &whereCand{row: WhereRow{Variant: name, Func: fn}}
			var seeds int
			c.row.Insns, seeds = whereDelta(base, patched, fn, funcInsns, spread)
			c.row.Seeds = seeds
			if model != "" {
				d, _ := whereDelta(base, patched, fn, funcCycles, spread)
				c.row.Cycles = &d
			}
			if model != "" && len(base[0].e.VCPUs) > 1 {
				d, _ := whereDelta(base, patched, fn, funcCrossCore, spread)
				c.row.CrossCore = &d
			}
			if seeds >= 2 {
				out = append(out, c)
			}
		}
	}
	return out, model, counted
}

// funcNames is every function either side counted, in name order.
func funcNames(sets ...[]exactSample) []string {
	seen := map[string]bool{}
	var out []string
	for _, ss := range sets {
		for _, s := range ss {
			for _, f := range s.e.Funcs {
				if !seen[f.Name] {
					seen[f.Name] = true
					out = append(out, f.Name)
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

// whereDelta compares one function's per-packet count over seeds, as
// compareDet does a row's, with WhereMin as the resolution. A variant
// whose costs vary with the seed by design (spread: wire.SeedSpread) has
// no exact functions, and none is tested below MinSpreadSeeds seeds, as
// its rows are not: three seeds of one lump agree as exact ones do.
func whereDelta(base, patched []exactSample, fn string, count func(results.FuncCount) uint64, spread bool) (WhereDelta, int) {
	val := func(ss []exactSample) ([]float64, []uint64) {
		var xs []float64
		var seeds []uint64
		for _, s := range ss {
			var n uint64
			for _, f := range s.e.Funcs {
				if f.Name == fn {
					n = count(f)
				}
			}
			xs = append(xs, float64(n)/float64(s.e.Packets))
			seeds = append(seeds, s.seed)
		}
		return xs, seeds
	}
	bx, bs := val(base)
	px, ps := val(patched)
	bm, _ := seedMeans(bx, bs)
	pm, _ := seedMeans(px, ps)
	mb, _ := stats.MeanVar(bm)
	mp, _ := stats.MeanVar(pm)
	d := WhereDelta{Base: mb, Patched: mp, Delta: mp - mb, p: 1, padj: 1}
	n := min(len(bm), len(pm))
	if n < 2 {
		d.Lo, d.Hi = math.NaN(), math.NaN()
		return d, n
	}
	w := stats.WelchTest(bm, pm)
	d.p = w.P
	h := w.HalfWidth(confidence)
	d.Lo, d.Hi = d.Delta-h, d.Delta+h
	switch {
	case spread && n < MinSpreadSeeds:
		d.p = 1
	case !spread && stats.Range(bm) < WhereMin && stats.Range(pm) < WhereMin:
		d.Exact, d.p = true, 1
		if math.Abs(d.Delta) >= WhereMin {
			d.p = 0
		}
	}
	if math.IsNaN(d.p) {
		d.p = 1
	}
	return d, n
}

// called: exact and beyond the minimum, or significant in the family.
func (d *WhereDelta) called(level, minimum float64) bool {
	if math.Abs(d.Delta) < minimum {
		return false
	}
	return d.Exact || d.padj < level
}

// holmDeltas is stats.Holm over the Where family.
func holmDeltas(ds []*WhereDelta) {
	ps := make([]float64, len(ds))
	for i, d := range ds {
		ps[i] = d.p
	}
	for i, adj := range stats.Holm(ps) {
		ds[i].padj = adj
	}
}
