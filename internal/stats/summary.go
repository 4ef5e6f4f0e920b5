// Package stats is kci's statistics, one implementation of each: the
// median, mean and variance, the spreads, Welch's t test and its power,
// Holm's correction, and the Mann–Whitney order statistics behind the
// Hodges–Lehmann shift. It knows nothing of kernels, boots or rows
// (TestLeaf): the verdict's noisy and seeded rules are built on it.
package stats

import (
	"math"
	"sort"
)

// Median is the middle value of xs, the mean of the two middle ones for
// an even count; NaN for none. xs is not modified.
func Median(xs []float64) float64 {
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

// MeanVar is the mean of xs and its sample variance (divided by n − 1):
// the variance is 0 for one value, both are NaN for none.
func MeanVar(xs []float64) (mean, variance float64) {
	if len(xs) == 0 {
		return math.NaN(), math.NaN()
	}
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

// Present is xs without its NaNs, the mark of an absent value, in order.
func Present(xs []float64) []float64 {
	out := make([]float64, 0, len(xs))
	for _, x := range xs {
		if !math.IsNaN(x) {
			out = append(out, x)
		}
	}
	return out
}

// MinMax is the smallest and the largest of xs; NaN for none.
func MinMax(xs []float64) (lo, hi float64) {
	if len(xs) == 0 {
		return math.NaN(), math.NaN()
	}
	lo, hi = xs[0], xs[0]
	for _, x := range xs {
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	return lo, hi
}

// Range is max − min, the whole spread of xs; NaN for none.
func Range(xs []float64) float64 {
	lo, hi := MinMax(xs)
	return hi - lo
}

// HalfRange is (max − min) / 2, the spread the user's table prints as
// "mean ± spread"; NaN for none.
func HalfRange(xs []float64) float64 {
	return Range(xs) / 2
}

// CV is the coefficient of variation in percent: the sample standard
// deviation over the absolute mean; 0 for fewer than two values or a
// zero mean.
func CV(xs []float64) float64 {
	if len(xs) < 2 {
		return 0
	}
	mean, variance := MeanVar(xs)
	if mean == 0 {
		return 0
	}
	return math.Sqrt(variance) / math.Abs(mean) * 100
}
