package verdict

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"github.com/kci-dev/kci/results"
)

// simSeries draws a series' per-seed values: every prefix is another
// build, so every seed's cost is a fresh draw (σ relative), times the
// steps' shifts so far. Programs absent before from[key] are not there.
func simSeries(rng *rand.Rand, n, seeds int, progs map[string][2]float64, step map[int]map[string]float64, from map[string]int) ([]int, map[int]map[string][]float64) {
	var prefixes []int
	vals := map[int]map[string][]float64{}
	level := map[string]float64{}
	for k := 0; k <= n; k++ {
		prefixes = append(prefixes, k)
		vals[k] = map[string][]float64{}
		for _, key := range sortedKeys(progs) {
			ms := progs[key]
			if k < from[key] {
				continue
			}
			if level[key] == 0 {
				level[key] = 1
			}
			level[key] *= 1 + step[k][key]
			for range seeds {
				x := ms[0] * level[key] * (1 + ms[1]*rng.NormFloat64())
				if ms[1] == 0 && rng.Float64() < 0.1 {
					x += 0.45 * rng.Float64()
				}
				vals[k][key] = append(vals[k][key], x)
			}
		}
	}
	return prefixes, vals
}

var seriesProgs = map[string][2]float64{
	"hash/hash_write": {500, 0.008}, "hash/hash_read": {210, 0}, "lru/lru_write": {520, 0.025},
	"gtp/gtp_write": {540, 0.008}, "cnt/cnt_egress": {73, 0},
}

// TestLocateSeriesThroughTheTest: a 3-patch series whose patch 2 adds 4 %
// to hash_write names patch 2 and never 1 or 3; a null series names
// nothing in >= 99 % of runs; a +1.5 % per patch drift that no single
// step explains is named as spread over patches, never as "no change";
// gtp_write, absent on the tree's kernel, is located from patch 1 on.
func TestLocateSeriesThroughTheTest(t *testing.T) {
	runs := 200
	if !testing.Short() {
		runs = 1000
	}
	from := map[string]int{"gtp/gtp_write": 1}
	type cell struct {
		name  string
		seeds int
		step  map[int]map[string]float64
	}
	cells := []cell{
		{"null", 3, nil}, {"null", 6, nil},
		{"patch 2 +4 % hash_write", 3, map[int]map[string]float64{2: {"hash/hash_write": 0.04}}},
		{"patch 2 +4 % hash_write", 6, map[int]map[string]float64{2: {"hash/hash_write": 0.04}}},
		{"patch 2 +4 % gtp_write (absent at 0)", 6, map[int]map[string]float64{2: {"gtp/gtp_write": 0.04}}},
		{"+2 % hash_write at each of 3 patches", 6, map[int]map[string]float64{1: {"hash/hash_write": 0.02}, 2: {"hash/hash_write": 0.02}, 3: {"hash/hash_write": 0.02}}},
		{"patch 2 +2 ns hash_read", 3, map[int]map[string]float64{2: {"hash/hash_read": 2.0 / 210}}},
	}
	var table []string
	for i, c := range cells {
		rng := rand.New(rand.NewPCG(uint64(7+i), 21))
		var right, wrong, spread, any int
		for range runs {
			prefixes, vals := simSeries(rng, 3, c.seeds, seriesProgs, c.step, from)
			found, _ := LocateSeries(prefixes, withSeeds(vals), results.DefaultMinEffectPct)
			ok, bad, sp := false, false, false
			for _, l := range found {
				_, shifted := c.step[l.Patch][l.Key]
				switch {
				case l.Culprit && shifted:
					ok = true
				case !l.Culprit && c.step != nil && l.From < l.Patch:
					sp = true
				default:
					bad = true
				}
			}
			if ok {
				right++
			}
			if bad {
				wrong++
			}
			if sp {
				spread++
			}
			if len(found) > 0 {
				any++
			}
		}
		pct := func(x int) float64 { return float64(x) * 100 / float64(runs) }
		table = append(table, fmt.Sprintf("| %s | %d | %.1f %% | %.1f %% | %.1f %% |", c.name, c.seeds, pct(right), pct(spread), pct(wrong)))
		switch {
		case c.step == nil && pct(wrong) > DetAlpha*100:
			t.Errorf("%s, %d seeds: some patch blamed in %.1f %% of runs", c.name, c.seeds, pct(wrong))
		case c.step != nil && c.seeds == 6 && strings.Contains(c.name, "patch 2 +4") && (pct(right) < 90 || pct(wrong) > 1):
			t.Errorf("%s, %d seeds: named in %.1f %%, a wrong patch in %.1f %%", c.name, c.seeds, pct(right), pct(wrong))
		case strings.Contains(c.name, "each of") && pct(right)+pct(spread) < 80:
			t.Errorf("%s: located (culprit or spread) in %.1f %% + %.1f %%", c.name, pct(right), pct(spread))
		case strings.Contains(c.name, "+2 ns") && pct(right) < 100:
			t.Errorf("%s: named in %.1f %%", c.name, pct(right))
		}
	}
	t.Logf("%d runs per cell, 3-patch series, 5 programs:\n| series | seeds per prefix | right patch named | named as spread over patches | a wrong patch named |\n%s", runs, strings.Join(table, "\n"))
}

func sortedKeys(m map[string][2]float64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// TestLocateExactRowsWithArtefacts: exact programs whose seeds carry an
// interrupt artefact of up to 0.99 ns/pkt (positive, on 30 % of seeds; the
// real series-write4 run at seeds 201-203 had 0.6 on one): patch 2's +20
// instructions on hash_write are named at 3 seeds per prefix in every run,
// and a null series never names anything, the totals' sums included.
func TestLocateExactRowsWithArtefacts(t *testing.T) {
	progs := map[string]float64{"hash/hash_write": 475, "hash/hash_read": 204, "hash/hash_consume": 333, "cnt/cnt_egress": 73}
	rng := rand.New(rand.NewPCG(3, 4))
	draw := func(shift map[int]float64) ([]int, map[int]map[string][]float64) {
		prefixes := []int{0, 1, 2, 3}
		vals := map[int]map[string][]float64{}
		for _, k := range prefixes {
			vals[k] = map[string][]float64{}
			for key, x := range progs {
				if key == "hash/hash_write" && k >= 2 {
					x += shift[2]
				}
				for range 3 {
					y := x
					if rng.Float64() < 0.3 {
						y += 0.99 * rng.Float64()
					}
					vals[k][key] = append(vals[k][key], y)
				}
			}
		}
		return prefixes, vals
	}
	for i := 0; i < 1000; i++ {
		p, v := draw(nil)
		if found, _ := LocateSeries(p, withSeeds(v), results.DefaultMinEffectPct); len(found) > 0 {
			t.Fatalf("null series, run %d: named %+v", i, found)
		}
		p, v = draw(map[int]float64{2: 20})
		found, _ := LocateSeries(p, withSeeds(v), results.DefaultMinEffectPct)
		if len(found) != 1 || !found[0].Culprit || found[0].Patch != 2 || found[0].Key != "hash/hash_write" {
			t.Fatalf("patch 2 +20 ns, run %d: located %+v, want patch 2 alone\nvalues %v", i, found, v)
		}
	}
}

// withSeeds gives simulated values the seeds their prefixes were booted
// with: every prefix seeds 1..n, value i from seed i+1.
func withSeeds(vals map[int]map[string][]float64) map[int]map[string]Seeded {
	out := map[int]map[string]Seeded{}
	for k, m := range vals {
		out[k] = map[string]Seeded{}
		for key, xs := range m {
			s := Seeded{Vals: xs}
			for i := range xs {
				s.Seeds = append(s.Seeds, uint64(i)+1)
			}
			out[k][key] = s
		}
	}
	return out
}
