package stats

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// Defaults used by reports and comparisons. They are the levels benchstat uses, so fsbench's
// "~" means what a Go developer expects it to mean.
const (
	// DefaultAlpha is the significance level of the Mann-Whitney U test: a difference is
	// significant when p <= DefaultAlpha, and shown as "~" when p > DefaultAlpha (benchstat's
	// rule).
	DefaultAlpha = 0.05
	// DefaultConfidence is the level of the confidence interval of a median.
	DefaultConfidence = 0.95
	// DefaultStableTarget is the half-width, relative to the median, under which the
	// confidence interval of a median is called stable (±3 %).
	DefaultStableTarget = 0.03
)

// Interval is a distribution-free confidence interval of a median (see MedianCI).
type Interval struct {
	N          int
	Median     float64
	Lo, Hi     float64 // ±Inf when the sample is too small for the requested confidence
	Confidence float64 // the actual level reached, >= the one asked for when finite
}

// Finite reports whether both bounds are finite, that is, whether there were enough samples.
func (iv Interval) Finite() bool { return !math.IsInf(iv.Lo, 0) && !math.IsInf(iv.Hi, 0) }

// HalfWidth is the larger distance from the median to a bound, relative to the median
// (0.03 = ±3 %); +Inf when the interval is not finite or the median is 0.
func (iv Interval) HalfWidth() float64 {
	if !iv.Finite() || iv.Median == 0 {
		return math.Inf(1)
	}
	return math.Max(iv.Hi-iv.Median, iv.Median-iv.Lo) / math.Abs(iv.Median)
}

// MedianCI returns the median of xs with its confidence interval at the given level, computed
// as benchstat (golang.org/x/perf/benchmath, AssumeNothing) does: the number of samples below
// the true median follows Binomial(n, ½) whatever the distribution, so the interval between
// two order statistics X(l) and X(r) covers the median with probability P(l <= K < r). Starting
// at the mode of that binomial, the interval grows one order statistic at a time on the side
// with the larger probability (the left one on ties) until it reaches the level. When it needs
// more order statistics than there are samples, the bound is ±Inf: at 95 % that happens below
// 6 samples (NeedForCI). Up to 20 samples the bounds are benchstat's; above, go-moremath's
// floating-point binomial coefficients (and above 30 its normal approximation) can move a
// bound by one order statistic, while MedianCI stays exact. NaN values are ignored.
func MedianCI(xs []float64, confidence float64) Interval {
	vals := clean(xs)
	n := len(vals)
	if n == 0 {
		return Interval{Lo: math.Inf(-1), Hi: math.Inf(1)}
	}
	lo, hi, conf := medianOrders(n, confidence)
	iv := Interval{N: n, Median: median(vals), Confidence: conf, Lo: math.Inf(-1), Hi: math.Inf(1)}
	if lo >= 1 {
		iv.Lo = vals[lo-1]
	}
	if hi <= n {
		iv.Hi = vals[hi-1]
	}
	return iv
}

// medianOrders returns the 1-based order statistics bounding the confidence interval of the
// median of n samples (0 or n+1 mean unbounded) and the confidence actually reached.
func medianOrders(n int, confidence float64) (lo, hi int, conf float64) {
	if confidence >= 1 {
		return 0, n + 1, 1
	}
	pmf := func(k int) float64 {
		if k < 0 || k > n {
			return 0
		}
		return binom(n, k) * math.Pow(0.5, float64(n))
	}
	x := int(math.Ceil(float64(n+1)*0.5) - 1) // the lower mode
	acc := pmf(x)
	l, r := x, x+1
	lp, rp := pmf(l-1), pmf(r)
	for acc < confidence && (lp > 0 || rp > 0) {
		if lp >= rp {
			acc += lp
			l--
			lp = pmf(l - 1)
		} else {
			acc += rp
			r++
			rp = pmf(r)
		}
	}
	return max(l, 0), min(r, n+1), acc
}

// NeedForCI is the smallest number of samples whose median has a finite confidence interval
// at the given level (6 at 95 %).
func NeedForCI(confidence float64) int {
	for n := 2; n <= 1000; n++ {
		if lo, hi, _ := medianOrders(n, confidence); lo >= 1 && hi <= n {
			return n
		}
	}
	return 1001
}

// Stable reports whether the median of samples is known well enough to stop repeating: the
// 95 % confidence interval of the median (MedianCI) lies within ±target of the median (target
// 0.03 = ±3 %; 0 or less means DefaultStableTarget). This is the idea of the Phoronix Test
// Suite's dynamic run count (repeat while the spread is above a threshold), with a
// distribution-free interval instead of the standard deviation, because single slow
// repetitions (a card's garbage collection) are common and a standard deviation would let one
// of them dominate. Below NeedForCI(0.95) = 6 samples the interval is unbounded and Stable
// is false: a caller doing --until-stable should run at least 6 repetitions and stop at a cap.
// ci is the interval (±Inf bounds when not yet finite).
func Stable(samples []float64, target float64) (ok bool, ci [2]float64) {
	if target <= 0 {
		target = DefaultStableTarget
	}
	iv := MedianCI(samples, DefaultConfidence)
	return iv.HalfWidth() <= target, [2]float64{iv.Lo, iv.Hi}
}

// Comparison is the result of comparing two samples of one figure, old and new, with the
// Mann-Whitney U test (two-sided), as benchstat does.
type Comparison struct {
	Old, New Summary
	// P is the p-value of the hypothesis that both samples come from the same distribution.
	P     float64
	Alpha float64
	// MinP is the smallest p-value the U test can give with these sample sizes, whatever the
	// data: 2/C(n1+n2, n1). With 3 samples a side it is 0.1, so nothing can be significant at
	// 0.05.
	MinP float64
	// Warning says why the result cannot be trusted or cannot be significant (too few
	// samples, all values equal); empty otherwise.
	Warning string
}

// Significant reports whether p <= alpha: the samples differ at that level.
func (c Comparison) Significant() bool { return c.Old.N > 0 && c.New.N > 0 && c.P <= c.Alpha }

// Change is new/old - 1 of the medians (0.05 = 5 % larger); NaN when old is 0.
func (c Comparison) Change() float64 {
	if c.Old.Median == 0 {
		if c.New.Median == 0 {
			return 0
		}
		return math.NaN()
	}
	return c.New.Median/c.Old.Median - 1
}

// Delta is benchstat's delta column: "~" when the difference is not significant, else the
// change of the medians as a signed percentage ("+12.34%"), "?" when old is 0.
func (c Comparison) Delta() string {
	if !c.Significant() {
		return "~"
	}
	ch := c.Change()
	if math.IsNaN(ch) {
		return "?"
	}
	return fmt.Sprintf("%+.2f%%", 100*ch)
}

// PN is benchstat's "p=0.002 n=6" (or n=6+5 when the sizes differ).
func (c Comparison) PN() string {
	n := fmt.Sprintf("n=%d", c.Old.N)
	if c.Old.N != c.New.N {
		n = fmt.Sprintf("n=%d+%d", c.Old.N, c.New.N)
	}
	return fmt.Sprintf("p=%.3f %s", c.P, n)
}

// Compare tests whether old and new differ, with the two-sided Mann-Whitney U test at level
// alpha (0 or less means DefaultAlpha). It follows go-moremath's MannWhitneyUTest, which
// benchstat uses: the exact distribution of U (conditional on the ties present) for samples
// of up to 50 values a side without ties and 25 with ties, else the normal approximation
// with tie and continuity corrections. Without ties the p-values are go-moremath's. With
// ties (equal used-space figures are common) fsbench takes twice the smaller tail of the
// exact permutation distribution of U1 given the ties; go-moremath's tie handling gives
// somewhat different values there, and p > 1 for 1 value against 3 equal ones. The U test needs no assumption about the shape of the
// distribution, which suits timings with a long tail. NaN values are ignored.
func Compare(old, new []float64, alpha float64) Comparison {
	if alpha <= 0 {
		alpha = DefaultAlpha
	}
	a, b := clean(old), clean(new)
	c := Comparison{Old: Summarize(a), New: Summarize(b), Alpha: alpha, P: 1, MinP: 1}
	n1, n2 := len(a), len(b)
	if n1 == 0 || n2 == 0 {
		c.Warning = "no samples on one side"
		return c
	}
	c.MinP = MinP(n1, n2)
	p, ok := uTest(a, b)
	if !ok {
		c.Warning = "all values are equal"
		return c
	}
	c.P = p
	if c.P > alpha && c.MinP > alpha {
		c.Warning = fmt.Sprintf("need >= %d repetitions per side to detect a difference at alpha %g (have %s)",
			NeedPerSide(alpha), alpha, nText(n1, n2))
	}
	return c
}

func nText(n1, n2 int) string {
	if n1 == n2 {
		return fmt.Sprint(n1)
	}
	return fmt.Sprintf("%d+%d", n1, n2)
}

// MinP is the smallest two-sided p-value of the U test for samples of n1 and n2 values:
// complete separation, which one split in C(n1+n2, n1) gives on each side.
func MinP(n1, n2 int) float64 {
	if n1 == 0 || n2 == 0 {
		return 1
	}
	return math.Min(1, 2/binom(n1+n2, n1))
}

// NeedPerSide is the smallest equal sample size whose U test can reach p <= alpha (4 at 0.05,
// 3 at 0.1), as benchmath tells its users.
func NeedPerSide(alpha float64) int {
	for n := 1; n < 1000; n++ {
		if MinP(n, n) <= alpha {
			return n
		}
	}
	return 1000
}

// Limits of the exact U distribution, as in go-moremath (MannWhitneyExactLimit and
// MannWhitneyTiesExactLimit).
const (
	exactLimit     = 50
	tiesExactLimit = 25
)

// uTest returns the two-sided p-value; ok is false when every value is equal (the test is
// meaningless then).
func uTest(a, b []float64) (p float64, ok bool) {
	n1, n2 := len(a), len(b)
	type item struct {
		v     float64
		first bool
	}
	all := make([]item, 0, n1+n2)
	for _, v := range a {
		all = append(all, item{v, true})
	}
	for _, v := range b {
		all = append(all, item{v, false})
	}
	slices.SortStableFunc(all, func(x, y item) int { return cmp.Compare(x.v, y.v) })
	// Ranks with ties given their mid-rank; twoR1 is twice the rank sum of a, an integer.
	var ties []int
	twoR1 := 0
	for i := 0; i < len(all); {
		j, inA := i, 0
		for ; j < len(all) && all[j].v == all[i].v; j++ {
			if all[j].first {
				inA++
			}
		}
		twoR1 += inA * (i + 1 + j) // mid-rank (i+1+j)/2, doubled
		ties = append(ties, j-i)
		i = j
	}
	if len(ties) == 1 {
		return 1, false
	}
	hasTies := len(ties) != n1+n2
	twoU1 := twoR1 - n1*(n1+1)
	twoU2 := 2*n1*n2 - twoU1
	if !hasTies && n1 <= exactLimit && n2 <= exactLimit || hasTies && n1 <= tiesExactLimit && n2 <= tiesExactLimit {
		if twoU1 == twoU2 {
			return 1, true
		}
		// Twice the smaller tail. Without ties U is symmetric about n1·n2/2 and this is
		// go-moremath's 2·CDF(min(U1, U2)); with ties the conditional distribution need not
		// be symmetric, so both tails are computed from U1.
		below, atOrAbove := exactTails(n1, ties, twoU1)
		return math.Min(1, 2*math.Min(below, atOrAbove)), true
	}
	// Normal approximation with tie and continuity correction.
	t := 0.0
	for _, k := range ties {
		t += float64(k*k*k - k)
	}
	N := float64(n1 + n2)
	mu := float64(n1*n2) / 2
	sigma := math.Sqrt(float64(n1*n2) * ((N + 1) - t/(N*(N-1))) / 12)
	if sigma == 0 {
		return 1, false
	}
	num := float64(twoU1)/2 - mu
	if num > 0 {
		num -= 0.5
	} else if num < 0 {
		num += 0.5
	}
	z := num / sigma
	cdf := 0.5 * math.Erfc(-z/math.Sqrt2)
	return 2 * math.Min(cdf, 1-cdf), true
}

// exactTails returns P(2·U1 <= twoU) and P(2·U1 >= twoU) under the null hypothesis, for a
// first sample of n1 values and the tie groups ties (sizes, in rank order), conditional on
// those ties: every way of choosing which n1 of the n1+n2 ranked values belong to the first
// sample is equally likely. A dynamic programme over the tie groups counts, for each number
// of values taken and each doubled rank sum, how many choices lead there.
func exactTails(n1 int, ties []int, twoU int) (le, ge float64) {
	total := 0
	for _, t := range ties {
		total += t
	}
	maxR := 2 * total * n1
	// ways[k][r]: number of choices of k values with doubled rank sum r.
	ways := make([][]float64, n1+1)
	for k := range ways {
		ways[k] = make([]float64, maxR+1)
	}
	ways[0][0] = 1
	start := 0
	for _, t := range ties {
		twoMid := 2*start + 1 + t // doubled mid-rank of this group
		next := make([][]float64, n1+1)
		for k := range next {
			next[k] = make([]float64, maxR+1)
		}
		for k := 0; k <= n1; k++ {
			for r, w := range ways[k] {
				if w == 0 {
					continue
				}
				for c := 0; c <= t && k+c <= n1; c++ {
					next[k+c][r+c*twoMid] += w * binom(t, c)
				}
			}
		}
		ways = next
		start += t
	}
	var all float64
	for r, w := range ways[n1] {
		all += w
		u := r - n1*(n1+1)
		if u <= twoU {
			le += w
		}
		if u >= twoU {
			ge += w
		}
	}
	return le / all, ge / all
}

// binom is the binomial coefficient C(n, k) as a float64 (exact up to 2^53).
func binom(n, k int) float64 {
	if k < 0 || k > n {
		return 0
	}
	k = min(k, n-k)
	r := 1.0
	for i := 1; i <= k; i++ {
		r = r * float64(n-k+i) / float64(i)
	}
	return math.Round(r)
}

func clean(xs []float64) []float64 {
	vals := make([]float64, 0, len(xs))
	for _, x := range xs {
		if !math.IsNaN(x) {
			vals = append(vals, x)
		}
	}
	slices.Sort(vals)
	return vals
}
