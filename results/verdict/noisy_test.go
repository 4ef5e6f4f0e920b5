package verdict

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/results/internal/runtest"
)

// Issue 21's noisy-mode cases. One variant has 8+8 boots, the other
// 4+4, both completely separated: 4+4 reaches p = 0.029, which Holm's
// second step (0.05) accepts once the 8+8 row has gone first; it used to
// read "cannot decide (needs >= 5 boots)" beside p adj 0.029.
func TestNoisyDetectabilityFromTheFamily(t *testing.T) {
	run := runtest.MkRun(results.AccelKVM, "", 8, 8, []runtest.VarSpec{{Name: "big", Progs: []string{"p"}}}, func(role string, rep int, v, p string) float64 {
		if role == results.RolePatched {
			return 200 + float64(rep)
		}
		return 100 + float64(rep)
	})
	small := runtest.MkRun(results.AccelKVM, "", 4, 4, []runtest.VarSpec{{Name: "small", Progs: []string{"q"}}}, func(role string, rep int, v, p string) float64 {
		if role == results.RolePatched {
			return 200 + float64(rep)
		}
		return 100 + float64(rep)
	})
	for _, b := range small.Boots {
		b.Seq = len(run.Boots) + 1
		run.Boots = append(run.Boots, b)
	}
	rows := rowsOf(compareOf(run, "gtp"))
	for _, k := range []string{"big/total", "small/total"} {
		if r := rows[k]; r.Verdict != Slower || r.PAdj > alpha {
			t.Errorf("%s: %s p adj %.3f (%d+%d boots), want slower", k, r.Verdict, r.PAdj, r.Base.N, r.Patched.N)
		}
	}
	for r, ok := range decidable([]*Row{{Base: Dist{N: 4}, Patched: Dist{N: 4}}, {Base: Dist{N: 4}, Patched: Dist{N: 4}}}) {
		if ok {
			t.Errorf("two 4+4 rows: %+v decidable, but 0.029 > 0.025 at Holm's first step", r.Base)
		}
	}
}

// "Below the smallest effect" is judged on the interval at the family's
// level, not the unadjusted 95 % one, and a change carries its interval
// and boots in words. The conclusion's number is the estimate whose
// interval is shown (Hodges–Lehmann), not the ratio of medians.
func TestNoisyBelowSmallestEffectUsesTheAdjustedInterval(t *testing.T) {
	vars := []runtest.VarSpec{{Name: "a", Progs: []string{"p"}}, {Name: "b", Progs: []string{"p"}}, {Name: "c", Progs: []string{"p"}}}
	// a: patched +0.28 % with a little boot-to-boot noise, 12+12 boots;
	// b: +2 %.
	noise := []float64{0, 0.02, -0.03, 0.01, -0.01, 0.03, -0.02, 0.015, -0.015, 0.025, -0.025, 0.005}
	run := runtest.MkRun(results.AccelKVM, "", 12, 12, vars, func(role string, rep int, v, p string) float64 {
		x := 100 * (1 + noise[rep-1]/10)
		if role == results.RolePatched && v == "a" {
			x *= 1.0028
		}
		if role == results.RolePatched && v == "b" {
			x *= 1.02
		}
		return x
	})
	rows := rowsOf(compareOf(run, "gtp"))
	a := rows["a/total"]
	if a.Adjusted == nil || a.AdjConf < 0.98 || math.Abs(a.AdjConf-(1-alpha/3)) > 1e-9 {
		t.Fatalf("a: adjusted interval %+v at %v, want at 1-0.05/3", a.Adjusted, a.AdjConf)
	}
	if a.Adjusted.Hi-a.Adjusted.Lo < a.Shift.Hi-a.Shift.Lo {
		t.Errorf("adjusted interval %+v narrower than the 95 %% one %+v", *a.Adjusted, a.Shift)
	}
	// Its 95 % interval lies within ±0.5 %, the family's does not: the
	// family's test cannot claim the change is that small.
	if a.Verdict != Slower || a.InNoise || !a.Shift.within(results.DefaultMinEffectPct) {
		t.Errorf("a +0.28 %%: %s in noise %v (95 %% %+v, adjusted %+v), want slower, not below the smallest effect", a.Verdict, a.InNoise, a.Shift, *a.Adjusted)
	}
	b := rows["b/total"]
	if b.Verdict != Slower || b.InNoise || b.Base.N != 12 || b.Patched.N != 12 || b.Adjusted == nil {
		t.Errorf("b +2 %%: %s in noise %v, %d+%d boots, adjusted %v, want slower on 12+12 with its family's interval", b.Verdict, b.InNoise, b.Base.N, b.Patched.N, b.Adjusted)
	}
	// Targeted: the summary's number is the row's shown estimate (a golden
	// would take whatever number the summary prints).
	if c := concludeOf(run, "gtp"); !strings.Contains(c.Summary, fmt.Sprintf("b %+.1f%%", b.changePct())) {
		t.Errorf("conclusion %q does not use the shown estimate %+.1f%%", c.Summary, b.changePct())
	}
}
