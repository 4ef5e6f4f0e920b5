package job

import (
	"testing"

	"github.com/kci-dev/kci/results/verdict"

	"github.com/kci-dev/kci/results"
)

// TestRepsByAccel: the boots per kernel kci test uses when --reps is not
// given, once the accelerator is known.
func TestRepsByAccel(t *testing.T) {
	cases := []struct {
		clock, accel string
		want         int
	}{
		{results.ClockICount, results.AccelTCG, verdict.DeterministicReps},
		{results.ClockHost, results.AccelTCG, verdict.NoisyReps},
		{results.ClockICount, results.AccelKVM, verdict.NoisyReps},
		{results.ClockHost, results.AccelKVM, verdict.NoisyReps},
	}
	for _, c := range cases {
		if got := RepsByAccel(c.clock)(c.accel); got != c.want {
			t.Errorf("clock %s, accel %s: %d boots per kernel, want %d", c.clock, c.accel, got, c.want)
		}
	}
	if verdict.DeterministicReps >= verdict.NoisyReps {
		t.Errorf("deterministic reps %d >= noisy %d: icount boots only need to agree", verdict.DeterministicReps, verdict.NoisyReps)
	}
}
