package results

import (
	"fmt"
	"math"
	"sort"

	"golang.org/x/perf/benchmath"
)

// Verdict is the outcome of one base-vs-patched comparison, in benchstat's
// terms (lower ns/pkt is better).
type Verdict string

// Verdicts.
const (
	Faster        Verdict = "faster"
	Slower        Verdict = "slower"
	NoChange      Verdict = "no significant change"
	TooFew        Verdict = "too few samples"
	NotComparable Verdict = "not comparable" // one side has no samples at all
)

// Confidence is the level of the confidence intervals shown, as benchstat.
const Confidence = 0.95

// Dist summarises one kernel's samples of one metric (ns/pkt), with the
// statistics benchstat uses: the median and its confidence interval
// (benchmath.AssumeNothing).
type Dist struct {
	Values []float64 `json:"values"` // in repetition order
	N      int       `json:"n"`
	Median float64   `json:"median"`
	Lo     float64   `json:"lo"`
	Hi     float64   `json:"hi"`
	CI     string    `json:"ci"`     // ±x% of the median, "∞" with too few samples
	CV     float64   `json:"cv_pct"` // coefficient of variation, percent
}

// Row is one compared metric: a program's ns/pkt or a variant's total.
type Row struct {
	Name     string   `json:"name"` // program name, or "total"
	Base     Dist     `json:"base"`
	Patched  Dist     `json:"patched"`
	DeltaPct float64  `json:"delta_pct"` // median patched vs median base
	P        float64  `json:"p"`
	PAdj     float64  `json:"p_adj"` // Holm-adjusted over the tree's comparisons
	Verdict  Verdict  `json:"verdict"`
	InNoise  bool     `json:"in_noise"` // significant, yet smaller than the run-to-run variation
	Warnings []string `json:"warnings,omitempty"`
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
	Tree     string      `json:"tree"`
	Emulated bool        `json:"emulated"`
	Label    string      `json:"label,omitempty"` // EmulatedLabel when emulated
	Variants []VariantAB `json:"variants"`
	Excluded []Excluded  `json:"excluded,omitempty"`
}

// sample is one valid measurement of a variant in one boot.
type sample struct {
	rep   int
	costs []ProgCost
	total float64
}

// Compare computes base vs patched for one tree from every valid variant
// result of that tree's boots; each repetition is one sample. Invalid and
// skipped results and failed boots are listed, never averaged. Nothing is
// compared across trees.
func Compare(run *Run, tree string) TreeAB {
	ab := TreeAB{Tree: tree, Emulated: run.Emulated(tree)}
	if ab.Emulated {
		ab.Label = EmulatedLabel
	}
	var order []string
	samples := map[string]map[string][]sample{} // variant → role → samples
	boots := append([]Boot(nil), run.Boots...)
	sort.SliceStable(boots, func(i, j int) bool { return boots[i].Seq < boots[j].Seq })
	for _, b := range boots {
		if b.Tree != tree {
			continue
		}
		if b.Error != "" {
			kind := "boot-error"
			if b.ErrorKind == ErrorKindInfra {
				kind = "infra"
			}
			ab.Excluded = append(ab.Excluded, Excluded{Seq: b.Seq, Rep: b.Rep, Role: b.Role, Reason: b.Error, Kind: kind})
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
			costs, _ := PerPacket(v.Programs)
			samples[v.Variant][b.Role] = append(samples[v.Variant][b.Role], sample{rep: b.Rep, costs: costs, total: Total(costs)})
		}
	}
	for _, name := range order {
		base, patched := samples[name][RoleBase], samples[name][RolePatched]
		va := VariantAB{Variant: name}
		va.Total = CompareSamples(TotalRow, totals(base), totals(patched))
		for _, prog := range programNames(base, patched) {
			va.Programs = append(va.Programs, CompareSamples(prog, progValues(base, prog), progValues(patched, prog)))
		}
		ab.Variants = append(ab.Variants, va)
	}
	holm(&ab)
	return ab
}

// holm controls the family-wise error rate over every comparison of a
// tree (Holm–Bonferroni): with a dozen programs compared at alpha 0.05,
// one of them would otherwise come out "significant" by chance in about
// every second run, and a verdict kci prints must hold up in a cover
// letter. The raw p stays shown; PAdj decides the verdict.
func holm(ab *TreeAB) {
	var rows []*Row
	for i := range ab.Variants {
		v := &ab.Variants[i]
		for _, r := range append([]*Row{&v.Total}, ptrs(v.Programs)...) {
			if math.IsNaN(r.P) || r.Verdict == TooFew || r.Verdict == NotComparable ||
				(r.Base.Median == 0 && r.Patched.Median == 0) {
				continue
			}
			rows = append(rows, r)
		}
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].P < rows[j].P })
	m := len(rows)
	prev := 0.0
	for i, r := range rows {
		adj := math.Min(1, math.Max(prev, r.P*float64(m-i)))
		prev = adj
		r.PAdj = adj
		if (r.Verdict == Faster || r.Verdict == Slower) && adj > benchmath.DefaultThresholds.CompareAlpha {
			r.Warnings = append(r.Warnings, fmt.Sprintf("p=%.3f is not significant once corrected for %d comparisons (Holm: %.3f)", r.P, m, adj))
			r.Verdict, r.InNoise = NoChange, false
		}
	}
}

func ptrs(rs []Row) []*Row {
	out := make([]*Row, len(rs))
	for i := range rs {
		out[i] = &rs[i]
	}
	return out
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

// CompareSamples compares two samples of ns/pkt the way benchstat does:
// Mann-Whitney U for the difference, medians with confidence intervals, at
// alpha 0.05. A difference is only called when it is significant; when
// no difference could be significant at these sample sizes, the verdict
// says so instead of "no change".
func CompareSamples(name string, base, patched []float64) Row {
	row := Row{Name: name, Base: summarize(base), Patched: summarize(patched)}
	if len(base) == 0 || len(patched) == 0 {
		row.Verdict = NotComparable
		row.P = math.NaN()
		row.DeltaPct = math.NaN()
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
	switch {
	case cmp.P > cmp.Alpha && !detectable(len(base), len(patched)):
		row.Verdict = TooFew
	case cmp.P > cmp.Alpha || row.DeltaPct == 0 || math.IsNaN(row.DeltaPct):
		row.Verdict = NoChange
	case row.DeltaPct > 0:
		row.Verdict = Slower
	default:
		row.Verdict = Faster
	}
	if row.Verdict == Faster || row.Verdict == Slower {
		noise := math.Max(row.Base.CV, row.Patched.CV)
		row.InNoise = math.Abs(row.DeltaPct) < noise
	}
	return row
}

// detectable reports whether samples of these sizes can show a significant
// difference at all: benchmath itself compares two completely separated
// samples of the same sizes.
func detectable(n1, n2 int) bool {
	a := make([]float64, n1)
	b := make([]float64, n2)
	for i := range a {
		a[i] = float64(i)
	}
	for i := range b {
		b[i] = float64(n1 + i)
	}
	th := &benchmath.DefaultThresholds
	cmp := benchmath.AssumeNothing.Compare(benchmath.NewSample(a, th), benchmath.NewSample(b, th))
	return cmp.P <= cmp.Alpha
}

func deltaPct(base, patched float64) float64 {
	switch {
	case base == patched:
		return 0
	case base == 0:
		return math.NaN()
	}
	return (patched/base - 1) * 100
}

func summarize(xs []float64) Dist {
	d := Dist{Values: append([]float64(nil), xs...), N: len(xs)}
	if len(xs) == 0 {
		d.Median, d.Lo, d.Hi, d.CV = math.NaN(), math.NaN(), math.NaN(), math.NaN()
		return d
	}
	s := benchmath.NewSample(append([]float64(nil), xs...), &benchmath.DefaultThresholds)
	sum := benchmath.AssumeNothing.Summary(s, Confidence)
	d.Median, d.Lo, d.Hi = sum.Center, sum.Lo, sum.Hi
	d.CI = "±" + sum.PctRangeString()
	if d.CI == "±∞" {
		d.CI = "∞"
	}
	d.CV = cv(xs)
	return d
}

// cv is the sample standard deviation over the mean, in percent.
func cv(xs []float64) float64 {
	if len(xs) < 2 {
		return 0
	}
	mean := 0.0
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	if mean == 0 {
		return 0
	}
	ss := 0.0
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return math.Sqrt(ss/float64(len(xs)-1)) / math.Abs(mean) * 100
}

// RegressionError is a significant slowdown beyond the user's limit. Its
// exit code is distinct from infrastructure failures.
type RegressionError struct {
	Tree     string
	Variant  string
	DeltaPct float64
	P        float64
	Limit    float64
	Emulated bool
}

// ExitRegression is the process exit code for a performance regression.
const ExitRegression = 3

func (e *RegressionError) Error() string {
	s := fmt.Sprintf("performance regression: %s %s is %+.1f%% slower (p=%.3f), limit %.1f%%", e.Tree, e.Variant, e.DeltaPct, e.P, e.Limit)
	if e.Emulated {
		s += " (" + EmulatedLabel + ")"
	}
	return s
}

// ExitCode is the process exit code for this error.
func (e *RegressionError) ExitCode() int { return ExitRegression }

// FailOnRegression returns a *RegressionError for the worst variant total,
// over all trees, that is significantly slower by more than pct percent;
// nil if there is none.
func FailOnRegression(run *Run, pct float64) error {
	var worst *RegressionError
	for _, tree := range run.TreeNames() {
		ab := Compare(run, tree)
		for _, v := range ab.Variants {
			r := v.Total
			if r.Verdict != Slower || r.DeltaPct <= pct {
				continue
			}
			if worst == nil || r.DeltaPct > worst.DeltaPct {
				worst = &RegressionError{Tree: tree, Variant: v.Variant, DeltaPct: r.DeltaPct, P: r.P, Limit: pct, Emulated: ab.Emulated}
			}
		}
	}
	if worst == nil {
		return nil
	}
	return worst
}
