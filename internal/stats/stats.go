// Package stats summarises repeated measurements: the median as the headline figure (robust to
// the one slow repetition a shared machine or a card's background garbage collection produces)
// with the minimum and maximum beside it so the spread stays visible; the distribution-free
// confidence interval of a median (MedianCI) and the stopping rule built on it (Stable, for
// --until-stable); and the Mann-Whitney U test between two sets of samples (Compare), computed
// as benchstat (golang.org/x/perf/benchmath) computes it.
package stats

import (
	"math"
	"slices"
)

// Summary describes a set of samples of one figure.
type Summary struct {
	N      int     `json:"n"`
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
}

// Summarize returns the median, minimum and maximum of xs. NaN values are ignored; an empty
// input gives N == 0 and zero figures, which callers must treat as "no data", not as zero.
func Summarize(xs []float64) Summary {
	vals := make([]float64, 0, len(xs))
	for _, x := range xs {
		if !math.IsNaN(x) {
			vals = append(vals, x)
		}
	}
	if len(vals) == 0 {
		return Summary{}
	}
	slices.Sort(vals)
	return Summary{N: len(vals), Median: median(vals), Min: vals[0], Max: vals[len(vals)-1]}
}

// median of sorted values: the mean of the two middle values for an even count.
func median(sorted []float64) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	a, b := sorted[n/2-1], sorted[n/2]
	m := (a + b) / 2
	if math.IsInf(m, 0) && !math.IsInf(a, 0) && !math.IsInf(b, 0) {
		// a+b overflowed (both beyond MaxFloat64/2): halve first. Only then, so that every
		// other median stays bit for bit what results files already hold. An infinite median
		// of finite values could not be written to results.json (JSON has no Inf).
		m = a/2 + b/2
	}
	return m
}

// Spread is (max-min)/median, a quick indicator of how repeatable a figure was; 0 when the
// median is 0 or there are fewer than two samples.
func (s Summary) Spread() float64 {
	if s.N < 2 || s.Median == 0 {
		return 0
	}
	return (s.Max - s.Min) / math.Abs(s.Median)
}

// Wilson is the Wilson score interval of a binomial proportion k of n at 95 % confidence,
// as fractions in [0, 1]: unlike the normal approximation it stays inside [0, 1] and says
// something useful for 0 of 50 (0 to 7 %), which is the figure that matters for power cuts.
func Wilson(k, n int) (low, high float64) {
	if n <= 0 {
		return 0, 1
	}
	const z = 1.959963984540054
	p := float64(k) / float64(n)
	nf := float64(n)
	den := 1 + z*z/nf
	mid := (p + z*z/(2*nf)) / den
	half := z / den * math.Sqrt(p*(1-p)/nf+z*z/(4*nf*nf))
	return max(0, mid-half), min(1, mid+half)
}
