package verdict

import (
	"github.com/fsbench/fsbench/internal/catalog"
	"github.com/fsbench/fsbench/internal/results"
)

// Suite is what a suite adds to the verdicts: its own tests (whether it ran), its verdicts,
// and the figures it adds to the observation matrix, its charts and the comparison of two
// runs (Matrix) or to the comparison only (Compared). internal/suites lists the registered
// ones (suites.Verdicts).
//
// A suite whose figures need their own test gives its own Verdicts function; the powercut
// suite's is its power-loss verdict. Its figure is a share of cuts, often from one repetition
// of many cuts, where the U test over repetitions cannot tell (it needs 4 a side): a test on
// the cut counts belongs there. Such a function decides the tie itself: it sets Tied (the
// variants it cannot tell from Winner), Significant and Significance, and Words words the line.
type Suite struct {
	Name, Title string
	Tests       []string
	Verdicts    func(r *results.Run, alpha float64) []Verdict
	Matrix      []Metric
	Compared    []Metric
}

// PerTest gives a suite one verdict per test, on the test's own headline figure (block
// write in KiB/s, files created per second, IOPS, ...), named by the test's title. A test
// that no variant has a figure for (bonnie++'s "+++++": too fast to time) has no verdict: the
// suite's table says why.
func PerTest(tests []string) func(r *results.Run, alpha float64) []Verdict {
	return func(r *results.Run, alpha float64) []Verdict {
		var out []Verdict
		for _, test := range tests {
			t := EvaluateClean(r, suiteMetric(test), alpha)
			if len(t.Order) == 0 && len(t.Dropped) == 0 {
				continue
			}
			out = append(out, Pick(catalog.Get(test).Title, t, alpha))
		}
		return out
	}
}

// suiteMetric is a suite test's headline figure as results.json records it, in its own unit.
func suiteMetric(test string) Metric {
	c := catalog.Get(test)
	return Metric{Key: test, Title: c.Title + " (" + c.Unit + ")", Short: test, Label: c.Title, Unit: c.Unit,
		Better: c.Better, Quantity: c.Quantity, Tests: []string{test}, Combine: Single(test, scaled(1))}
}
