package stats

import (
	"math"
	"sort"
)

// UMinP is the smallest two-sided Mann–Whitney p that samples of sizes
// n1 and n2 can give: at complete separation, 2 / C(n1+n2, n1); 1 when a
// side is empty.
func UMinP(n1, n2 int) float64 {
	if n1 <= 0 || n2 <= 0 {
		return 1
	}
	// log C(n1+n2, n1)
	lc, _ := math.Lgamma(float64(n1 + n2 + 1))
	a, _ := math.Lgamma(float64(n1 + 1))
	b, _ := math.Lgamma(float64(n2 + 1))
	return math.Min(1, 2*math.Exp(-(lc-a-b)))
}

// uCDFCounts returns, for sizes n1 and n2 without ties, the cumulative
// number of orderings with U <= u for u = 0..n1*n2, and the total number
// of orderings C(n1+n2, n1) (as float64: exact well beyond the sizes
// used here).
func uCDFCounts(n1, n2 int) (cum []float64, total float64) {
	// f[j][u]: orderings of i x's and j y's with U = u, i advancing row
	// by row: f_i(j, u) = f_{i-1}(j, u-j) + f_i(j-1, u).
	maxU := n1 * n2
	prev := make([][]float64, n2+1)
	for j := range prev {
		prev[j] = make([]float64, maxU+1)
		prev[j][0] = 1 // i = 0: one ordering, U = 0
	}
	for i := 1; i <= n1; i++ {
		cur := make([][]float64, n2+1)
		for j := range cur {
			cur[j] = make([]float64, maxU+1)
			for u := 0; u <= i*j; u++ {
				v := 0.0
				if u >= j {
					v += prev[j][u-j]
				}
				if j > 0 {
					v += cur[j-1][u]
				}
				cur[j][u] = v
			}
		}
		prev = cur
	}
	dist := prev[n2]
	cum = make([]float64, maxU+1)
	s := 0.0
	for u, c := range dist {
		s += c
		cum[u] = s
	}
	return cum, s
}

// UCritical is the largest c with P(U <= c) <= a/2 under the null for
// sizes n1, n2; -1 when even U = 0 is more likely than that (the samples
// are too small for an interval at this level). Exact up to n1*n2 = 2500,
// the normal approximation beyond.
func UCritical(n1, n2 int, a float64) int {
	if n1 <= 0 || n2 <= 0 {
		return -1
	}
	if n1*n2 <= 2500 {
		cum, total := uCDFCounts(n1, n2)
		c := -1
		for u, x := range cum {
			if x/total > a/2 {
				break
			}
			c = u
		}
		return c
	}
	nn := float64(n1 * n2)
	sd := math.Sqrt(nn * float64(n1+n2+1) / 12)
	z := NormalQuantile(1 - a/2)
	return int(math.Floor(nn/2 - z*sd - 0.5))
}

// Interval is an estimate with its confidence interval (Lo, Hi: ±Inf
// when the samples are too small to bound it, all NaN when there is no
// estimate).
type Interval struct {
	Est, Lo, Hi float64
}

// HodgesLehmann estimates how much b differs from a, in percent of a:
// the median of all pairwise log ratios log(b_j) − log(a_i), with the
// interval between the order statistics the Mann–Whitney null
// distribution gives at level conf (Lehmann/Moses). Non-positive values
// (a program that did not run) fall back to differences in units of a's
// median.
func HodgesLehmann(a, b []float64, conf float64) Interval {
	nan := math.NaN()
	if len(a) == 0 || len(b) == 0 {
		return Interval{nan, nan, nan}
	}
	logScale := true
	for _, x := range append(append([]float64(nil), a...), b...) {
		if !(x > 0) {
			logScale = false
		}
	}
	scale := Median(a)
	if !logScale && scale == 0 {
		return Interval{nan, nan, nan}
	}
	d := make([]float64, 0, len(a)*len(b))
	for _, x := range a {
		for _, y := range b {
			if logScale {
				d = append(d, math.Log(y)-math.Log(x))
			} else {
				d = append(d, y-x)
			}
		}
	}
	sort.Float64s(d)
	pct := func(x float64) float64 {
		if logScale {
			return math.Expm1(x) * 100
		}
		return x / math.Abs(scale) * 100
	}
	s := Interval{Est: pct(Median(d)), Lo: math.Inf(-1), Hi: math.Inf(1)}
	if c := UCritical(len(a), len(b), 1-conf); c >= 0 && c < len(d)-1-c {
		s.Lo, s.Hi = pct(d[c]), pct(d[len(d)-1-c])
	}
	return s
}
