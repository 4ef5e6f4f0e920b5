package verdict

import (
	"fmt"
	"math"
	"sort"

	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/wire"

	"github.com/kci-dev/kci/internal/failure"
	"github.com/kci-dev/kci/internal/stats"
	"golang.org/x/perf/benchmath"
)

// Verdict is the decision on one compared row, base against patched, in
// benchstat's terms (lower ns/pkt is better). It is the only thing the
// package calls a verdict.
type Verdict string

// moved reports whether the verdict is a change: slower or faster.
func (v Verdict) moved() bool { return v == Slower || v == Faster }

// The verdicts a row can have.
const (
	Faster   Verdict = "faster"
	Slower   Verdict = "slower"
	NoChange Verdict = "no significant change"
	// TooFew: these boots cannot decide (Row.Need says how many would).
	TooFew        Verdict = "cannot decide"
	NotComparable Verdict = "not comparable" // one side has no samples at all
)

// confidence is the level of the confidence intervals shown, as benchstat.
const confidence = 0.95

// Notes on rows.
const (
	// NoteNotExamined: a program row of a variant whose total did not
	// move; shown for description, never decided.
	NoteNotExamined = "not examined"
	// noteSecondary: a program row of a variant whose total moved,
	// decided with Holm over that variant's programs.
	noteSecondary = "secondary"
	// noteWithinSpread: deterministic mode, a difference beyond both
	// floors (the smallest effect, one instruction) that the test did not
	// call a change: the seed spread is too wide for it, or a row with
	// spread has too few seeds to be tested.
	noteWithinSpread = "within observed spread"
	// NoteBelowResolution: deterministic mode, a difference beyond the
	// smallest effect in percent but smaller than one instruction per
	// packet (ResolutionNs).
	NoteBelowResolution = "below one instruction/pkt"
)

// Dist summarises one kernel's samples of one metric (ns/pkt), with the
// statistics benchstat uses: the median and its confidence interval
// (benchmath.AssumeNothing), plus the observed range.
type Dist struct {
	Values []float64 `json:"values"` // in repetition order
	N      int       `json:"n"`
	Median float64   `json:"median"`
	Lo     float64   `json:"lo"`
	Hi     float64   `json:"hi"`
	CI     string    `json:"ci"`     // ±x% of the median, "∞" with too few samples
	CV     float64   `json:"cv_pct"` // coefficient of variation, percent
	Min    float64   `json:"min"`
	Max    float64   `json:"max"`
	// Spread is (max − min) / 2 / mean, percent: the observed
	// boot-to-boot range, as the user's table shows it.
	Spread float64 `json:"spread_pct"`
}

// Row is one compared metric: a program's ns/pkt or a variant's total.
type Row struct {
	Name    string `json:"name"` // program name, or "total"
	Base    Dist   `json:"base"`
	Patched Dist   `json:"patched"`
	// DeltaPct is median patched vs median base in percent of base
	// (noisy mode); the difference of per-seed means, which the test is
	// about, in percent of the base's (deterministic mode; of medians
	// when a side has fewer than two seeds).
	DeltaPct float64 `json:"delta_pct"`
	// Shift is patched vs base in percent with its 95 % interval: the
	// Hodges–Lehmann estimate and its distribution-free interval in noisy
	// mode; DeltaPct with Welch's interval over per-seed values in
	// deterministic mode (NaN with fewer than two seeds a side).
	Shift Shift `json:"shift"`
	// Adjusted (noisy mode, a row of a family of m called slower or
	// faster) is the same estimate's interval at 1 − 0.05/m, the level
	// Holm's first step tests at: "below the smallest effect" is judged on
	// it, as the 95 % interval would claim more than the family's test
	// does.
	Adjusted *Shift  `json:"shift_adjusted,omitempty"`
	AdjConf  float64 `json:"shift_adjusted_conf,omitempty"`
	P        float64 `json:"p"`     // Mann–Whitney U (noisy); Welch t over per-seed values (deterministic)
	PAdj     float64 `json:"p_adj"` // Holm-adjusted within the row's family
	Verdict  Verdict `json:"verdict"`
	// InNoise (noisy mode): significant, yet the whole interval of the
	// change at the family's level (Adjusted) lies within ± the smallest
	// effect of interest.
	InNoise bool `json:"in_noise"`
	Need    int  `json:"boots_needed,omitempty"` // with TooFew: boots per kernel that could decide
	// Deterministic mode: Seeds is the smaller side's number of distinct
	// guest seeds the row was tested over; Detectable, for a "no change",
	// is the change in percent of the base mean it would have shown with
	// 90 % power at the level Holm's first step tests at, given the
	// observed seed spread and seeds (never below the smallest effect or
	// one instruction).
	Seeds      int      `json:"seeds,omitempty"`
	Detectable float64  `json:"detectable_pct_90,omitempty"`
	Note       string   `json:"note,omitempty"`
	Warnings   []string `json:"warnings,omitempty"`

	w              stats.Welch // deterministic mode's test
	exact          bool        // deterministic: seeds agree within less than an instruction
	seedsB, seedsP int
	level          float64 // deterministic: the level its 90 % bound is at
	// Change is the row's change as the reports show it (RowChange),
	// set by AnalyzeRun.
	Change *Change `json:"effect,omitempty"`
}

// backing is what stands behind a change, for lists of changes: its
// interval (at the family's level in noisy mode, 95 % in deterministic
// mode) and the boots, "[+0.5%, +1.3%], 10+10 boots".
func (r Row) backing() string {
	iv := r.Shift
	if r.Adjusted != nil {
		iv = *r.Adjusted
	}
	return fmt.Sprintf("[%+.1f%%, %+.1f%%], %d+%d boots", iv.Lo, iv.Hi, r.Base.N, r.Patched.N)
}

// changePct is the row's change in percent that its interval (Shift) is
// about: the Hodges–Lehmann estimate in noisy mode, the difference of
// per-seed means in deterministic mode; DeltaPct when there is none. The
// conclusion and --fail-on-regression read this one.
func (r Row) changePct() float64 {
	if !math.IsNaN(r.Shift.Est) && !math.IsInf(r.Shift.Est, 0) {
		return r.Shift.Est
	}
	return r.DeltaPct
}

// TotalRow is the Name of a variant's total row.
const TotalRow = "total"

// VariantAB is one benchmark variant of one tree, base vs patched.
type VariantAB struct {
	Variant  string `json:"variant"`
	Total    Row    `json:"total"`
	Programs []Row  `json:"programs"`
}

// Excluded is a measurement that is not in the statistics, and why.
type Excluded struct {
	Seq     int    `json:"seq"`
	Rep     int    `json:"rep"`
	Role    string `json:"role"`
	Variant string `json:"variant,omitempty"` // "" = the whole boot
	Reason  string `json:"reason"`
	Kind    string `json:"kind"` // invalid | skipped | boot-error | infra
}

// TreeAB is the performance comparison of one tree.
type TreeAB struct {
	Tree     string `json:"tree"`
	Emulated bool   `json:"emulated"`
	// Interleaved: a guest of several vCPUs measured it, and only the
	// plugin's rows are decided (InterleavedNote).
	Interleaved bool `json:"interleaved,omitempty"`
	// Clock is the tree's clock mode (ClockKVM, ClockHost, ClockICount);
	// ClockICount means deterministic mode.
	Clock string `json:"clock,omitempty"`
	// Label is InstructionTimeLabel in deterministic mode, EmulatedLabel
	// for other emulated numbers, WallTimeLabel for real time.
	Label        string  `json:"label,omitempty"`
	MinEffectPct float64 `json:"min_effect_pct"`
	// Family is the number of rows Holm corrects over: the tree's variant
	// totals in noisy mode; every testable row of every deterministic
	// tree of the run in deterministic mode, at Alpha split over Looks.
	Family int     `json:"family,omitempty"`
	Alpha  float64 `json:"family_alpha,omitempty"`
	Looks  int     `json:"looks,omitempty"`
	// DeterminismCheck: deterministic mode with one seed per kernel
	// (--seed): boots can only be checked to agree, nothing is compared.
	DeterminismCheck bool                `json:"determinism_check,omitempty"`
	Sequential       *results.Sequential `json:"sequential,omitempty"`
	Variants         []VariantAB         `json:"variants"`
	Excluded         []Excluded          `json:"excluded,omitempty"`
	// Warnings flag boots whose guest time scale differs from their
	// siblings' (tsc_khz, clocksource).
	Warnings []string `json:"warnings,omitempty"`
}

// Deterministic reports whether the tree was measured in deterministic
// mode (icount): per-seed values, Welch's t with Holm over every row of
// the run, and floors of the smallest effect and one instruction.
func (ab TreeAB) Deterministic() bool { return ab.Clock == results.ClockICount }

// Unit names what the tree's numbers count.
func (ab TreeAB) Unit() string {
	if ab.Deterministic() {
		return results.InstructionTimeLabel
	}
	return "ns/pkt"
}

// sample is one valid measurement of a variant in one boot.
type sample struct {
	rep   int
	seed  uint64 // the guest seed; a unique key when unrecorded
	costs []results.ProgCost
	total float64
}

// compareTrees computes base vs patched for every tree of the run (names,
// the run's order) from every valid variant result of each tree's boots;
// each repetition is one sample. Invalid and skipped results and failed
// boots are listed, never averaged: a failed boot is out of the
// statistics entirely. Nothing is compared across trees: each tree's
// samples are gathered once, and only the deterministic trees' Holm
// family spans them. Each tree's rule (rule.go) compares and decides its
// rows: seededRule under icount, noisyRule otherwise.
func compareTrees(run *results.Run, names []string) map[string]TreeAB {
	abs := make([]TreeAB, len(names))
	for i, n := range names {
		abs[i] = compareTree(run, n)
	}
	for _, rl := range []rule{noisyRule{}, seededRule{}} {
		var trees []*TreeAB
		for i := range abs {
			if abs[i].rule() == rl {
				trees = append(trees, &abs[i])
			}
		}
		rl.decide(run, trees)
	}
	out := make(map[string]TreeAB, len(names))
	for i, n := range names {
		abs[i].Warnings = scaleWarnings(run, n)
		out[n] = abs[i]
	}
	return out
}

// compareTree gathers a tree's samples and computes each row's statistics
// without deciding them.
func compareTree(run *results.Run, tree string) TreeAB {
	ab := TreeAB{Tree: tree, Emulated: run.Emulated(tree), Clock: run.ClockMode(tree), MinEffectPct: run.MinEffect()}
	switch {
	case ab.Deterministic():
		ab.Label = results.InstructionTimeLabel
	case ab.Emulated:
		ab.Label = results.EmulatedLabel
	default:
		ab.Label = results.WallTimeLabel
	}
	var order []string
	samples := map[string]map[string][]sample{} // variant → role → samples
	for _, b := range SortedBoots(run) {
		if b.Tree != tree {
			continue
		}
		if b.Error != "" {
			kind := "boot-error"
			switch b.ErrorKind {
			case failure.Infra:
				kind = "infra"
			case failure.Cancelled, failure.Interrupted:
				kind = b.ErrorKind
			}
			ab.Excluded = append(ab.Excluded, Excluded{Seq: b.Seq, Rep: b.Rep, Role: b.Role, Reason: b.Error, Kind: kind})
			continue // nothing of a failed boot enters the statistics
		}
		for _, v := range b.Variants {
			switch {
			case v.Skipped != "":
				ab.Excluded = append(ab.Excluded, Excluded{Seq: b.Seq, Rep: b.Rep, Role: b.Role, Variant: v.Variant, Reason: v.Skipped, Kind: "skipped"})
				continue
			case !v.Valid:
				reason := v.Invalid
				if reason == "" {
					reason = "not validated"
				}
				ab.Excluded = append(ab.Excluded, Excluded{Seq: b.Seq, Rep: b.Rep, Role: b.Role, Variant: v.Variant, Reason: reason, Kind: "invalid"})
				continue
			}
			if samples[v.Variant] == nil {
				samples[v.Variant] = map[string][]sample{}
				order = append(order, v.Variant)
			}
			costs, _ := results.PerPacket(v.Programs)
			if Interleaved(v) {
				costs, ab.Interleaved = nil, true
			}
			seed := bootSeed(b)
			// The cost rows (cost.go, callrows.go) go beside the
			// programs, not into the total.
			s := sample{rep: b.Rep, seed: seed, costs: costs, total: results.Total(costs)}
			s.costs = append(append(s.costs, PathRows(b, v)...), CallRows(v)...)
			samples[v.Variant][b.Role] = append(samples[v.Variant][b.Role], s)
		}
	}
	for _, name := range order {
		alignPathRows(samples[name])
		base, patched := samples[name][results.RoleBase], samples[name][results.RolePatched]
		va := VariantAB{Variant: name}
		bseeds, pseeds := seedsOf(base), seedsOf(patched)
		spread := wire.SeedSpread(name)
		row := func(n string, b, p []float64) Row {
			r := ab.rule().compare(n, b, p, bseeds, pseeds)
			if spread {
				r.notExact()
			}
			return r
		}
		va.Total = row(TotalRow, totals(base), totals(patched))
		for _, prog := range programNames(base, patched) {
			va.Programs = append(va.Programs, row(prog, progValues(base, prog), progValues(patched, prog)))
		}
		ab.Variants = append(ab.Variants, va)
	}
	return ab
}

// unrecordedSeed marks the key of a boot whose guest seed was not
// recorded: every such boot is its own draw.
const unrecordedSeed = 1 << 63

// bootSeed is a boot's guest seed, or a key of its own when unrecorded.
func bootSeed(b results.Boot) uint64 {
	if b.Seed == 0 {
		return unrecordedSeed | uint64(b.Seq)
	}
	return b.Seed
}

func seedsOf(ss []sample) []uint64 {
	out := make([]uint64, len(ss))
	for i, s := range ss {
		out[i] = s.seed
	}
	return out
}

// SortedBoots is the run's boots in their order within the run (Seq).
func SortedBoots(run *results.Run) []results.Boot {
	boots := append([]results.Boot(nil), run.Boots...)
	sort.SliceStable(boots, func(i, j int) bool { return boots[i].Seq < boots[j].Seq })
	return boots
}

// testable reports whether a row takes part in a family: both sides have
// samples and something ran.
func testable(r *Row) bool {
	return r.Verdict != NotComparable && !math.IsNaN(r.P) && !(r.Base.Median == 0 && r.Patched.Median == 0)
}

// decideNoisy takes the tree's decisions in noisy mode: Holm over the
// variant totals, then, within each variant whose total moved, Holm over
// its programs; the other programs are described, not decided.
func decideNoisy(ab *TreeAB) {
	var fam []*Row
	for i := range ab.Variants {
		if r := &ab.Variants[i].Total; testable(r) {
			fam = append(fam, r)
		}
	}
	ab.Family = len(fam)
	can := decidable(fam)
	holm(fam)
	for i := range ab.Variants {
		r := &ab.Variants[i].Total
		decideRow(r, len(fam), ab.MinEffectPct, can[r])
	}
	for i := range ab.Variants {
		v := &ab.Variants[i]
		if !v.Total.Verdict.moved() {
			for j := range v.Programs {
				p := &v.Programs[j]
				p.PAdj = math.NaN()
				if p.Verdict == NotComparable {
					continue
				}
				p.Verdict, p.Note = NoChange, NoteNotExamined
				if v.Total.Verdict == TooFew {
					p.Verdict, p.Need = TooFew, v.Total.Need
				}
			}
			continue
		}
		var progs []*Row
		for j := range v.Programs {
			if p := &v.Programs[j]; testable(p) {
				progs = append(progs, p)
			}
		}
		canP := decidable(progs)
		holm(progs)
		for j := range v.Programs {
			p := &v.Programs[j]
			decideRow(p, len(progs), ab.MinEffectPct, canP[p])
			if p.Verdict != NotComparable {
				p.Note = noteSecondary
			}
		}
	}
}

// holm sets PAdj over one family (stats.Holm): with a dozen comparisons
// at alpha 0.05, one would otherwise come out "significant" by chance in
// about every second run, and a verdict kci prints must hold up in a
// cover letter. The raw p stays shown; PAdj decides the verdict.
func holm(rows []*Row) {
	ps := make([]float64, len(rows))
	for i, r := range rows {
		ps[i] = r.P
	}
	for i, adj := range stats.Holm(ps) {
		rows[i].PAdj = adj
	}
}

// decideRow gives a row of a Holm family of m its verdict: cannot decide
// when its sample sizes cannot reach significance in the family (can,
// see decidable); else slower or faster when the adjusted p is
// significant (InNoise when the whole family-adjusted interval lies
// within ± minEffect); else no change.
func decideRow(r *Row, m int, minEffect float64, can bool) {
	if r.Verdict == NotComparable {
		r.PAdj = math.NaN()
		return
	}
	if !testable(r) {
		r.Verdict, r.PAdj = NoChange, math.NaN()
		return
	}
	if !can {
		r.Verdict, r.Need = TooFew, max(bootsNeeded(m), r.Base.N+1, r.Patched.N+1)
		return
	}
	switch {
	case r.PAdj > alpha || r.Shift.Est == 0 || math.IsNaN(r.Shift.Est):
		r.Verdict = NoChange
		if r.P <= alpha {
			r.Warnings = append(r.Warnings, fmt.Sprintf("p=%.3f is not significant once corrected for %d comparisons (Holm: %.3f)", r.P, m, r.PAdj))
		}
	case r.Shift.Est > 0:
		r.Verdict = Slower
	default:
		r.Verdict = Faster
	}
	if r.Verdict.moved() {
		conf := 1 - alpha/float64(max(m, 1))
		adj := hodgesLehmann(r.Base.Values, r.Patched.Values, conf)
		r.Adjusted, r.AdjConf = &adj, conf
		r.InNoise = adj.within(minEffect)
	}
}

func totals(ss []sample) []float64 {
	out := make([]float64, len(ss))
	for i, s := range ss {
		out[i] = s.total
	}
	return out
}

func programNames(sets ...[]sample) []string {
	var names []string
	seen := map[string]bool{}
	for _, ss := range sets {
		for _, s := range ss {
			for _, c := range s.costs {
				if !seen[c.Name] {
					seen[c.Name] = true
					names = append(names, c.Name)
				}
			}
		}
	}
	return names
}

// progValues gives the program's ns/pkt per sample; a sample that does not
// list the program did not run it, which costs 0, as in the user's table.
func progValues(ss []sample, prog string) []float64 {
	out := make([]float64, len(ss))
	for i, s := range ss {
		for _, c := range s.costs {
			if c.Name == prog {
				out[i] += c.NsPerPkt
			}
		}
	}
	return out
}

// pairStats computes a noisy-mode row's statistics without deciding it:
// medians with CIs, Mann–Whitney U p (benchmath, as benchstat), the
// Hodges–Lehmann shift with its 95 % interval.
func pairStats(name string, base, patched []float64) Row {
	row := Row{Name: name, Base: summarize(base), Patched: summarize(patched), PAdj: math.NaN()}
	if len(base) == 0 || len(patched) == 0 {
		row.Verdict = NotComparable
		row.P = math.NaN()
		row.DeltaPct = math.NaN()
		row.Shift = Shift{math.NaN(), math.NaN(), math.NaN()}
		return row
	}
	th := &benchmath.DefaultThresholds
	bs := benchmath.NewSample(append([]float64(nil), base...), th)
	ps := benchmath.NewSample(append([]float64(nil), patched...), th)
	cmp := benchmath.AssumeNothing.Compare(bs, ps)
	row.P = cmp.P
	for _, w := range cmp.Warnings {
		row.Warnings = append(row.Warnings, w.Error())
	}
	row.DeltaPct = deltaPct(row.Base.Median, row.Patched.Median)
	row.Shift = hodgesLehmann(base, patched, confidence)
	return row
}

func deltaPct(base, patched float64) float64 {
	switch base {
	case patched:
		return 0
	case 0:
		return math.NaN()
	}
	return (patched/base - 1) * 100
}

func summarize(xs []float64) Dist {
	d := Dist{Values: append([]float64(nil), xs...), N: len(xs)}
	if len(xs) == 0 {
		d.Median, d.Lo, d.Hi, d.CV = math.NaN(), math.NaN(), math.NaN(), math.NaN()
		d.Min, d.Max, d.Spread = math.NaN(), math.NaN(), math.NaN()
		return d
	}
	s := benchmath.NewSample(append([]float64(nil), xs...), &benchmath.DefaultThresholds)
	sum := benchmath.AssumeNothing.Summary(s, confidence)
	d.Median, d.Lo, d.Hi = sum.Center, sum.Lo, sum.Hi
	d.CI = "±" + sum.PctRangeString()
	if d.CI == "±∞" {
		d.CI = "∞"
	}
	d.CV = stats.CV(xs)
	d.Min, d.Max = stats.MinMax(xs)
	if mean, _ := stats.MeanVar(xs); mean != 0 {
		d.Spread = stats.HalfRange(xs) / math.Abs(mean) * 100
	}
	return d
}
