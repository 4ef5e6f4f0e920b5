package verdict

import (
	"sort"

	"github.com/kci-dev/kci/results"
)

// The adaptive-seed rule's planning, shared by kci test's boot loop and
// the simulation that checks the rule's false alarms and power.

// DefaultMaxBoots is kci test's default --max-boots under icount: every
// boot of a run, first look included. A warm stock run of three variants
// boots in ~25 s under icount, two side by side on 2 cores: 20 boots are
// ~4 min of booting, ~5 min with the patched kernel's incremental build.
const DefaultMaxBoots = 20

// LookPlan is one tree's share of the next look: the variants with
// undecided rows, booted on both kernels from seed From to To (the
// repetitions of the run's seed sequence).
type LookPlan struct {
	Tree     string
	Variants []string
	From, To int
}

// needMore lists, per deterministic tree, the variants with undecided
// rows that more seeds can still decide: those the adaptive rule gives
// more seeds. A tree can reach its current seeds plus half of bootsLeft,
// at most the last look's; futile says rows were left undecided only
// because they cannot reach their floor so (Row.futile).
func needMore(run *results.Run, bootsLeft int) (need map[string][]string, futile bool) {
	need = map[string][]string{}
	names := run.TreeNames()
	perf := compareTrees(run, names)
	for _, t := range names {
		if run.ClockMode(t) != results.ClockICount {
			continue
		}
		reach := min(LookSeeds[len(LookSeeds)-1], reps(run, t)+max(bootsLeft, 0)/2)
		ab := perf[t]
		var vs []string
		for _, v := range ab.Variants {
			for _, r := range append([]Row{v.Total}, v.Programs...) {
				if !r.undecided(ab.MinEffectPct) {
					continue
				}
				if r.futile(ab.MinEffectPct, reach) {
					futile = true
					continue
				}
				vs = append(vs, v.Variant)
				break
			}
		}
		if len(vs) > 0 {
			need[t] = WithBaselineOf(ab, vs)
		}
	}
	return need, futile
}

// PlanLook plans look number look (from 2) of a run: each tree with
// undecided variants goes from its current seeds to LookSeeds[look-1],
// both kernels, as far as bootsLeft allows. Nothing to plan returns the
// reason to stop (StopDecided, StopFutile, StopLooks, StopBudget).
func PlanLook(run *results.Run, look, bootsLeft int) ([]LookPlan, string) {
	need, futile := needMore(run, bootsLeft)
	switch {
	case len(need) == 0 && futile:
		return nil, results.StopFutile
	case len(need) == 0:
		return nil, results.StopDecided
	}
	if look > len(LookSeeds) {
		return nil, results.StopLooks
	}
	trees := make([]string, 0, len(need))
	for t := range need {
		trees = append(trees, t)
	}
	sort.Strings(trees)
	add := 0
	for _, t := range trees {
		add = max(add, LookSeeds[look-1]-reps(run, t))
	}
	// Each added seed boots both kernels of every tree that needs it.
	add = min(add, bootsLeft/(2*len(trees)))
	if add <= 0 {
		return nil, results.StopBudget
	}
	var out []LookPlan
	for _, t := range trees {
		n := reps(run, t)
		out = append(out, LookPlan{Tree: t, Variants: need[t], From: n + 1, To: n + add})
	}
	return out, ""
}

// reps is the highest repetition a tree's boots reached.
func reps(run *results.Run, tree string) int {
	n := 0
	for _, b := range run.Boots {
		if b.Tree == tree {
			n = max(n, b.Rep)
		}
	}
	return n
}
