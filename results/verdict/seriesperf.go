package verdict

import (
	"strings"

	"github.com/kci-dev/kci/results"
)

// SeriesCulprits locates a deterministic series tree's changes from its
// record: the boots of the tree's kernel and of every prefix that built,
// at logical seeds 1..t.Seeds, through LocateSeries with each boot's own
// seed, at t.MinEffectPct. kci series decides so when it runs, and
// RedecideSeries again from series.json. It returns the culprits and the
// size of the family they were tested in.
func SeriesCulprits(t *results.SeriesTree) ([]results.Culprit, int) {
	prefixes := []int{0}
	subject := map[int]string{}
	n := 0
	for _, p := range t.Patches {
		subject[p.Index], n = p.Subject, p.Of
		if p.Build == results.StepOK {
			prefixes = append(prefixes, p.Index)
		}
	}
	located, family := LocateSeries(prefixes, SeriesValues(t, prefixes, t.Seeds), t.MinEffectPct)
	var out []results.Culprit
	for _, l := range located {
		c := results.Culprit{Patch: l.Patch, Of: n, Subject: subject[l.Patch], Key: l.Key, Before: l.Before, After: l.After, Pct: l.Pct,
			Share: l.Share, Unit: "instruction-time", ThrPct: t.MinEffectPct, Lo: l.Lo, Hi: l.Hi, Seeds: l.SeedsA}
		if !l.Culprit {
			c.From = l.From + 1
		}
		out = append(out, c)
	}
	return out, family
}

// RedecideSeries decides the culprits of every tree of s again from its
// boot records, as kci report decides a test's rows again from run.json:
// through the test (SeriesCulprits) or by the noisy rule
// (NoisyCulprits). Trees without such records (schema 1, location that
// stopped or never ran) keep the culprits they were saved with.
func RedecideSeries(s *results.Series) {
	for i := range s.Trees {
		t := &s.Trees[i]
		switch {
		case len(t.Boots) == 0 || strings.HasPrefix(t.PerfNote, "stopped:"):
		case t.Seeds > 0:
			t.Culprits, _ = SeriesCulprits(t)
		case t.Locate != "":
			if c, err := NoisyCulprits(t, NoisyUnit(s.Clock)); err == nil {
				t.Culprits = c
			}
		}
	}
}

// NoisyUnit is what a series' noisy culprits are in, by its clock.
func NoisyUnit(clock string) string {
	if clock == results.ClockICount {
		return "instruction-time"
	}
	return "wall, one boot: noisy"
}
