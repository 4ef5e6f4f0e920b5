package job

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/suite"
)

// spreadSeeds are the guest seeds the tree's kernel is measured with to
// learn how much each program moves with the guest's randomness alone.
// Seed 1 is every other boot's seed, so its run doubles as prefix 0.
var spreadSeeds = []uint64{1, 2, 3}

// progCosts is each valid variant's per-program cost, keyed variant/prog,
// plus the variant total keyed variant.
func progCosts(vs []suite.VariantResult) map[string]float64 {
	m := map[string]float64{}
	for _, v := range vs {
		if v.Skipped != "" || !v.Valid {
			continue
		}
		costs, _ := results.PerPacket(results.ProgStatsOf(v.Programs))
		for _, c := range costs {
			m[v.Variant+"/"+c.Name] = c.NsPerPkt
		}
	}
	return m
}

func deltas(before, after map[string]float64, against int) []results.ProgDelta {
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

// SeedSpread is each program's spread over runs of one kernel under
// different guest seeds: (max − min) / median × 100, 0 when the median is
// 0. Under icount a run repeats exactly for a given seed, but another seed
// (or any change to the kernel's code, which perturbs the guest the same
// way) moves a map-writing program by up to a few percent: a move smaller
// than that cannot be pinned on a patch.
func SeedSpread(runs []map[string]float64) map[string]float64 {
	vals := map[string][]float64{}
	for _, r := range runs {
		for k, v := range r {
			vals[k] = append(vals[k], v)
		}
	}
	out := map[string]float64{}
	for k, vs := range vals {
		sort.Float64s(vs)
		med := vs[len(vs)/2]
		if len(vs)%2 == 0 {
			med = (vs[len(vs)/2-1] + vs[len(vs)/2]) / 2
		}
		if med != 0 {
			out[k] = (vs[len(vs)-1] - vs[0]) / math.Abs(med) * 100
		}
	}
	return out
}

// spreadLine is the spreads for the log, by key.
func spreadLine(spread map[string]float64) string {
	keys := make([]string, 0, len(spread))
	for k := range spread {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %.2f %%", k, spread[k])
	}
	return strings.Join(parts, ", ")
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
// results.ResolutionNs, the least a change to the code a packet runs adds
// (one instruction under icount; below any KVM noise anyway).
func movedBy(a, b, thrPct float64) bool {
	if math.Abs(b-a) < results.ResolutionNs {
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

// seriesSeeds are the guest seeds every measured prefix of a
// deterministic series is booted with: each program's step is then a
// test over per-seed values (results.LocateSeries). Six, as a code change
// moves a write program like a fresh seed draw (σ ~0.8 %): a 4 % step of
// such a program is found in ~95 % of simulated series at 6 seeds, 7 %
// at 3 (TestLocateSeriesThroughTheTest).
const seriesSeeds = 6

// locateSeeded boots every measured prefix with seeds 1..seriesSeeds
// (seed 1 through measure, whose runs are shared with the rest of the
// series report; prefix 0's seeds 2 and 3 from runs) and locates each
// program's changes through the test.
func locateSeeded(prefixes []int, runs []map[string]float64, measure func(k int) (map[string]float64, error),
	bench func(k int, seed uint64) (map[string]float64, error), minPct float64) ([]results.Located, int, error) {
	vals := map[int]map[string][]float64{}
	for _, k := range prefixes {
		vals[k] = map[string][]float64{}
		for seed := uint64(1); seed <= seriesSeeds; seed++ {
			var m map[string]float64
			var err error
			switch {
			case k == 0 && int(seed) <= len(runs):
				m = runs[seed-1]
			case seed == 1:
				m, err = measure(k)
			default:
				m, err = bench(k, seed)
			}
			if err != nil {
				return nil, 0, err
			}
			for key, v := range m {
				vals[k][key] = append(vals[k][key], v)
			}
		}
	}
	located, family := results.LocateSeries(prefixes, vals, minPct)
	return located, family, nil
}

// culpritsOf turns located changes into the report's culprits.
func culpritsOf(located []results.Located, n int, minPct float64, subject func(k int) string) []results.Culprit {
	var out []results.Culprit
	for _, l := range located {
		c := results.Culprit{Patch: l.Patch, Of: n, Subject: subject(l.Patch), Key: l.Key, Before: l.Before, After: l.After, Pct: l.Pct,
			Share: l.Share, Unit: "instruction-time", ThrPct: minPct, Lo: l.Lo, Hi: l.Hi, Seeds: l.SeedsA}
		if !l.Culprit {
			c.From = l.From + 1
		}
		out = append(out, c)
	}
	return out
}

// seededNote is a deterministic series' perf note: how its changes were
// tested, and that none was found when none was.
func seededNote(family, boots int, minPct float64, culprits int) string {
	s := fmt.Sprintf("every prefix measured over seeds 1–%d; each step and the whole series tested (Welch t over per-seed values, Holm over %d tests at %.0f %% family-wise, >= %.1f %% and %g instruction-time ns), %d bench boot(s)",
		seriesSeeds, family, results.DetAlpha*100, minPct, results.ResolutionNs, boots)
	if culprits == 0 {
		s = "no program changed at the family's level: " + s
	}
	return s
}
