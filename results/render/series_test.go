package render

import (
	"fmt"
	"github.com/kci-dev/kci/internal/golden"
	"strings"
	"testing"
	"time"

	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/results/verdict"
)

func TestPerfCell(t *testing.T) {
	write2 := results.Culprit{Patch: 2, Key: "gtp-gtp/gtp_write", Pct: -49}
	for _, tc := range []struct {
		index    int
		ps       []results.ProgDelta
		culprits []results.Culprit
		want     string
	}{
		{1, nil, nil, "-"},
		{2, []results.ProgDelta{{Key: "gtp-gtp/gtp_write", Value: 204, Before: 400, Pct: -49, Against: 1}, {Key: "gtp-gtp/gtp_read", Value: 40, Before: 40, Against: 1}}, []results.Culprit{write2}, "gtp-gtp/gtp_write −49 %"},
		{3, []results.ProgDelta{{Key: "p", Value: 103, Before: 100, Pct: 3, Against: 0}}, []results.Culprit{{Patch: 3, Key: "p", Pct: 3}}, "p +3.0 % (vs tree)"},
		{4, []results.ProgDelta{{Key: "p", Value: 100, Before: 100, Against: 2}}, nil, "no change (vs 2)"},
		{1, []results.ProgDelta{{Key: "p", Value: 100}}, nil, "measured"},
		// A raw move the test did not locate here is no verdict: the
		// comment-only patch of a real series moved hash_consume −0.1 %.
		{1, []results.ProgDelta{{Key: "hash/hash_consume", Value: 333.05, Before: 333.27, Pct: -0.06, Against: 0}}, []results.Culprit{{Patch: 2, Key: "hash/hash_write", Pct: 4.2}}, "no change"},
		{3, []results.ProgDelta{{Key: "p", Value: 110, Before: 100, Pct: 10, Against: 2}}, []results.Culprit{{Patch: 3, From: 2, Key: "p", Pct: 10}, {Patch: 3, Key: "q", Pct: 1}}, "p +10 % (over 2–3) +1 more"},
	} {
		if got := perfCell(tc.index, tc.ps, tc.culprits); got != tc.want {
			t.Errorf("perfCell(%d, %+v) = %q, want %q", tc.index, tc.ps, got, tc.want)
		}
	}
}

func TestSeriesText(t *testing.T) {
	s := &results.Series{Trees: []results.SeriesTree{{Tree: "gtp", Base: "6.12.117-kci", Time: 3 * time.Minute, Patches: []results.PatchResult{
		{Index: 1, Of: 2, Subject: "a", Apply: results.StepOK, Build: results.StepOK, BuildTime: 40 * time.Second, Boot: &results.PatchBoot{Result: results.StepOK, Time: 50 * time.Second, Cells: 4, Passed: 4}},
		{Index: 2, Of: 2, Subject: "b", Apply: results.StepOK, Build: results.StepOK, BuildTime: 30 * time.Second, Boot: &results.PatchBoot{Result: results.StepOK, Time: 20 * time.Second, Cells: 4, Passed: 4}},
	}}}}
	// The report's words are the goldens testdata/TestSeriesText/.
	var b strings.Builder
	if err := SeriesText(&b, s); err != nil {
		t.Fatal(err)
	}
	golden.Own(t, "clean.txt", b.String())
	s.Trees[0].Patches[1].NewWarnings = []results.Warning{{File: "a.c", Line: 3, Message: "unused variable 'x'", Option: "-Wunused-variable"}}
	b.Reset()
	if err := SeriesText(&b, s); err != nil {
		t.Fatal(err)
	}
	golden.Own(t, "new-warning.txt", b.String())
}

func TestSeriesConclude(t *testing.T) {
	clean := func() *results.Series {
		return &results.Series{Trees: []results.SeriesTree{
			{Tree: "gtp", Patches: []results.PatchResult{{Index: 1, Of: 1, Subject: "a", Apply: results.StepOK, Build: results.StepOK, Boot: &results.PatchBoot{Result: results.StepOK}}},
				Culprits: []results.Culprit{{Patch: 1, Of: 1, Subject: "a", Key: "gtp-gtp/gtp_write", Before: 400, After: 204, Pct: -49, Unit: "instruction-time"}}},
			{Tree: "ext", Patches: []results.PatchResult{{Index: 1, Of: 1, Subject: "a", Apply: results.StepOK, Build: results.StepOK, Boot: &results.PatchBoot{Result: results.StepOK}}}},
		}}
	}
	// Each case's state is asserted; the check run's words are the golden
	// testdata/TestSeriesConclude/conclusions.txt.
	var words strings.Builder
	check := func(name string, c verdict.Conclusion, want string) {
		t.Helper()
		if c.State != want {
			t.Errorf("%s: state %s, want %s: %+v", name, c.State, want, c)
		}
		fmt.Fprintf(&words, "== %s: %s\ntitle: %s\nsummary:\n%s\n\n", name, c.State, c.Title, c.Summary)
	}
	s := clean()
	check("clean series, a perf culprit", verdict.SeriesConclude(s, "gtp"), verdict.Success)
	s.Trees[1].Patches[0].Build, s.Trees[1].Patches[0].BuildError = results.StepFail, "net/core/skbuff.c:12: error: expected ';'"
	check("ext's patch 1 does not build", verdict.SeriesConclude(s, "ext"), verdict.Failure)
	check("gtp, sound whatever ext does", verdict.SeriesConclude(s, "gtp"), verdict.Success)
	s = clean()
	s.Incomplete, s.IncompleteReason = true, "interrupted"
	check("incomplete", verdict.SeriesConclude(s, "gtp"), verdict.Neutral)
	check("unknown tree", verdict.SeriesConclude(s, "nope"), verdict.Neutral)
	golden.Own(t, "conclusions.txt", words.String())
	// One tree's Markdown shows that tree alone.
	golden.Own(t, "ext.md", SeriesTreeMarkdown(clean(), "ext"))
}

// TestCulpritThreshold: a culprit names the threshold its program had to
// exceed (the run's, or the program's seed spread); older reports without
// one render as before.
func TestCulpritThreshold(t *testing.T) {
	c := results.Culprit{Patch: 2, Of: 3, Subject: "b", Key: "hash/hash_write", Before: 100, After: 112, Pct: 12, Share: 100, Unit: "instruction-time", ThrPct: 0.8}
	if got, want := c.String(), "patch 2/3 ‹b›: hash/hash_write +12 % (instruction-time, threshold 0.8 %; 100 % of the series' change)"; got != want {
		t.Errorf("culprit\n %q, want\n %q", got, want)
	}
	c.ThrPct = 0
	if got, want := c.String(), "patch 2/3 ‹b›: hash/hash_write +12 % (instruction-time; 100 % of the series' change)"; got != want {
		t.Errorf("culprit without threshold\n %q, want\n %q", got, want)
	}
}
