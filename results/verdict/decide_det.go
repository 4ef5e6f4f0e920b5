package verdict

import (
	"fmt"
	"math"
	"sort"

	"github.com/kci-dev/kci/internal/stats"
	"github.com/kci-dev/kci/results"
)

// DetAlpha is deterministic mode's family-wise false-alarm rate: the
// chance that a run whose patch changes nothing calls any row of any tree
// slower or faster, over every look of the adaptive rule.
const DetAlpha = 0.01

// NoteOneSeed: deterministic mode, a side measured with one guest seed
// only (--seed): its boots can only agree with each other.
const NoteOneSeed = "one seed per kernel: a determinism check, not a comparison"

// MinSpreadSeeds is the fewest seeds per kernel a row with seed spread
// is called a change from, unless the change is gross (grossChangePct);
// rows whose seeds agree within less than an instruction decide from 2.
const MinSpreadSeeds = 6

// grossChangePct is the change a row with seed spread is called from
// below MinSpreadSeeds: four times the widest seed-to-seed spread measured
// (lru_write, 2.5 %), so no lumpy seed draw reaches it, while a gross
// change (a busy-wait, rht-no-shrink's -41 %) is decided at the first look.
const grossChangePct = 10

// LookSeeds are the guest seeds per kernel at each look of the adaptive
// rule: the first is the default run, each later one adds seeds only to
// variants with undecided rows.
var LookSeeds = []int{DeterministicReps, 6, 10, 16}

// looks is the run's planned number of looks (1 without the adaptive
// rule: a plain --reps run is one look).
func looks(r *results.Run) int {
	if r.Sequential != nil && r.Sequential.Looks > 1 {
		return r.Sequential.Looks
	}
	return 1
}

// seedMeans groups a side's values by guest seed (a boot without a
// recorded seed is its own) and gives each seed's mean, in seed order,
// and the seeds whose repeated boots disagree. The order and the sums do
// not depend on the order the boots finished in (a boot from the result
// cache finishes before one that ran): the same boots give the same
// statistics to the last bit, so a rerun takes the same adaptive path.
func seedMeans(xs []float64, seeds []uint64) (means []float64, differ []uint64) {
	type seedValue struct {
		seed uint64
		x    float64
	}
	svs := make([]seedValue, len(xs))
	for i, x := range xs {
		svs[i] = seedValue{seeds[i], x}
	}
	sort.Slice(svs, func(i, j int) bool {
		if svs[i].seed != svs[j].seed {
			return svs[i].seed < svs[j].seed
		}
		return svs[i].x < svs[j].x
	})
	for i := 0; i < len(svs); {
		j, sum := i, 0.0
		for ; j < len(svs) && svs[j].seed == svs[i].seed; j++ {
			sum += svs[j].x
		}
		if k := svs[i].seed; svs[j-1].x != svs[i].x && k&unrecordedSeed == 0 {
			differ = append(differ, k)
		}
		means = append(means, sum/float64(j-i))
		i = j
	}
	return means, differ
}

// compareDet computes a deterministic row's statistics over per-seed
// values, without deciding it (decideDet does, at the family's level).
func compareDet(name string, base, patched []float64, bseeds, pseeds []uint64) Row {
	nan := math.NaN()
	row := Row{Name: name, Base: summarize(base), Patched: summarize(patched), P: nan, PAdj: nan, Shift: Shift{nan, nan, nan}}
	if len(base) == 0 || len(patched) == 0 {
		row.Verdict, row.DeltaPct = NotComparable, nan
		return row
	}
	bm, bdiff := seedMeans(base, bseeds)
	pm, pdiff := seedMeans(patched, pseeds)
	for _, s := range append(bdiff, pdiff...) {
		row.Warnings = append(row.Warnings, fmt.Sprintf("seed %d: boots of one kernel differ: not deterministic", s))
	}
	row.seedsB, row.seedsP = len(bm), len(pm)
	row.Seeds = min(len(bm), len(pm))
	row.DeltaPct = deltaPct(row.Base.Median, row.Patched.Median)
	if row.Seeds < 2 {
		row.Verdict, row.Need, row.Note = TooFew, 2, NoteOneSeed
		return row
	}
	w := stats.WelchTest(bm, pm)
	row.w, row.P = w, w.P
	// Seeds that agree to within less than an instruction: what varies is
	// an interrupt landing in one boot's windows (it only adds time, up to
	// 0.6 ns/pkt seen), never a whole instruction per packet, which is what
	// a code change adds. Such a row is exact: its sides' means cannot
	// differ by a whole instruction unless every seed moved, so a
	// difference of one is a change at any level, as the read and cnt
	// programs have always been decided at 3 seeds. (Half an instruction
	// was the bound before: one 0.6 ns artefact on one seed of a series
	// prefix then made hash_write untestable at 3 seeds, and the series
	// blamed patches 1..2 for patch 2's +20 instructions.)
	if stats.Range(bm) < ResolutionNs && stats.Range(pm) < ResolutionNs {
		row.exact, row.P = true, 1
		if math.Abs(w.Diff) >= ResolutionNs {
			row.P = 0
		}
	}
	if mb := w.MeanA; mb != 0 {
		row.DeltaPct = w.Diff / math.Abs(mb) * 100
		h := w.HalfWidth(confidence) / math.Abs(mb) * 100
		row.Shift = Shift{Est: row.DeltaPct, Lo: row.DeltaPct - h, Hi: row.DeltaPct + h}
	}
	return row
}

// notExact tests r as a row with seed spread even when its seeds agree
// within an instruction: its variant's costs vary with the seed by design
// (wire.SeedSpread), and three seeds of one lump agree that closely.
func (r *Row) notExact() {
	if r.exact {
		r.exact, r.P = false, r.w.P
	}
}

// exactTotal makes a variant's total exact when all its programs are:
// the total is their sum, so its seeds may differ by up to an instruction
// per program (three programs' interrupt artefacts put hash's total at
// 1012.4 ± 0.6 while each program was exact), and it moved by a whole
// instruction exactly when one of them did. Without this the total reads
// as a row with seed spread, untested before 6 seeds, and asks for seeds
// no program needs. The cost rows are not in it.
func exactTotal(va *VariantAB) {
	t := &va.Total
	if t.exact || math.IsNaN(t.P) {
		return
	}
	moved := false
	for _, p := range va.Programs {
		if isCostRow(p.Name) {
			continue
		}
		if !p.exact {
			return
		}
		moved = moved || p.P == 0
	}
	t.exact, t.P = true, 1
	if moved && math.Abs(t.w.Diff) >= ResolutionNs {
		t.P = 0
	}
}

// detTestable: a row that takes part in the deterministic family.
func detTestable(r *Row) bool {
	return r.Verdict != NotComparable && r.Verdict != TooFew && r.Seeds >= 2 && !math.IsNaN(r.P)
}

// floorPct is the smallest change a row may be called: the smallest
// effect, and one instruction-time ns of its base.
func (r Row) floorPct(minEffect float64) float64 {
	m := math.Abs(r.baseMean())
	if m == 0 {
		return minEffect
	}
	return math.Max(minEffect, ResolutionNs/m*100)
}

// baseMean is the base's per-seed mean the row's percentages are of
// (its median when there is none).
func (r Row) baseMean() float64 {
	if r.w.MeanA != 0 {
		return r.w.MeanA
	}
	return r.Base.Median
}

// decideDeterministic decides the deterministic trees' rows (trees, all
// of the run's): Welch's t over per-seed values, Holm over every row of
// every one of them at DetAlpha split over the planned looks, and the
// floors.
func decideDeterministic(run *results.Run, trees []*TreeAB) {
	var fam []*Row
	for _, ab := range trees {
		for _, r := range rowPtrs(ab) {
			if detTestable(r) {
				fam = append(fam, r)
			}
		}
	}
	looks := looks(run)
	holm(fam)
	perLook := DetAlpha / float64(looks)
	level := perLook / float64(max(len(fam), 1)) // Holm's first step: what a lone change must pass
	for _, ab := range trees {
		ab.Family, ab.Looks, ab.Alpha = len(fam), looks, DetAlpha
		oneSeed := 0
		for _, r := range rowPtrs(ab) {
			decideDet(r, ab.MinEffectPct, perLook, level)
			if r.Note == NoteOneSeed {
				oneSeed++
			}
		}
		ab.DeterminismCheck = oneSeed > 0 && len(fam) == 0
		ab.Sequential = run.Sequential
	}
}

func rowPtrs(ab *TreeAB) []*Row {
	var out []*Row
	for i := range ab.Variants {
		v := &ab.Variants[i]
		out = append(out, &v.Total)
		for j := range v.Programs {
			out = append(out, &v.Programs[j])
		}
	}
	return out
}

// decideDet gives one row its verdict: a change when Holm's adjusted p
// passes this look's share of the family's alpha, the row may be called
// at all (exact seeds, MinSpreadSeeds seeds a side, or a gross change)
// and the change clears both floors; otherwise no change, with the change it would have shown
// with 90 % power at the level a lone change must pass.
func decideDet(r *Row, minEffect, perLook, level float64) {
	decideDetAt(r, r.PAdj, minEffect, perLook, level)
}

// decideDetAt is decideDet with p the row's p to pass perLook: Holm's
// adjusted p in a family, the raw one for a test that stands alone
// (narrowing a series' change); the row's own P and PAdj stay as they are.
func decideDetAt(r *Row, p, minEffect, perLook, level float64) {
	if !detTestable(r) {
		if r.Verdict != NotComparable && r.Verdict != TooFew {
			r.Verdict = NoChange
		}
		return
	}
	if r.Base.Median == 0 && r.Patched.Median == 0 {
		r.Verdict = NoChange
		return
	}
	// A row with seed spread is tested from MinSpreadSeeds seeds a side
	// on: with 3, all of one side's seeds can land in one lump of a lumpy
	// seed distribution, leaving a near-zero variance no t test survives
	// (a null run with two-lump write rows flagged 1.75 % of runs so).
	sig := p <= perLook && (r.exact || r.Seeds >= MinSpreadSeeds || math.Abs(r.DeltaPct) >= grossChangePct)
	pct := math.Abs(r.DeltaPct) >= minEffect
	big := pct && math.Abs(r.w.Diff) >= ResolutionNs
	switch {
	case sig && big && r.w.Diff > 0:
		r.Verdict = Slower
	case sig && big:
		r.Verdict = Faster
	default:
		r.Verdict = NoChange
		switch {
		case big:
			r.Note = noteWithinSpread
		case pct:
			r.Note = NoteBelowResolution
		}
		r.Detectable, r.level = r.floorPct(minEffect), level
		if m := math.Abs(r.baseMean()); m > 0 && !r.exact {
			r.Detectable = math.Max(r.Detectable, detectable90(r.w.SE, r.w.DF, level)/m*100)
		}
	}
}

// undecided reports whether a deterministic row needs more seeds: a "no
// change" whose 90 %-power bound is above its floors (the smallest
// effect, one instruction), or a row with fewer than 2 seeds a side that
// more seeds would let be tested.
func (r Row) undecided(minEffect float64) bool {
	switch {
	case r.Verdict == TooFew && r.Note != NoteOneSeed:
		return true
	case r.Verdict != NoChange || r.Seeds < 2:
		return false
	case r.Untested():
		return true
	}
	return r.Detectable > r.floorPct(minEffect)*(1+1e-9)
}

// futile reports whether an undecided row should get no more seeds: with
// reach seeds a side, its projected 90 % bound would still be above its
// floor, and the change it shows now (plus a standard error) would still
// not pass the test, so more seeds would only narrow a bound that cannot
// reach the floor (gtp_write's rhash seed spread, the whole-path rows)
// and spend the budget on it. Rows not yet tested (too few seeds with
// spread) always go on.
func (r Row) futile(minEffect float64, reach int) bool {
	m := math.Abs(r.baseMean())
	if r.exact || r.Untested() || r.Seeds < 2 || r.level == 0 || m == 0 || r.w.SE == 0 {
		return false
	}
	if reach <= r.Seeds {
		return true
	}
	k := float64(reach) / float64(r.Seeds)
	se, df := r.w.SE/math.Sqrt(k), (r.w.DF+2)*k-2
	if detectable90(se, df, r.level)/m*100 <= r.floorPct(minEffect) {
		return false
	}
	// Could the change it shows now, one standard error larger, pass
	// the test at reach seeds? Then it may be a change: go on.
	crit := stats.TQuantile(1-r.level/2, df) * se
	return math.Abs(r.w.Diff)+r.w.SE < crit
}

// Untested reports whether r is a deterministic "no change" with seed
// spread and fewer seeds than MinSpreadSeeds: it could not have been
// called a change below grossChangePct, so the reports state no bound
// for it.
func (r Row) Untested() bool {
	return r.Verdict == NoChange && !r.exact && r.w.SE > 0 && r.Seeds < MinSpreadSeeds
}
