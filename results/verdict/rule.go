package verdict

import (
	"math"

	"github.com/kci-dev/kci/results"
)

// rule is how a tree's rows are compared and decided, one value per clock
// mode, as benchmath has one Assumption per model of the data (the
// statistics themselves are internal/stats):
//
//   - noisyRule (KVM, --clock host): each boot is a sample; medians,
//     Mann–Whitney U with Holm over the variant totals (and over a
//     variant's programs when its total moved), the Hodges–Lehmann shift.
//   - seededRule (icount): each guest seed is a value; per-seed means,
//     Welch's t with Holm over every row of the run, and the change a
//     "no change" would have shown with 90 % power.
type rule interface {
	// compare computes a row's statistics from each side's values and
	// guest seeds, without deciding it.
	compare(name string, base, patched []float64, bseeds, pseeds []uint64) Row
	// decide gives the rows of trees their verdicts: every tree of the
	// run under this rule, as a family may span them.
	decide(run *results.Run, trees []*TreeAB)
	// wouldShow is the change in percent a "no change" row would have
	// shown.
	wouldShow(ab TreeAB, r Row) float64
	// couldHide reports whether a "no change" row (its change e) would
	// not have shown a change of the smallest effect.
	couldHide(ab TreeAB, r Row, e Change) bool
}

type (
	noisyRule  struct{}
	seededRule struct{}
)

// rule is the tree's rule: seeded under icount, noisy otherwise.
func (ab TreeAB) rule() rule {
	if ab.Deterministic() {
		return seededRule{}
	}
	return noisyRule{}
}

func (noisyRule) compare(name string, base, patched []float64, _, _ []uint64) Row {
	return pairStats(name, base, patched)
}

// decide: each tree is a family of its own (decideNoisy).
func (noisyRule) decide(_ *results.Run, trees []*TreeAB) {
	for _, ab := range trees {
		decideNoisy(ab)
	}
}

// wouldShow: the farther end of the shift's interval, at least the
// smallest effect; 0 when the interval is unbounded.
func (noisyRule) wouldShow(ab TreeAB, r Row) float64 {
	if math.IsInf(r.Shift.Lo, 0) || math.IsInf(r.Shift.Hi, 0) || math.IsNaN(r.Shift.Est) {
		return 0
	}
	return math.Max(ab.MinEffectPct, math.Max(-r.Shift.Lo, r.Shift.Hi))
}

func (noisyRule) couldHide(ab TreeAB, _ Row, e Change) bool {
	return e.WouldShowPct > ab.MinEffectPct+1e-9
}

func (seededRule) compare(name string, base, patched []float64, bseeds, pseeds []uint64) Row {
	return compareDet(name, base, patched, bseeds, pseeds)
}

// decide: a total whose programs are all exact is made exact
// (exactTotal), then every row of every tree is one family
// (decideDeterministic).
func (seededRule) decide(run *results.Run, trees []*TreeAB) {
	for _, ab := range trees {
		for i := range ab.Variants {
			exactTotal(&ab.Variants[i])
		}
	}
	decideDeterministic(run, trees)
}

// wouldShow: the change the row would have caught with 90 % power
// (Row.Detectable).
func (seededRule) wouldShow(_ TreeAB, r Row) float64 { return r.Detectable }

func (seededRule) couldHide(ab TreeAB, r Row, _ Change) bool {
	return r.undecided(ab.MinEffectPct)
}
