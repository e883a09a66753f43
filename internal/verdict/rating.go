package verdict

import (
	"fmt"
	"math"
	"sort"

	"github.com/fsbench/fsbench/internal/stats"
)

// Rating is a grade on Bootlin's scale, computed from the data of one concern; the zero value
// means "not rated" (see Rate).
type Rating int

// The scale, best first.
const (
	Best Rating = iota + 1
	VeryGood
	Good
	Fair
	Average
	Bad
	Worst
)

// ratingBounds[i] is the largest ratio to the best median that still earns Rating(i+1);
// anything above the last bound is Worst.
var ratingBounds = []float64{1.05, 1.25, 1.5, 2, 3, 5}

// tieSpan caps ties: medians more than 25 % apart keep their own ratings even when the
// Samples overlap, because a rating that says "excellent" for half the best speed would be
// read as a claim, not as noise. The verdict still says when a difference is not significant.
const tieSpan = 1.25

// String is the rating's word, as in the HTML report.
func (r Rating) String() string {
	switch r {
	case Best:
		return "excellent"
	case VeryGood:
		return "very good"
	case Good:
		return "good"
	case Fair:
		return "fair"
	case Average:
		return "average"
	case Bad:
		return "bad"
	case Worst:
		return "worst"
	}
	return "not rated"
}

// Letter is the one-character form used in the terminal table, A (excellent) to G (worst).
func (r Rating) Letter() string {
	if r < Best || r > Worst {
		return "-"
	}
	return string(rune('A' + int(r) - 1))
}

// RatingForRatio maps ratio = (how much worse than the best median, >= 1) to a rating by
// ratingBounds.
func RatingForRatio(ratio float64) Rating {
	for i, b := range ratingBounds {
		if ratio <= b {
			return Rating(i + 1)
		}
	}
	return Worst
}

// Rated is one variant's result for one concern.
type Rated struct {
	Summary stats.Summary
	Samples []float64
	// Ratio is how many times worse than the best median (1 for the best): this median over
	// the best for lower-is-better figures, the best over this median for throughputs.
	Ratio  float64
	Rating Rating
	// TiedWith names the better-ranked variant whose rating this one shares because the two
	// cannot be told apart (see RatingRules); empty when the rating comes from Ratio alone.
	TiedWith string
}

// RatingRules is the rule of Rate in words, printed in the footer of the HTML report and
// below the terminal table. Keep it in step with Rate's code.
const RatingRules = `Ratings are computed from the data, never per filesystem, for each concern separately. ` +
	`The ratio of a variant is how many times worse its median is than the best median of the concern ` +
	`(time, or space: median / best; throughput in MB/s: best / median). ` +
	`Ratio <= 1.05: excellent; <= 1.25: very good; <= 1.5: good; <= 2: fair; <= 3: average; <= 5: bad; above: worst. ` +
	`Ties within noise share a rating: a variant gets the rating of a better-ranked variant it cannot be told apart from, ` +
	`when that rating is better than its own and the two medians are within 25 % of each other. Two variants cannot be told apart when, with at least 4 repetitions each, ` +
	`the Mann-Whitney U test gives p > 0.05; with fewer repetitions the U test cannot reach 0.05 (3 against 3 gives p >= 0.1), ` +
	`so their min-max ranges are compared instead and overlapping ranges count as a tie. ` +
	`A concern whose best median is 0 or below is not rated.`

// Rate rates each variant's samples against the others' for one concern (see RatingRules).
// higherBetter is true for throughputs. alpha is the U test's level (0: stats.DefaultAlpha).
// Variants without samples are left out of the result. When the best median is 0 or below,
// ratios mean nothing and every variant is left unrated (Rating 0, Ratio NaN).
func Rate(samples map[string][]float64, higherBetter bool, alpha float64) map[string]Rated {
	if alpha <= 0 {
		alpha = stats.DefaultAlpha
	}
	out := map[string]Rated{}
	best := math.NaN()
	for name, xs := range samples {
		s := stats.Summarize(xs)
		if s.N == 0 {
			continue
		}
		out[name] = Rated{Summary: s, Samples: xs}
		if math.IsNaN(best) || higherBetter && s.Median > best || !higherBetter && s.Median < best {
			best = s.Median
		}
	}
	if best <= 0 {
		// A ratio to a median of 0 or below means nothing (kernel memory "taken" by a mount
		// can be negative when reclaim runs during it): leave such a concern unrated.
		for name, c := range out {
			c.Ratio = math.NaN()
			out[name] = c
		}
		return out
	}
	for name, c := range out {
		c.Ratio = ratio(c.Summary.Median, best, higherBetter)
		c.Rating = RatingForRatio(c.Ratio)
		out[name] = c
	}
	// Ties: compare each variant with every better-ranked one, by their own (ratio) ratings,
	// so that ties do not chain (A ~ B and B ~ C does not make C as good as A).
	names := make([]string, 0, len(out))
	for name := range out {
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool {
		a, b := out[names[i]].Ratio, out[names[j]].Ratio
		if a != b {
			return a < b
		}
		return names[i] < names[j]
	})
	own := map[string]Rating{}
	for name, c := range out {
		own[name] = c.Rating
	}
	for i, name := range names {
		c := out[name]
		for _, better := range names[:i] {
			if own[better] < c.Rating && c.Ratio <= out[better].Ratio*tieSpan && !Distinguishable(out[better].Samples, c.Samples, alpha) {
				c.Rating, c.TiedWith = own[better], better
			}
		}
		out[name] = c
	}
	return out
}

// ratio is how many times worse v is than best (>= 1).
func ratio(v, best float64, higherBetter bool) float64 {
	num, den := v, best
	if higherBetter {
		num, den = best, v
	}
	switch {
	case num == den:
		return 1
	case den <= 0:
		return math.Inf(1)
	}
	return num / den
}

// Distinguishable reports whether two sets of samples differ beyond noise: by the
// Mann-Whitney U test at alpha when both sides have enough repetitions for it to be able to
// reach alpha (stats.NeedPerSide), otherwise by whether their min-max ranges are disjoint.
func Distinguishable(a, b []float64, alpha float64) bool {
	need := stats.NeedPerSide(alpha)
	if len(a) >= need && len(b) >= need {
		return stats.Compare(a, b, alpha).Significant()
	}
	sa, sb := stats.Summarize(a), stats.Summarize(b)
	return sa.Max < sb.Min || sb.Max < sa.Min
}

// Significance says in words whether winner and runner-up differ, for the verdict.
func Significance(winner, runner []float64, alpha float64) (text string, significant bool) {
	need := stats.NeedPerSide(alpha)
	if len(winner) < need || len(runner) < need {
		return fmt.Sprintf("cannot tell: need >= %d repetitions per side (have %s)", need, nPair(len(winner), len(runner))), false
	}
	c := stats.Compare(winner, runner, alpha)
	if c.Significant() {
		return fmt.Sprintf("significant (%s)", c.PN()), true
	}
	return fmt.Sprintf("not significant (%s)", c.PN()), false
}

func nPair(a, b int) string {
	if a == b {
		return fmt.Sprint(a)
	}
	return fmt.Sprintf("%d and %d", a, b)
}
