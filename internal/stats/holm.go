package stats

import (
	"math"
	"sort"
)

// Holm is Holm's step-down correction of a family's p values: the k-th
// smallest p times m − k + 1, never below an earlier one's, at most 1.
// The adjusted values come back in the order of ps.
func Holm(ps []float64) []float64 {
	order := make([]int, len(ps))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool { return ps[order[i]] < ps[order[j]] })
	adj := make([]float64, len(ps))
	prev := 0.0
	for k, i := range order {
		prev = math.Min(1, math.Max(prev, ps[i]*float64(len(ps)-k)))
		adj[i] = prev
	}
	return adj
}

// HolmReachable reports, for each member of a family whose smallest
// possible p values are best, whether Holm at family-wise level alpha can
// reject it at all. Holm rejects in order of p, the k-th at
// alpha / (m − k + 1), so a member can pass once every member that could
// come before it passes: the others in order of their smallest p, as long
// as each clears its step; the member then needs its own smallest p to
// clear the next step.
func HolmReachable(best []float64, alpha float64) []bool {
	m := len(best)
	order := make([]int, m)
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool { return best[order[i]] < best[order[j]] })
	out := make([]bool, m)
	for i := range best {
		k := 0
		for _, o := range order {
			if o == i {
				continue
			}
			if best[o] > alpha/float64(m-k) {
				break
			}
			k++
		}
		out[i] = best[i] <= alpha/float64(m-k)
	}
	return out
}
