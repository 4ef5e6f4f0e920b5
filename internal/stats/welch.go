package stats

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// Welch is Welch's two-sample t test of mean(b) − mean(a).
type Welch struct {
	MeanA float64 // mean of a
	Diff  float64 // mean(b) − mean(a)
	SE    float64 // standard error of Diff
	DF    float64 // Welch–Satterthwaite degrees of freedom
	P     float64 // two-sided p
}

// WelchTest tests b against a; it needs two values or more a side. Two
// samples without any spread are exact: P is 0 when their means differ,
// 1 when they agree, and DF is +Inf.
func WelchTest(a, b []float64) Welch {
	ma, va := MeanVar(a)
	mb, vb := MeanVar(b)
	w := Welch{MeanA: ma, Diff: mb - ma}
	qa, qb := va/float64(len(a)), vb/float64(len(b))
	w.SE = math.Sqrt(qa + qb)
	if w.SE == 0 {
		w.DF, w.P = math.Inf(1), 1
		if w.Diff != 0 {
			w.P = 0
		}
		return w
	}
	w.DF = (qa + qb) * (qa + qb) / (qa*qa/float64(len(a)-1) + qb*qb/float64(len(b)-1))
	w.P = 2 * distuv.StudentsT{Mu: 0, Sigma: 1, Nu: w.DF}.Survival(math.Abs(w.Diff/w.SE))
	return w
}

// HalfWidth is the half width of Diff's two-sided confidence interval at
// level conf; 0 when there is no spread.
func (w Welch) HalfWidth(conf float64) float64 {
	if w.SE > 0 {
		return TQuantile(1-(1-conf)/2, w.DF) * w.SE
	}
	return 0
}

// TQuantile is Student's t quantile with df degrees of freedom, the
// standard normal one for df = +Inf.
func TQuantile(p, df float64) float64 {
	if math.IsInf(df, 1) {
		return NormalQuantile(p)
	}
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Quantile(p)
}

// NormalQuantile is the standard normal quantile.
func NormalQuantile(p float64) float64 {
	return math.Sqrt2 * math.Erfinv(2*p-1)
}
