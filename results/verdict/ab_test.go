package verdict

import (
	"errors"
	"math"
	"testing"

	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/results/internal/runtest"
)

func TestCompareIdenticalDistributions(t *testing.T) {
	base := runtest.Normal(1, 10, 500, 0.02)
	patched := runtest.Normal(2, 10, 500, 0.02)
	r := compareSamples("total", base, patched)
	if r.Verdict != NoChange {
		t.Fatalf("verdict %q (p=%.3f, delta %+.2f%%), want %q", r.Verdict, r.P, r.DeltaPct, NoChange)
	}
	if r.P <= 0.05 {
		t.Errorf("p = %.3f, want > 0.05", r.P)
	}
	if r.Base.N != 10 || r.Patched.N != 10 {
		t.Errorf("n = %d+%d, want 10+10", r.Base.N, r.Patched.N)
	}
}

func TestCompareTenPercentShift(t *testing.T) {
	base := runtest.Normal(3, 10, 500, 0.02)
	patched := runtest.Normal(4, 10, 550, 0.02)
	r := compareSamples("total", base, patched)
	if r.Verdict != Slower {
		t.Fatalf("verdict %q (p=%.4f), want %q", r.Verdict, r.P, Slower)
	}
	if r.P > 0.05 {
		t.Errorf("p = %.4f, want significant", r.P)
	}
	if math.Abs(r.DeltaPct-10) > 3 {
		t.Errorf("delta %+.2f%%, want about +10%%", r.DeltaPct)
	}
	if r.InNoise {
		t.Errorf("a 10%% shift with 2%% noise is flagged as within noise (CV %.1f/%.1f)", r.Base.CV, r.Patched.CV)
	}
	if r.Base.CI == "∞" || r.Base.CI == "" {
		t.Errorf("10 samples should give a finite CI, got %q", r.Base.CI)
	}
	// And the other way round.
	if r := compareSamples("total", patched, base); r.Verdict != Faster {
		t.Errorf("reverse verdict %q, want %q", r.Verdict, Faster)
	}
}

func TestCompareThreeSamplesAreTooFew(t *testing.T) {
	// Even a doubling cannot be significant with 3+3 samples (the smallest
	// possible Mann-Whitney p is 0.1), so the verdict must not pretend.
	r := compareSamples("total", []float64{100, 101, 102}, []float64{200, 201, 202})
	if r.Verdict != TooFew {
		t.Fatalf("verdict %q (p=%.3f), want %q", r.Verdict, r.P, TooFew)
	}
	if len(r.Warnings) == 0 {
		t.Errorf("want benchmath's warning about the sample count")
	}
	if r.Base.CI != "∞" {
		t.Errorf("CI of 3 samples %q, want ∞", r.Base.CI)
	}
	// 4+4 completely separated samples can be significant.
	if r := compareSamples("total", []float64{100, 101, 102, 103}, []float64{200, 201, 202, 203}); r.Verdict != Slower {
		t.Errorf("4+4 separated: verdict %q, want %q", r.Verdict, Slower)
	}
}

func TestCompareFlagsChangeBelowSmallestEffect(t *testing.T) {
	// Many quiet samples: a 0.2 % shift is significant, but its whole
	// Hodges–Lehmann interval lies within the smallest effect of interest
	// (±0.5 %): a real change, too small to count.
	var base, patched []float64
	for i := 0; i < 40; i++ {
		x := 500 * (1 + 0.002*(float64(i)/39-0.5))
		base, patched = append(base, x), append(patched, x*1.002)
	}
	r := compareSamples("total", base, patched)
	if r.Verdict != Slower {
		t.Fatalf("verdict %q (p=%.4f delta %+.2f%%), want %q", r.Verdict, r.P, r.DeltaPct, Slower)
	}
	if !r.InNoise || r.Shift.Lo <= 0 || r.Shift.Hi >= results.DefaultMinEffectPct {
		t.Errorf("shift %+.2f%% (%+.2f..%+.2f) not flagged as below the smallest effect", r.Shift.Est, r.Shift.Lo, r.Shift.Hi)
	}
	// Very noisy samples (CV 10 %) and a 5 % shift: the old rule called it
	// "within noise" because 5 < CV; the interval says it is a change.
	base, patched = nil, nil
	for i := 0; i < 80; i++ {
		x := 500 * (0.83 + 0.34*float64(i)/79)
		base, patched = append(base, x), append(patched, x*1.05)
	}
	r = compareSamples("total", base, patched)
	if r.Verdict != Slower || r.InNoise {
		t.Errorf("5%% shift at CV 10%% with 80+80 samples: %s in-noise=%v shift %+.1f%% (%+.1f..%+.1f)", r.Verdict, r.InNoise, r.Shift.Est, r.Shift.Lo, r.Shift.Hi)
	}
}

func TestCompareNoSamplesOnOneSide(t *testing.T) {
	r := compareSamples("total", nil, []float64{1, 2, 3})
	if r.Verdict != NotComparable {
		t.Errorf("verdict %q, want %q", r.Verdict, NotComparable)
	}
}

func TestCompareRunPerTreeWithInvalidReps(t *testing.T) {
	run := runtest.AbRun("gtp", results.AccelKVM, runtest.Normal(7, 8, 900, 0.01), runtest.Normal(8, 8, 620, 0.01))
	// A second tree whose only base results must never meet gtp's patched.
	run.Boots = append(run.Boots, results.Boot{Seq: 100, Tree: "ext", Role: results.RoleBase, Rep: 1,
		Variants: []results.VariantResult{runtest.Vr("gtp-x", runtest.Pc{Name: "x_prog", Ns: 10})}})
	// An invalid repetition with absurd numbers, and a failed boot.
	bad := runtest.Vr("gtp-x", runtest.Pc{Name: "x_prog", Ns: 1e6})
	bad.Valid, bad.Invalid = false, "lo rx_dropped 1200"
	run.Boots = append(run.Boots,
		results.Boot{Seq: 101, Tree: "gtp", Role: results.RolePatched, Rep: 9, Variants: []results.VariantResult{bad}},
		results.Boot{Seq: 102, Tree: "gtp", Role: results.RoleBase, Rep: 10, Error: "kernel panic during boot", ErrorKind: "crash"})

	ab := compareOf(run, "gtp")
	if len(ab.Variants) != 1 {
		t.Fatalf("variants %d, want 1", len(ab.Variants))
	}
	tot := ab.Variants[0].Total
	if tot.Base.N != 8 || tot.Patched.N != 8 {
		t.Errorf("n = %d+%d, want 8+8: invalid results must not be averaged", tot.Base.N, tot.Patched.N)
	}
	if tot.Verdict != Faster || math.Abs(tot.DeltaPct-(620.0/900-1)*100) > 2 {
		t.Errorf("verdict %q delta %+.1f%%, want faster by about 31%%", tot.Verdict, tot.DeltaPct)
	}
	if len(ab.Excluded) != 2 {
		t.Fatalf("excluded %+v, want the invalid rep and the failed boot", ab.Excluded)
	}
	if e := ab.Excluded[0]; e.Kind != "invalid" || e.Reason != "lo rx_dropped 1200" || e.Rep != 9 {
		t.Errorf("excluded[0] = %+v", e)
	}
	if ab.Emulated {
		t.Errorf("a KVM run is labelled emulated")
	}
	ext := compareOf(run, "ext")
	if v := ext.Variants[0].Total; v.Verdict != NotComparable || v.Patched.N != 0 {
		t.Errorf("ext compared against another tree's patched kernel: %+v", v)
	}
}

func TestCompareEmulatedLabel(t *testing.T) {
	run := runtest.AbRun("gtp", results.AccelTCG, runtest.Normal(9, 6, 900, 0.01), runtest.Normal(10, 6, 900, 0.01))
	ab := compareOf(run, "gtp")
	if !ab.Emulated || ab.Label != results.EmulatedLabel {
		t.Errorf("TCG run: emulated %v label %q", ab.Emulated, ab.Label)
	}
}

func TestFailOnRegression(t *testing.T) {
	run := runtest.AbRun("gtp", results.AccelKVM, runtest.Normal(11, 8, 500, 0.01), runtest.Normal(12, 8, 575, 0.01))
	err := AnalyzeRun(run).FailOnRegression(10)
	var re *regressionError
	if !errors.As(err, &re) {
		t.Fatalf("err %v, want a *regressionError for a 15%% slowdown over a 10%% limit", err)
	}
	if re.Tree != "gtp" || re.Variant != "gtp-x" {
		t.Errorf("got %+v", re)
	}
	// The exit code is kci test's (job.ExitPerformance, mapped by the
	// CLI): results keeps no exit-code table of its own.
	var ec interface{ ExitCode() int }
	if errors.As(err, &ec) {
		t.Errorf("the regression carries its own exit code %d", ec.ExitCode())
	}
	if err := AnalyzeRun(run).FailOnRegression(20); err != nil {
		t.Errorf("15%% slowdown under a 20%% limit: %v", err)
	}
	faster := runtest.AbRun("gtp", results.AccelKVM, runtest.Normal(13, 8, 575, 0.01), runtest.Normal(14, 8, 500, 0.01))
	if err := AnalyzeRun(faster).FailOnRegression(0); err != nil {
		t.Errorf("a speed-up is not a regression: %v", err)
	}
	few := runtest.AbRun("gtp", results.AccelKVM, []float64{500, 501, 502}, []float64{900, 901, 902})
	if err := AnalyzeRun(few).FailOnRegression(10); err != nil {
		t.Errorf("3 samples cannot show a significant regression: %v", err)
	}
}

// compareSamples compares two samples of ns/pkt on their own (a family of
// one) in noisy mode: Mann–Whitney U at alpha 0.05, the Hodges–Lehmann
// interval against DefaultMinEffectPct. When no difference could be
// significant at these sample sizes, the verdict says so instead of "no
// change".
func compareSamples(name string, base, patched []float64) Row {
	r := pairStats(name, base, patched)
	r.PAdj = r.P
	decideRow(&r, 1, results.DefaultMinEffectPct, detectable(len(base), len(patched), 1))
	return r
}

// compareDeterministic decides one deterministic row on its own (a
// family of one, one look), each value from its own seed.
func compareDeterministic(name string, base, patched []float64, minEffect float64) Row {
	seeds := func(xs []float64, off uint64) []uint64 {
		out := make([]uint64, len(xs))
		for i := range out {
			out[i] = off + uint64(i) + 1
		}
		return out
	}
	r := compareDet(name, base, patched, seeds(base, 0), seeds(patched, 1<<20))
	decideDetAt(&r, r.P, minEffect, DetAlpha, DetAlpha) // one row alone: its raw p
	return r
}
