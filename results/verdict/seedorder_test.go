package verdict

import (
	"math/rand/v2"
	"testing"
)

// A deterministic row's test is a function of its boots, not of the order
// they finished in: a rerun whose boots come from the result cache
// records them in another order, and its statistics, and so the adaptive
// rule's plan, must agree to the last bit.
func TestCompareDetIgnoresBootOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		n := 3 + rng.IntN(8)
		var base, patched []float64
		var bseeds, pseeds []uint64
		for s := 1; s <= n; s++ {
			base, bseeds = append(base, 500*(1+0.01*rng.NormFloat64())), append(bseeds, uint64(s))
			patched, pseeds = append(patched, 505*(1+0.01*rng.NormFloat64())), append(pseeds, uint64(s))
		}
		ref := compareDet("write", base, patched, bseeds, pseeds)
		rng.Shuffle(n, func(i, j int) { base[i], base[j], bseeds[i], bseeds[j] = base[j], base[i], bseeds[j], bseeds[i] })
		rng.Shuffle(n, func(i, j int) {
			patched[i], patched[j], pseeds[i], pseeds[j] = patched[j], patched[i], pseeds[j], pseeds[i]
		})
		got := compareDet("write", base, patched, bseeds, pseeds)
		if got.w != ref.w || got.P != ref.P || got.Shift != ref.Shift {
			t.Fatalf("trial %d: boots in another order: welch %+v p %v shift %+v, in seed order %+v p %v shift %+v",
				trial, got.w, got.P, got.Shift, ref.w, ref.P, ref.Shift)
		}
	}
}
