package verdict

import (
	"sort"
	"strings"

	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/wire"

	"github.com/kci-dev/kci/internal/stats"
)

// Series location through deterministic mode's test (docs/series.md):
// every measured prefix of a series is booted with the same guest seeds;
// each program's step between adjacent prefixes, and its change over the
// whole series, are Welch tests over the per-seed values with Holm over
// all of them at DetAlpha, with the same floors as kci test. A patch is
// named only when its own step passes; a change of the whole series that
// no step explains is named as spread over the narrowest run of patches
// whose ends still differ at that level. A program that is not there on
// the tree's kernel (gtp's programs need the series' own kfuncs) is
// located from the first prefix where it loads.

// Located is one program's change in a series: a culprit (From is the
// measured prefix before Patch) or a change spread over patches
// From+1..Patch.
type Located struct {
	Key            string
	From, Patch    int
	Culprit        bool
	Before, After  float64 // per-seed means
	Pct, Lo, Hi    float64 // change and its 95 % interval, percent
	Share          float64 // percent of the whole series' change of Key
	SeedsB, SeedsA int
}

// Seeded are one program's values at one prefix, each with the guest
// seed of the boot it came from (as bootSeed reads a record's).
type Seeded struct {
	Vals  []float64
	Seeds []uint64
}

func (s *Seeded) add(v float64, seed uint64) {
	s.Vals, s.Seeds = append(s.Vals, v), append(s.Seeds, seed)
}

// SeriesValues are the per-seed values of every measured prefix (in
// order, 0 = the tree's kernel) at logical seeds 1..reps, read from the
// tree's boot records (SeriesTree.Measurement) with each boot's own seed.
func SeriesValues(t *results.SeriesTree, prefixes []int, reps int) map[int]map[string]Seeded {
	vals := map[int]map[string]Seeded{}
	for _, k := range prefixes {
		vals[k] = map[string]Seeded{}
		for rep := 1; rep <= reps; rep++ {
			b, ok := t.Measurement(k, rep)
			if !ok {
				continue
			}
			for key, v := range results.ProgCosts(b.Variants) {
				s := vals[k][key]
				s.add(v, bootSeed(b.Boot))
				vals[k][key] = s
			}
		}
	}
	return vals
}

// LocateSeries locates the changes of every program over the measured
// prefixes (in order, 0 = the tree's kernel); vals[k][key] are prefix
// k's values with their seeds (SeriesValues). It returns the changes and
// the size of the family they were tested in.
func LocateSeries(prefixes []int, vals map[int]map[string]Seeded, minEffect float64) ([]Located, int) {
	type test struct {
		key      string
		from, to int // indexes into the key's prefixes
		overall  bool
		row      Row
	}
	var tests []*test
	ks := map[string][]int{} // key → the measured prefixes holding it
	for _, k := range prefixes {
		for key := range vals[k] {
			ks[key] = append(ks[key], k)
		}
	}
	keys := make([]string, 0, len(ks))
	for key := range ks {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	cmp := func(key string, a, b int) Row {
		va, vb := vals[a][key], vals[b][key]
		r := compareDet(key, va.Vals, vb.Vals, va.Seeds, vb.Seeds)
		if variant, _, _ := strings.Cut(key, "/"); wire.SeedSpread(variant) {
			r.notExact()
		}
		return r
	}
	for _, key := range keys {
		p := ks[key]
		for i := 1; i < len(p); i++ {
			tests = append(tests, &test{key: key, from: p[i-1], to: p[i], row: cmp(key, p[i-1], p[i])})
		}
		if len(p) > 2 {
			tests = append(tests, &test{key: key, from: p[0], to: p[len(p)-1], overall: true, row: cmp(key, p[0], p[len(p)-1])})
		}
	}
	var fam []*Row
	for _, t := range tests {
		if detTestable(&t.row) {
			fam = append(fam, &t.row)
		}
	}
	holm(fam)
	m := max(len(fam), 1)
	level := DetAlpha / float64(m)
	for _, t := range tests {
		decideDet(&t.row, minEffect, DetAlpha, level)
	}
	var out []Located
	culprit := map[string]bool{}
	for _, t := range tests {
		if !t.overall && t.row.Verdict.moved() {
			out = append(out, locatedOf(t.key, t.from, t.to, true, t.row))
			culprit[t.key] = true
		}
	}
	for _, t := range tests {
		if t.overall && !culprit[t.key] && t.row.Verdict.moved() {
			lo, hi, r := narrow(ks[t.key], func(a, b int) Row { return cmp(t.key, a, b) }, t.row, minEffect, level)
			out = append(out, locatedOf(t.key, lo, hi, false, r))
		}
	}
	for i := range out {
		p := ks[out[i].Key]
		first, _ := stats.MeanVar(vals[p[0]][out[i].Key].Vals)
		last, _ := stats.MeanVar(vals[p[len(p)-1]][out[i].Key].Vals)
		if total := last - first; total != 0 {
			out[i].Share = (out[i].After - out[i].Before) / total * 100
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Patch < out[j].Patch })
	return out, len(fam)
}

// narrow shrinks a change of the whole series (prefixes p, first to
// last) from either end while the window's ends still differ at the level
// a lone change must pass (raw p, floors): descriptive, the change itself
// was established by the whole series' test in the family. It returns the
// window's prefixes and the test of its ends.
func narrow(p []int, cmp func(a, b int) Row, whole Row, minEffect, level float64) (from, to int, r Row) {
	passes := func(a, b int) (Row, bool) {
		r := cmp(p[a], p[b])
		decideDetAt(&r, r.P, minEffect, level, level) // alone: its raw p
		return r, r.Verdict.moved()
	}
	lo, hi, best := 0, len(p)-1, whole
	for lo+1 < hi {
		r, ok := passes(lo+1, hi)
		if !ok {
			break
		}
		lo, best = lo+1, r
	}
	for lo+1 < hi {
		r, ok := passes(lo, hi-1)
		if !ok {
			break
		}
		hi, best = hi-1, r
	}
	return p[lo], p[hi], best
}

func locatedOf(key string, from, to int, culprit bool, r Row) Located {
	return Located{Key: key, From: from, Patch: to, Culprit: culprit, Before: r.w.MeanA, After: r.w.MeanA + r.w.Diff,
		Pct: r.DeltaPct, Lo: r.Shift.Lo, Hi: r.Shift.Hi, SeedsB: r.seedsB, SeedsA: r.seedsP}
}
