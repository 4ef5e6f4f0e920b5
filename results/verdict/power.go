package verdict

import (
	"math"
	"sync"

	"gonum.org/v1/gonum/integrate/quad"
	"gonum.org/v1/gonum/stat/distuv"
)

// The deterministic-mode test and its power. Under icount each guest seed
// gives a row an exact value; a code change behaves like a fresh draw of
// that value plus a shift. So a row is a two-sample problem over per-seed
// values, tested with Welch's t: it copes with the change altering the
// spread, and unlike a rank test it can reach a family's level at 3+3
// seeds (Mann–Whitney's smallest p there is 0.1). Its calibration on
// seed-like values, and that of the whole rule, is checked by simulation
// (sequential_test.go).

// welch is Welch's two-sample t test of mean(patched) − mean(base).
type welch struct {
	base            float64 // mean of the base's values
	diff, se, df, p float64
}

func meanVar(xs []float64) (mean, variance float64) {
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	for _, x := range xs {
		variance += (x - mean) * (x - mean)
	}
	if len(xs) > 1 {
		variance /= float64(len(xs) - 1)
	}
	return mean, variance
}

// welchTest needs >= 2 values a side. Two sides without any spread are
// exact: p is 0 when their means differ, 1 when they agree.
func welchTest(base, patched []float64) welch {
	mb, vb := meanVar(base)
	mp, vp := meanVar(patched)
	w := welch{base: mb, diff: mp - mb}
	qb, qp := vb/float64(len(base)), vp/float64(len(patched))
	w.se = math.Sqrt(qb + qp)
	if w.se == 0 {
		w.df, w.p = math.Inf(1), 1
		if w.diff != 0 {
			w.p = 0
		}
		return w
	}
	w.df = (qb + qp) * (qb + qp) / (qb*qb/float64(len(base)-1) + qp*qp/float64(len(patched)-1))
	w.p = 2 * distuv.StudentsT{Mu: 0, Sigma: 1, Nu: w.df}.Survival(math.Abs(w.diff/w.se))
	return w
}

// tQuantile is Student's t quantile, the normal one for infinite df.
func tQuantile(p, df float64) float64 {
	if math.IsInf(df, 1) {
		return normalQuantile(p)
	}
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Quantile(p)
}

// PowerLevel is the power a "no change" states the detectable change at.
const PowerLevel = 0.9

// powerNodes is the Gauss–Legendre rule the noncentral t power is
// integrated with.
const powerNodes = 48

// tPower is the power of the two-sided t test at level a with df degrees
// of freedom against noncentrality ncp: P(|T'| > c) for the noncentral t
// T' = (Z + ncp) / sqrt(V/df), V ~ χ²(df), as the expectation over V of
// the normal tail probabilities, integrated over V's quantiles.
type tPower struct {
	c     float64
	scale []float64 // sqrt(V/df) at the quadrature nodes
	w     []float64
}

func newTPower(a, df float64) *tPower {
	tp := &tPower{c: tQuantile(1-a/2, df)}
	if math.IsInf(df, 1) || df > 1000 {
		tp.scale, tp.w = []float64{1}, []float64{1}
		return tp
	}
	x := make([]float64, powerNodes)
	tp.w = make([]float64, powerNodes)
	quad.Legendre{}.FixedLocations(x, tp.w, 0, 1)
	chi := distuv.ChiSquared{K: df}
	tp.scale = make([]float64, powerNodes)
	for i, u := range x {
		tp.scale[i] = math.Sqrt(chi.Quantile(u) / df)
	}
	return tp
}

func (tp *tPower) at(ncp float64) float64 {
	s := 0.0
	for i, k := range tp.scale {
		s += tp.w[i] * (phiUpper(tp.c*k-ncp) + phiUpper(tp.c*k+ncp))
	}
	return s
}

// phiUpper is the standard normal upper tail.
func phiUpper(x float64) float64 { return 0.5 * math.Erfc(x/math.Sqrt2) }

// detectable90 is the shift (in the units of se) the two-sided Welch test
// at level a would detect with PowerLevel probability, given the observed
// standard error and degrees of freedom: the noncentrality where the
// noncentral t power reaches 90 %, times se. 0 when there is no spread.
func detectable90(se, df, a float64) float64 {
	if se == 0 || math.IsNaN(se) {
		return 0
	}
	// Welch's df is fractional: rounded down to 1/20, which errs towards
	// the larger (more cautious) bound, it lets the noncentrality be
	// computed once per (df, level) instead of once per row and look.
	if !math.IsInf(df, 1) {
		df = math.Max(1, math.Floor(df*20)/20)
	}
	key := [2]float64{df, a}
	if v, ok := ncpCache.Load(key); ok {
		return v.(float64) * se
	}
	ncp := ncp90(df, a)
	ncpCache.Store(key, ncp)
	return ncp * se
}

// ncpCache holds ncp90 by (df, level).
var ncpCache sync.Map

// ncp90 is the noncentrality at which the two-sided t test at level a
// with df degrees of freedom has PowerLevel power.
func ncp90(df, a float64) float64 {
	tp := newTPower(a, df)
	lo, hi := 0.0, tp.c+2*tQuantile(PowerLevel, df)+1
	for tp.at(hi) < PowerLevel {
		hi *= 2
	}
	for range 40 {
		mid := (lo + hi) / 2
		if tp.at(mid) < PowerLevel {
			lo = mid
		} else {
			hi = mid
		}
		if hi-lo < 1e-4*hi {
			break
		}
	}
	return hi
}
