package stats

import (
	"math"
	"sync"

	"gonum.org/v1/gonum/integrate/quad"
	"gonum.org/v1/gonum/stat/distuv"
)

// powerNodes is the Gauss–Legendre rule the noncentral t power is
// integrated with.
const powerNodes = 48

// Detectable is the smallest shift, in the units of se, that the
// two-sided t test at level alpha with df degrees of freedom detects
// with the given power: the noncentrality where the noncentral t's power
// reaches it, times se. 0 when there is no spread (se 0 or NaN). It is
// the bound a "no change" states.
func Detectable(se, df, alpha, power float64) float64 {
	if se == 0 || math.IsNaN(se) {
		return 0
	}
	// Welch's df is fractional: rounded down to 1/20, which errs towards
	// the larger (more cautious) bound, it lets the noncentrality be
	// computed once per (df, level, power).
	if !math.IsInf(df, 1) {
		df = math.Max(1, math.Floor(df*20)/20)
	}
	key := [3]float64{df, alpha, power}
	if v, ok := ncpCache.Load(key); ok {
		return v.(float64) * se
	}
	ncp := ncpAt(df, alpha, power)
	ncpCache.Store(key, ncp)
	return ncp * se
}

// ncpCache holds ncpAt by (df, alpha, power): a pure function's values.
var ncpCache sync.Map

// ncpAt is the noncentrality at which the two-sided t test at level
// alpha with df degrees of freedom has the given power (bisection to
// 1e-4 relative, from above).
func ncpAt(df, alpha, power float64) float64 {
	tp := newTPower(alpha, df)
	lo, hi := 0.0, tp.c+2*TQuantile(power, df)+1
	for tp.at(hi) < power {
		hi *= 2
	}
	for range 40 {
		mid := (lo + hi) / 2
		if tp.at(mid) < power {
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
	tp := &tPower{c: TQuantile(1-a/2, df)}
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
