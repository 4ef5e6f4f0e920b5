package verdict

import (
	"fmt"
	"math"
)

// regressionError is a decided slowdown of a variant total beyond the
// user's limit. The CLI maps it to kci test's exit code for a performance
// regression (job.ExitPerformance): results keeps no exit codes of its
// own.
type regressionError struct {
	Tree      string
	Variant   string
	ChangePct float64 // Row.changePct of the total
	// P is the total's Holm-adjusted p (Mann–Whitney U in noisy mode,
	// Welch's t over per-seed values in deterministic mode); NaN for a
	// row no test decided.
	P     float64
	Limit float64
	Label string // the tree's unit (TreeAB.Label)
}

// Error names the tree, the variant, its change, the p behind it and the
// limit.
func (e *regressionError) Error() string {
	how := "beyond the observed spread"
	if !math.IsNaN(e.P) {
		how = fmt.Sprintf("p=%.3f after Holm", e.P)
	}
	s := fmt.Sprintf("performance regression: %s %s is %+.1f%% slower (%s), limit %.1f%%", e.Tree, e.Variant, e.ChangePct, how, e.Limit)
	if e.Label != "" {
		s += " (" + e.Label + ")"
	}
	return s
}

// FailOnRegression returns a *regressionError for the worst variant total,
// over all trees, that the conclusion calls slower (decided, not below the
// smallest effect, not in numbers that are relative only) by more than pct
// percent; nil if there is none. It never disagrees with the conclusion.
func (a *Analysis) FailOnRegression(pct float64) error {
	var worst *regressionError
	for _, tr := range a.Trees {
		tree := tr.Tree
		for _, v := range perfRegressions(tr.Perf) {
			r := v.Total
			if r.changePct() <= pct {
				continue
			}
			if worst == nil || r.changePct() > worst.ChangePct {
				worst = &regressionError{Tree: tree, Variant: v.Variant, ChangePct: r.changePct(), P: r.PAdj, Limit: pct, Label: tr.Perf.Label}
			}
		}
	}
	if worst == nil {
		return nil
	}
	return worst
}

// decisive reports whether a tree's numbers can fail a patch: real time
// (KVM) or instruction time (deterministic); emulated wall-clock numbers
// are relative only.
func (ab TreeAB) decisive() bool { return !ab.Emulated || ab.Deterministic() }

// perfRegressions are the variants whose total is a decided slowdown:
// slower, not below the smallest effect, in decisive numbers.
func perfRegressions(ab TreeAB) []VariantAB {
	if !ab.decisive() {
		return nil
	}
	var out []VariantAB
	for _, v := range ab.Variants {
		if v.Total.Verdict == Slower && !v.Total.InNoise {
			out = append(out, v)
		}
	}
	return out
}
