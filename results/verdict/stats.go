package verdict

import "github.com/kci-dev/kci/internal/stats"

// The modes' constants, and what a sample size can reach at all once a
// family of comparisons is corrected (Holm). The statistics themselves
// are internal/stats.

// ResolutionNs is the smallest difference of per-seed means deterministic
// mode calls a change, in instruction-time ns/pkt: at icount shift 0 one
// guest instruction is one ns, so a change to the code a packet runs moves
// its cost by at least this much. What moves the numbers by less is how
// often a rare event (a timer interrupt of a few µs landing inside the
// timed window) hits one boot's ~10k packets: a comment-only patch moved
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

// detectable reports whether samples of these sizes can come out
// significant at all in a Holm-corrected family of m comparisons: every
// Holm-adjusted p is at least the smallest raw p of the family times m,
// so a comparison whose best possible p times m exceeds alpha can never
// pass, whatever the numbers.
func detectable(n1, n2, m int) bool {
	return stats.UMinP(n1, n2)*float64(max(m, 1)) <= alpha
}

// decidable reports, for each row of a Holm family, whether its sample
// sizes can reach significance at all given the other rows'
// (stats.HolmReachable over their smallest possible p). (8+8 and 4+4
// boots: the 8+8 row can go first at 0.025, and the 4+4 row's 0.029 then
// clears 0.05.)
func decidable(fam []*Row) map[*Row]bool {
	best := make([]float64, len(fam))
	for i, r := range fam {
		best[i] = stats.UMinP(r.Base.N, r.Patched.N)
	}
	out := make(map[*Row]bool, len(fam))
	for i, ok := range stats.HolmReachable(best, alpha) {
		out[fam[i]] = ok
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

// Shift is how much patched differs from base, in percent of base, with
// its confidence interval: in noisy mode the Hodges–Lehmann estimate and
// its distribution-free interval (Lo, Hi: ±Inf when the samples are too
// small to bound it); in deterministic mode the difference of per-seed
// means and Welch's interval.
type Shift struct {
	Est, Lo, Hi float64
}

// within reports whether the whole interval lies strictly inside ±pct.
func (s Shift) within(pct float64) bool {
	return s.Lo > -pct && s.Hi < pct
}

// hodgesLehmann is the Hodges–Lehmann shift of patched against base
// with its interval at level conf (stats.HodgesLehmann).
func hodgesLehmann(base, patched []float64, conf float64) Shift {
	return Shift(stats.HodgesLehmann(base, patched, conf))
}
