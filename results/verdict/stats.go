package verdict

import (
	"math"
	"sort"
)

// The statistics behind the A/B decision that benchmath does not provide:
// the Hodges–Lehmann shift of patched against base with its
// distribution-free confidence interval, the exact null distribution of
// the Mann–Whitney U it needs, and what a sample size can reach at all
// once a family of comparisons is corrected (Holm).

// ResolutionNs is the smallest difference of medians deterministic mode
// calls a change, in instruction-time ns/pkt: at icount shift 0 one guest
// instruction is one ns, so a change to the code a packet runs moves its
// cost by at least this much. What moves a median by less is how often a
// rare event (a timer interrupt of a few µs landing inside the timed
// window) hits one boot's ~10k packets: a comment-only patch moved
// cnt_egress (73 ns) by +0.39 ns, +0.5 %, in 1 of 10 runs that way.
const ResolutionNs = 1.0

// DeterministicReps is the default number of boots per kernel in
// deterministic mode (icount): enough to see the residual spread, which
// is all there is to see.
const DeterministicReps = 3

// NoisyReps is the default number of boots per kernel in noisy mode when
// the project sets none: 6+6 boots can reach significance (p = 0.0022
// at complete separation) after Holm over up to 23 variant totals.
const NoisyReps = 6

// alpha is the family-wise error rate of the noisy-mode decision.
const alpha = 0.05

// minP is the smallest two-sided Mann–Whitney p that samples of sizes
// n1 and n2 can give: at complete separation, 2 / C(n1+n2, n1).
func minP(n1, n2 int) float64 {
	if n1 <= 0 || n2 <= 0 {
		return 1
	}
	// log C(n1+n2, n1)
	lc, _ := math.Lgamma(float64(n1 + n2 + 1))
	a, _ := math.Lgamma(float64(n1 + 1))
	b, _ := math.Lgamma(float64(n2 + 1))
	return math.Min(1, 2*math.Exp(-(lc-a-b)))
}

// detectable reports whether samples of these sizes can come out
// significant at all in a Holm-corrected family of m comparisons: every
// Holm-adjusted p is at least the smallest raw p of the family times m,
// so a comparison whose best possible p times m exceeds alpha can never
// pass, whatever the numbers.
func detectable(n1, n2, m int) bool {
	return minP(n1, n2)*float64(max(m, 1)) <= alpha
}

// decidable reports, for each row of a Holm family, whether its sample
// sizes can reach significance at all given the other rows': Holm
// rejects in order of p, the k-th at alpha/(m−k+1), so a row can pass
// once every row that could come before it passes. The rows that can go
// first are the others in order of their smallest possible p, as long as
// each clears its step; the row then needs its own smallest p to clear
// the next step. (8+8 and 4+4 boots: the 8+8 row can go first at 0.025,
// and the 4+4 row's 0.029 then clears 0.05.)
func decidable(fam []*Row) map[*Row]bool {
	m := len(fam)
	best := make(map[*Row]float64, m)
	order := append([]*Row(nil), fam...)
	for _, r := range fam {
		best[r] = minP(r.Base.N, r.Patched.N)
	}
	sort.SliceStable(order, func(i, j int) bool { return best[order[i]] < best[order[j]] })
	out := make(map[*Row]bool, m)
	for _, r := range fam {
		k := 0
		for _, o := range order {
			if o == r {
				continue
			}
			if best[o] > alpha/float64(m-k) {
				break
			}
			k++
		}
		out[r] = best[r] <= alpha/float64(m-k)
	}
	return out
}

// bootsNeeded is the smallest number of boots per kernel (equal on both
// sides) at which a Holm-corrected family of m comparisons can reach
// significance at all (complete separation). Real differences that do not
// separate the samples completely need more.
func bootsNeeded(m int) int {
	for n := 2; n < 100; n++ {
		if detectable(n, n, m) {
			return n
		}
	}
	return 100
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

// uCritical is the largest c with P(U <= c) <= a/2 under the null for
// sizes n1, n2; -1 when even U = 0 is more likely than that (the samples
// are too small for an interval at this level). Exact up to n1*n2 = 2500,
// the normal approximation beyond.
func uCritical(n1, n2 int, a float64) int {
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
	z := normalQuantile(1 - a/2)
	return int(math.Floor(nn/2 - z*sd - 0.5))
}

// normalQuantile is the standard normal quantile (for the large-sample
// approximation only).
func normalQuantile(p float64) float64 {
	return math.Sqrt2 * math.Erfinv(2*p-1)
}

// Shift is the Hodges–Lehmann estimate of how much patched differs from
// base, in percent of base, with its distribution-free confidence
// interval (Lo, Hi: ±Inf when the samples are too small to bound it).
type Shift struct {
	Est, Lo, Hi float64
}

// Within reports whether the whole interval lies strictly inside ±pct.
func (s Shift) Within(pct float64) bool {
	return s.Lo > -pct && s.Hi < pct
}

// hodgesLehmann estimates the patched/base ratio: the median of all
// pairwise log ratios log(p_j) − log(b_i), and the interval between the
// order statistics the Mann–Whitney null distribution gives at level
// conf (Lehmann/Moses). Non-positive values (a program that did not run)
// fall back to differences in units of the base median.
func hodgesLehmann(base, patched []float64, conf float64) Shift {
	nan := math.NaN()
	if len(base) == 0 || len(patched) == 0 {
		return Shift{nan, nan, nan}
	}
	logScale := true
	for _, x := range append(append([]float64(nil), base...), patched...) {
		if !(x > 0) {
			logScale = false
		}
	}
	scale := median(base)
	if !logScale && scale == 0 {
		return Shift{nan, nan, nan}
	}
	d := make([]float64, 0, len(base)*len(patched))
	for _, b := range base {
		for _, p := range patched {
			if logScale {
				d = append(d, math.Log(p)-math.Log(b))
			} else {
				d = append(d, p-b)
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
	s := Shift{Est: pct(median(d)), Lo: math.Inf(-1), Hi: math.Inf(1)}
	if c := uCritical(len(base), len(patched), 1-conf); c >= 0 && c < len(d)-1-c {
		s.Lo, s.Hi = pct(d[c]), pct(d[len(d)-1-c])
	}
	return s
}

// median of xs (sorted copy).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
