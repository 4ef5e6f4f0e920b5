package stats

import (
	"math"
	"math/rand/v2"
	"testing"
)

// Reference values are textbook or computed apart from this code:
// t quantiles as printed in t tables (R's qt); Welch's p and the
// noncentral t's power by numerical integration of the densities
// (Simpson's rule, in Python's standard library); Holm as R's
// p.adjust(method = "holm"); Mann–Whitney critical values as in U tables.

func near(got, want, rel float64) bool {
	return math.Abs(got-want) <= rel*math.Abs(want)
}

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		xs   []float64
		want float64
	}{{[]float64{3, 1, 2}, 2}, {[]float64{4, 1, 3, 2}, 2.5}, {[]float64{7}, 7}} {
		xs := append([]float64(nil), c.xs...)
		if got := Median(xs); got != c.want {
			t.Errorf("Median(%v) = %v, want %v", c.xs, got, c.want)
		}
		if xs[0] != c.xs[0] {
			t.Errorf("Median sorted its argument")
		}
	}
	if !math.IsNaN(Median(nil)) {
		t.Errorf("Median(nil) is not NaN")
	}
}

// The textbook sample 2,4,4,4,5,5,7,9: mean 5, squares about it 32.
func TestMeanVarAndSpreads(t *testing.T) {
	xs := []float64{2, 4, 4, 4, 5, 5, 7, 9}
	m, v := MeanVar(xs)
	if m != 5 || !near(v, 32.0/7, 1e-15) {
		t.Errorf("MeanVar = %v, %v, want 5, 32/7", m, v)
	}
	if m, v := MeanVar([]float64{3}); m != 3 || v != 0 {
		t.Errorf("MeanVar of one value = %v, %v, want 3, 0", m, v)
	}
	if m, v := MeanVar(nil); !math.IsNaN(m) || !math.IsNaN(v) {
		t.Errorf("MeanVar(nil) = %v, %v, want NaN", m, v)
	}
	if lo, hi := MinMax(xs); lo != 2 || hi != 9 {
		t.Errorf("MinMax = %v, %v", lo, hi)
	}
	if r, h := Range(xs), HalfRange(xs); r != 7 || h != 3.5 {
		t.Errorf("Range, HalfRange = %v, %v, want 7, 3.5", r, h)
	}
	if cv := CV(xs); !near(cv, math.Sqrt(32.0/7)/5*100, 1e-15) || !near(cv, 42.761799, 1e-7) {
		t.Errorf("CV = %v, want 42.7618", cv)
	}
	if CV([]float64{-1, 1}) != 0 || CV([]float64{5}) != 0 {
		t.Errorf("CV of a zero mean or one value is not 0")
	}
	if p := Present([]float64{1, math.NaN(), 3}); len(p) != 2 || p[0] != 1 || p[1] != 3 {
		t.Errorf("Present = %v", p)
	}
	if !math.IsNaN(Range(nil)) {
		t.Errorf("Range(nil) is not NaN")
	}
}

func TestTQuantile(t *testing.T) {
	for _, c := range []struct{ p, df, want float64 }{
		{0.975, 10, 2.228138852},
		{0.975, 3, 3.182446305},
		{0.95, 1, 6.313751515},
		{0.975, math.Inf(1), 1.959963985},
	} {
		if got := TQuantile(c.p, c.df); !near(got, c.want, 1e-9) {
			t.Errorf("TQuantile(%v, %v) = %v, want %v", c.p, c.df, got, c.want)
		}
	}
}

// a = 1..4, b = 3, 5, .., 11: t = 4.5 / sqrt(5/12 + 2) = 2.8947,
// df = 5.5208, p = 0.030286.
func TestWelch(t *testing.T) {
	w := WelchTest([]float64{1, 2, 3, 4}, []float64{3, 5, 7, 9, 11})
	if w.MeanA != 2.5 || w.Diff != 4.5 || !near(w.SE, 1.554563176, 1e-9) || !near(w.DF, 5.520787746, 1e-9) {
		t.Errorf("Welch = %+v", w)
	}
	if !near(w.P, 0.030286154, 1e-6) {
		t.Errorf("Welch p = %v, want 0.030286", w.P)
	}
	if h := w.HalfWidth(0.95); !near(h, TQuantile(0.975, w.DF)*w.SE, 1e-15) {
		t.Errorf("HalfWidth = %v", h)
	}
	exact := WelchTest([]float64{5, 5}, []float64{6, 6})
	if exact.P != 0 || !math.IsInf(exact.DF, 1) || exact.HalfWidth(0.95) != 0 {
		t.Errorf("two exact sides that differ: %+v", exact)
	}
	if same := WelchTest([]float64{5, 5}, []float64{5, 5}); same.P != 1 {
		t.Errorf("two exact sides that agree: p = %v", same.P)
	}
}

// R: p.adjust(c(0.01, 0.04, 0.03, 0.005), "holm") = 0.03 0.06 0.06 0.02.
func TestHolm(t *testing.T) {
	got := Holm([]float64{0.01, 0.04, 0.03, 0.005})
	want := []float64{0.03, 0.06, 0.06, 0.02}
	for i := range want {
		if !near(got[i], want[i], 1e-12) {
			t.Errorf("Holm = %v, want %v", got, want)
			break
		}
	}
	if got := Holm([]float64{0.5, 0.9}); got[0] != 1 || got[1] != 1 {
		t.Errorf("Holm does not cap at 1: %v", got)
	}
}

// 8+8 and 4+4 boots separated (2/12870, 2/70 = 0.0286): the 8+8 member
// goes first at 0.025, the 4+4 one then clears 0.05; 3+3 (0.1) never.
func TestHolmReachable(t *testing.T) {
	best := []float64{UMinP(8, 8), UMinP(4, 4)}
	if got := HolmReachable(best, 0.05); !got[0] || !got[1] {
		t.Errorf("HolmReachable(%v) = %v, want both", best, got)
	}
	if got := HolmReachable([]float64{UMinP(4, 4), UMinP(4, 4)}, 0.05); got[0] || got[1] {
		t.Errorf("two 4+4 members: %v, want neither (0.0286 > 0.025)", got)
	}
	if got := HolmReachable([]float64{UMinP(3, 3)}, 0.05); got[0] {
		t.Errorf("3+3 alone reachable")
	}
}

// UMinP is 2 / C(n1+n2, n1); the critical values are those of U tables
// (two-sided, 5 %): 2 for 5+5, 5 for 6+6, 13 for 8+8, none for 3+3.
func TestMannWhitneyOrderStatistics(t *testing.T) {
	for _, c := range []struct {
		n1, n2 int
		minP   float64
	}{{3, 3, 0.1}, {4, 4, 2.0 / 70}, {6, 6, 2.0 / 924}, {0, 5, 1}} {
		if got := UMinP(c.n1, c.n2); !near(got, c.minP, 1e-12) {
			t.Errorf("UMinP(%d, %d) = %v, want %v", c.n1, c.n2, got, c.minP)
		}
	}
	for _, c := range []struct{ n1, n2, want int }{{5, 5, 2}, {6, 6, 5}, {8, 8, 13}, {3, 3, -1}, {0, 4, -1}} {
		if got := UCritical(c.n1, c.n2, 0.05); got != c.want {
			t.Errorf("UCritical(%d, %d) = %d, want %d", c.n1, c.n2, got, c.want)
		}
	}
}

// Ratios of {4,5,6} to {1,2,3}: their median is 2.5, +150 %; 3+3 cannot
// bound a 95 % interval. With a zero, differences in units of a's median.
func TestHodgesLehmann(t *testing.T) {
	s := HodgesLehmann([]float64{1, 2, 3}, []float64{4, 5, 6}, 0.95)
	if !near(s.Est, 150, 1e-12) || !math.IsInf(s.Lo, -1) || !math.IsInf(s.Hi, 1) {
		t.Errorf("HodgesLehmann = %+v, want +150 %% unbounded", s)
	}
	if s := HodgesLehmann([]float64{0, 1, 2}, []float64{1, 2, 3}, 0.95); s.Est != 100 {
		t.Errorf("with a zero: %+v, want +100 %%", s)
	}
	// 6+6, every ratio 1.1: the 6th and the 31st of the 36 are 1.1 too.
	s = HodgesLehmann([]float64{100, 100, 100, 100, 100, 100}, []float64{110, 110, 110, 110, 110, 110}, 0.95)
	if !near(s.Est, 10, 1e-9) || !near(s.Lo, 10, 1e-9) || !near(s.Hi, 10, 1e-9) {
		t.Errorf("constant +10 %%: %+v", s)
	}
	if s := HodgesLehmann(nil, []float64{1}, 0.95); !math.IsNaN(s.Est) {
		t.Errorf("no base: %+v", s)
	}
}

// The shift found with 90 % power: z(0.975) + z(0.9) = 3.2415 standard
// errors for a normal statistic; 3.3183 at 42 df (R's
// power.t.test(delta = 1, power = 0.9): n = 22.02 a side); 4.6610 at
// 10 df and 1 %.
func TestDetectable(t *testing.T) {
	for _, c := range []struct{ se, df, alpha, want float64 }{
		{1, math.Inf(1), 0.05, 3.2415156},
		{1, 42, 0.05, 3.3182938},
		{2, 10, 0.01, 2 * 4.6609985},
	} {
		if got := Detectable(c.se, c.df, c.alpha, 0.9); !near(got, c.want, 3e-4) {
			t.Errorf("Detectable(%v, %v, %v) = %v, want %v", c.se, c.df, c.alpha, got, c.want)
		}
	}
	if Detectable(0, 5, 0.05, 0.9) != 0 || Detectable(math.NaN(), 5, 0.05, 0.9) != 0 {
		t.Errorf("no spread, no bound")
	}
}

// The Hodges–Lehmann interval's coverage on normal samples (8+8, a 5 %
// shift, 3 % spread) is close to its level.
func TestHodgesLehmannCoverage(t *testing.T) {
	normal := func(seed uint64, n int, mean float64) []float64 {
		r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
		out := make([]float64, n)
		for i := range out {
			out[i] = mean * (1 + 0.03*r.NormFloat64())
		}
		return out
	}
	cover := 0
	const n = 400
	for i := uint64(0); i < n; i++ {
		s := HodgesLehmann(normal(1000+i, 8, 100), normal(5000+i, 8, 105), 0.95)
		if s.Lo <= 5 && 5 <= s.Hi {
			cover++
		}
	}
	if c := float64(cover) / n; c < 0.91 || c > 0.99 {
		t.Errorf("coverage of the 95%% interval %.3f", c)
	}
}

// The normal approximation that takes over beyond 50+50 agrees with the
// exact distribution where both are available.
func TestUCriticalNormalApproximation(t *testing.T) {
	exact := UCritical(50, 50, 0.05)
	approx := int(math.Floor(1250 - NormalQuantile(0.975)*math.Sqrt(2500*101.0/12) - 0.5))
	if d := exact - approx; d < -3 || d > 3 {
		t.Errorf("critical U for 50+50: exact %d, normal approximation %d", exact, approx)
	}
	// 51+50 is beyond it: 1275 − 1.96·√(2550·102/12) − 0.5 = 985.9.
	if got := UCritical(51, 50, 0.05); got != 985 {
		t.Errorf("critical U for 51+50 by the approximation: %d, want 985", got)
	}
}
