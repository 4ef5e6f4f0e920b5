package verdict

import (
	"fmt"
	"math"
	"sort"

	"github.com/kci-dev/kci/internal/stats"
	"github.com/kci-dev/kci/results"
)

// The noisy series rule: a program moved at a patch when its cost moved
// by more than a threshold (the smallest effect, or its spread over seeds
// on the tree's kernel where that is larger), found by bisection over the
// prefixes (LocatePerf) or from every prefix (AdjacentSteps). Under icount
// a series is decided through the test instead (SeriesCulprits).

// SpreadSeeds are the logical seeds the tree's kernel is measured with
// to learn how much each program moves with the guest's randomness alone.
// Seed 1 is every other boot's seed, so its run doubles as prefix 0.
var SpreadSeeds = []int{1, 2, 3}

// NoisyCulprits decides a noisy series tree's culprits again from its
// record, as kci series decided them when it ran: each program's
// threshold from the tree kernel's boots at SpreadSeeds and
// t.MinEffectPct, then the steps the way t.Locate says, over the seed-1
// boots of the tree's kernel and every prefix that built. unit labels
// the culprits. A record that lacks a boot the rule reads is an error.
func NoisyCulprits(t *results.SeriesTree, unit string) ([]results.Culprit, error) {
	var runs []map[string]float64
	for _, rep := range SpreadSeeds {
		if m, ok := t.Costs(0, rep); ok {
			runs = append(runs, m)
		}
	}
	spread := SpreadOverSeeds(runs)
	thr := func(key string) float64 { return math.Max(t.MinEffectPct, spread[key]) }
	prefixes := []int{0}
	for _, p := range t.Patches {
		if p.Build == results.StepOK {
			prefixes = append(prefixes, p.Index)
		}
	}
	var steps []PerfStep
	var err error
	switch t.Locate {
	case results.LocateEach:
		steps = AdjacentSteps(prefixes, t.CostsAt(1), thr)
	case results.LocateBisect:
		steps, err = LocatePerf(prefixes, func(k int) (map[string]float64, error) {
			if m, ok := t.Costs(k, 1); ok {
				return m, nil
			}
			return nil, fmt.Errorf("tree %s: prefix %d has no seed-1 bench boot in the record", t.Tree, k)
		}, thr)
	default:
		return nil, fmt.Errorf("tree %s: located %q, not a noisy rule", t.Tree, t.Locate)
	}
	return StepCulprits(t, steps, unit), err
}

// StepCulprits are the noisy rule's steps as t's culprits.
func StepCulprits(t *results.SeriesTree, steps []PerfStep, unit string) []results.Culprit {
	subject, n := map[int]string{}, 0
	for _, p := range t.Patches {
		subject[p.Index], n = p.Subject, p.Of
	}
	var out []results.Culprit
	for _, s := range steps {
		out = append(out, results.Culprit{Patch: s.Patch, Of: n, Subject: subject[s.Patch],
			Key: s.Key, Before: s.Before, After: s.After, Pct: s.Pct, Share: s.Share, Unit: unit, ThrPct: s.ThrPct})
	}
	return out
}

// PrefixDeltas are a measured prefix's costs against the one before it
// (against: its index, 0 for the tree's kernel), by key.
func PrefixDeltas(before, after map[string]float64, against int) []results.ProgDelta {
	var out []results.ProgDelta
	for k, v := range after {
		d := results.ProgDelta{Key: k, Value: v, Against: against}
		if b, ok := before[k]; ok && b > 0 {
			d.Before, d.Pct = b, (v-b)/b*100
		}
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// SpreadOverSeeds is each program's spread over runs of one kernel under
// different guest seeds: (max − min) / median × 100, 0 when the median is
// 0. Under icount a run repeats exactly for a given seed, but another seed
// (or any change to the kernel's code, which perturbs the guest the same
// way) moves a map-writing program by up to a few percent: a move smaller
// than that cannot be pinned on a patch.
func SpreadOverSeeds(runs []map[string]float64) map[string]float64 {
	vals := map[string][]float64{}
	for _, r := range runs {
		for k, v := range r {
			vals[k] = append(vals[k], v)
		}
	}
	out := map[string]float64{}
	for k, vs := range vals {
		if med := stats.Median(vs); med != 0 {
			out[k] = stats.Range(vs) / math.Abs(med) * 100
		}
	}
	return out
}

// AdjacentSteps are the changes between consecutive measured prefixes
// (every prefix measured): a series that moves a program and moves it back
// shows both patches. A program moves when its change exceeds thr(key)
// percent. Share is against the whole series' change, 0 when the series
// as a whole does not move the program.
func AdjacentSteps(prefixes []int, m map[int]map[string]float64, thr func(key string) float64) []PerfStep {
	var steps []PerfStep
	first, last := m[prefixes[0]], m[prefixes[len(prefixes)-1]]
	for i := 1; i < len(prefixes); i++ {
		a, b := m[prefixes[i-1]], m[prefixes[i]]
		var keys []string
		for k := range b {
			if _, ok := a[k]; ok {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			if !movedBy(a[k], b[k], thr(k)) {
				continue
			}
			s := PerfStep{Patch: prefixes[i], Key: k, Before: a[k], After: b[k], ThrPct: thr(k)}
			if s.Before != 0 {
				s.Pct = (s.After - s.Before) / s.Before * 100
			}
			if total := last[k] - first[k]; total != 0 && movedBy(first[k], last[k], thr(k)) {
				s.Share = (s.After - s.Before) / total * 100
			}
			steps = append(steps, s)
		}
	}
	return steps
}

// movedBy: by more than thrPct percent and by at least
// ResolutionNs, the least a change to the code a packet runs adds
// (one instruction under icount; below any KVM noise anyway).
func movedBy(a, b, thrPct float64) bool {
	if math.Abs(b-a) < ResolutionNs {
		return false
	}
	if a == 0 {
		return true
	}
	return math.Abs(b-a)/math.Abs(a)*100 > thrPct
}

// PerfStep is one patch that moved one program's cost.
type PerfStep struct {
	Patch         int
	Key           string
	Before, After float64
	Pct           float64 // change at this patch, percent of Before
	Share         float64 // percent of the whole series' change of Key
	ThrPct        float64 // the threshold Key had to exceed, percent
}

// LocatePerf finds, for every program whose cost differs between the
// first and last prefix by more than thr(key) percent, the patches that
// moved it, by binary search: an interval whose ends agree (within
// thr(key) of the left end) holds no change; one of width 1 is a step.
// Several steps per program are found, each with its share. measure is
// called at most once per prefix (results are memoised) and only where
// needed: for a single culprit among N prefixes, about log2(N) calls
// beyond the two ends. prefixes lists the measurable prefixes in order
// (0 = the tree's kernel).
func LocatePerf(prefixes []int, measure func(k int) (map[string]float64, error), thr func(key string) float64) ([]PerfStep, error) {
	if len(prefixes) < 2 {
		return nil, nil
	}
	memo := map[int]map[string]float64{}
	get := func(i int) (map[string]float64, error) {
		k := prefixes[i]
		if m, ok := memo[k]; ok {
			return m, nil
		}
		m, err := measure(k)
		if err != nil {
			return nil, err
		}
		memo[k] = m
		return m, nil
	}
	first, err := get(0)
	if err != nil {
		return nil, err
	}
	last, err := get(len(prefixes) - 1)
	if err != nil {
		return nil, err
	}
	var keys []string
	for k, v := range last {
		if b, ok := first[k]; ok && movedBy(b, v, thr(k)) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var steps []PerfStep
	for _, key := range keys {
		total := last[key] - first[key]
		var walk func(lo, hi int) error
		walk = func(lo, hi int) error {
			ml, err := get(lo)
			if err != nil {
				return err
			}
			mh, err := get(hi)
			if err != nil {
				return err
			}
			if !movedBy(ml[key], mh[key], thr(key)) {
				return nil
			}
			if hi-lo == 1 {
				s := PerfStep{Patch: prefixes[hi], Key: key, Before: ml[key], After: mh[key], ThrPct: thr(key)}
				if s.Before != 0 {
					s.Pct = (s.After - s.Before) / s.Before * 100
				}
				if total != 0 {
					s.Share = (s.After - s.Before) / total * 100
				}
				steps = append(steps, s)
				return nil
			}
			mid := (lo + hi) / 2
			if err := walk(lo, mid); err != nil {
				return err
			}
			return walk(mid, hi)
		}
		if err := walk(0, len(prefixes)-1); err != nil {
			return steps, err
		}
	}
	sort.SliceStable(steps, func(i, j int) bool { return steps[i].Patch < steps[j].Patch })
	return steps, nil
}
