package verdict

import "github.com/kci-dev/kci/internal/stats"

// The deterministic-mode test and its power. Under icount each guest seed
// gives a row an exact value; a code change behaves like a fresh draw of
// that value plus a shift. So a row is a two-sample problem over per-seed
// values, tested with Welch's t (stats.WelchTest): it copes with the
// change altering the spread, and unlike a rank test it can reach a
// family's level at 3+3 seeds (Mann–Whitney's smallest p there is 0.1).
// Its calibration on seed-like values, and that of the whole rule, is
// checked by simulation (sequential_test.go).

// PowerLevel is the power a "no change" states the detectable change at.
const PowerLevel = 0.9

// detectable90 is the shift (in the units of se) the two-sided Welch test
// at level a would detect with PowerLevel probability, given the observed
// standard error and degrees of freedom; 0 when there is no spread.
func detectable90(se, df, a float64) float64 {
	return stats.Detectable(se, df, a, PowerLevel)
}
